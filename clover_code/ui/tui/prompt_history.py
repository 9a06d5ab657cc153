"""Prompts sent from the TUI, kept across sessions for Up/Down and Ctrl+R.

One JSON line per prompt in `$XDG_STATE_HOME/clover-code/history.jsonl` (default
`~/.local/state/clover-code/`): the user's state directory, never the workspace, whose files
the model's shell can read and write and whose commits a user pushes. The file is the
user's alone (0600, like a shell's history): prompts may hold pasted secrets.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from clover_code.sandbox.own_dirs import state_dir

MAX_ENTRIES = 2_000  # kept; the file is rewritten down to this when it grows past 1.5x
MAX_PROMPT_CHARS = 20_000  # a larger prompt (a huge paste) is not worth replaying


def default_path() -> Path:
    return state_dir() / "history.jsonl"


@dataclass(frozen=True)
class Entry:
    text: str
    cwd: str = ""
    at: float = 0.0


class PromptHistory:
    """The history file: read once, appended per prompt. A file that cannot be read or
    written costs the history, never the session."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()
        self.entries: list[Entry] = self._read()
        self.error: str | None = None  # the last write failure, for the UI to mention once

    def texts(self) -> list[str]:
        """Prompts oldest first, each once (its latest use), for Up/Down."""
        seen: set[str] = set()
        out: list[str] = []
        for entry in reversed(self.entries):
            if entry.text not in seen:
                seen.add(entry.text)
                out.append(entry.text)
        return out[::-1]

    def add(self, text: str, cwd: Path | str = "") -> None:
        if not text.strip() or len(text) > MAX_PROMPT_CHARS:
            return
        if self.entries and self.entries[-1].text == text:
            return  # a repeat adds nothing to walk through
        entry = Entry(text, str(cwd), round(time.time(), 3))
        self.entries.append(entry)
        try:
            if len(self.entries) > MAX_ENTRIES * 3 // 2:
                self.entries = self.entries[-MAX_ENTRIES:]
                self._rewrite()
            else:
                with self._open("a") as file:
                    file.write(_line(entry))
        except OSError as exc:
            self.error = f"prompt history not saved ({self.path}): {exc.strerror or exc}"

    def search(self, query: str, limit: int = 50) -> list[str]:
        """Distinct prompts containing `query` (case-insensitive), newest first."""
        needle = query.lower()
        found: list[str] = []
        for text in reversed(self.texts()):
            if needle in text.lower():
                found.append(text)
                if len(found) >= limit:
                    break
        return found

    # -- the file ---------------------------------------------------------------------

    def _read(self) -> list[Entry]:
        try:
            raw = self.path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return []
        entries = []
        for line in raw.splitlines()[-MAX_ENTRIES:]:
            try:
                data = json.loads(line)
            except ValueError:
                continue  # a line cut by a crash, or not ours
            if isinstance(data, dict) and isinstance(data.get("text"), str):
                at = data.get("at")
                entries.append(Entry(data["text"], str(data.get("cwd", "")),
                                     float(at) if isinstance(at, (int, float)) else 0.0))
        return entries

    def _open(self, mode: str) -> TextIO:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | (os.O_APPEND if mode == "a" else os.O_TRUNC), 0o600)
        return os.fdopen(fd, "a" if mode == "a" else "w", encoding="utf-8")

    def _rewrite(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.writelines(_line(e) for e in self.entries)
        os.replace(tmp, self.path)


def _line(entry: Entry) -> str:
    return json.dumps({"text": entry.text, "cwd": entry.cwd, "at": entry.at}, ensure_ascii=False) + "\n"
