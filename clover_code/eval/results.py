"""The results of an eval run, on disk as they happen.

    OUT/results.jsonl   one line per task, engine and try, appended (and flushed) when the try
                        is checked; a Ctrl-C or a crash loses only the tries still running
    OUT/run.json        what was asked (tasks, engines, tries), the machine, problems found
    OUT/logs/ENGINE/TASK/tryN.{events.jsonl,stderr.txt,check.txt}

Lines of one task and engine share a `group`; the group's last try says `final: true`. A
resumed run skips every task and engine with a final line and runs the others from try 1
again (a try 2 needs the workspace its try 1 left, which is gone). Reports read, per task and
engine, the latest group that finished, else the latest one.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from clover_code import jsonsafe
from clover_code.jsonsafe import JSONObject

RESULTS, RUN = "results.jsonl", "run.json"


class ResultStore:
    def __init__(self, out: Path):
        self.out = out
        self.path = out / RESULTS
        self.run_path = out / RUN
        self._lock = threading.Lock()

    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def lines(self) -> list[JSONObject]:
        """Every line written; a line cut by a crash mid-write is skipped."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        found = []
        for raw in text.splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if isinstance(line, dict) and "task" in line and "engine" in line:
                found.append(line)
        return found

    def append(self, line: JSONObject) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        text = jsonsafe.dumps_line(line) + "\n"
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            if f.tell() and not self._ends_with_newline():
                f.write("\n")  # a line torn by a crash stays a line of its own
            f.write(text)
            f.flush()
            os.fsync(f.fileno())

    def _ends_with_newline(self) -> bool:
        with self.path.open("rb") as f:
            f.seek(-1, os.SEEK_END)
            return f.read(1) == b"\n"

    def done(self) -> set[tuple[str, str]]:
        """(task, engine) pairs whose tries are all recorded."""
        return {(line["task"], line["engine"]) for line in self.lines() if line.get("final")}

    def latest(self) -> dict[tuple[str, str], list[JSONObject]]:
        """Per (task, engine): the tries of the latest finished group, else of the latest group."""
        groups: dict[tuple[str, str], dict[str, list[JSONObject]]] = {}
        for line in self.lines():
            groups.setdefault((line["task"], line["engine"]), {}).setdefault(line.get("group", ""), []).append(line)
        chosen = {}
        for key, by_group in groups.items():
            ordered = list(by_group.values())  # insertion order: oldest first
            finished = [g for g in ordered if any(line.get("final") for line in g)]
            tries = (finished or ordered)[-1]
            chosen[key] = sorted(tries, key=lambda line: line.get("try", 0))
        return chosen

    def read_run(self) -> JSONObject | None:
        try:
            data = json.loads(self.run_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write_run(self, data: JSONObject) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        tmp = self.run_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.run_path)

    def log_dir(self, engine: str, task: str) -> Path:
        folder = self.out / "logs" / _safe(engine) / _safe(task)
        folder.mkdir(parents=True, exist_ok=True)
        return folder


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_.+" else "_" for c in name) or "_"
