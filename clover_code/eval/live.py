"""What a person watching sees: on a terminal a live table (a progress bar, each engine's
running pass rate, what runs now); elsewhere (CI logs, a pipe) one line per finished try."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from clover_code.jsonsafe import JSONObject

if TYPE_CHECKING:
    from rich.console import Group
    from rich.live import Live

    from clover_code.eval.engines import EngineSpec
    from clover_code.eval.tasks import Task


@dataclass
class _Engine:
    done: int = 0
    passed: int = 0
    seconds: float = 0.0
    tokens: int = 0
    passes: int = 0


@dataclass
class LiveView:
    engines: list[str]
    total: int  # units (task x engine) to run now
    stream: TextIO | None = None  # None: stderr
    tty: bool | None = None
    per: dict[str, _Engine] = field(default_factory=dict)
    running: dict[tuple[str, str], int] = field(default_factory=dict)
    recent: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.out: TextIO = self.stream or sys.stderr
        self.per = {e: _Engine() for e in self.engines}
        if self.tty is None:
            self.tty = bool(getattr(self.out, "isatty", lambda: False)())
        self._live: Live | None = None

    @property
    def finished(self) -> int:
        return sum(e.done for e in self.per.values())

    def __enter__(self) -> LiveView:
        if self.tty:
            from rich.console import Console
            from rich.live import Live

            self._live = Live(self, console=Console(file=self.out), refresh_per_second=4, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._live is not None:
            self._live.__exit__(kind, exc, tb)
            self._live = None

    def started(self, task: Task, engine: EngineSpec) -> None:
        with self.lock:
            self.running[(task.id, engine.name)] = 1

    def tried(self, line: JSONObject) -> None:
        key = (line["task"], line["engine"])
        with self.lock:
            e = self.per.setdefault(line["engine"], _Engine())
            e.seconds += float(line.get("seconds") or 0)
            e.tokens += int(line.get("tokens_out") or 0)
            e.passes += int(line.get("forward_passes") or 0)
            if line.get("final"):
                e.done += 1
                e.passed += bool(line.get("passed"))
                self.running.pop(key, None)
            else:
                self.running[key] = int(line.get("try", 1)) + 1
            text = _line(line)
            self.recent = (self.recent + [text])[-6:]
            if not self.tty:
                self.out.write(f"[{self.finished:>3}/{self.total}] {text}\n")
                self.out.flush()

    def __rich__(self) -> Group:
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.table import Table
        from rich.text import Text

        with self.lock:
            table = Table(box=None, padding=(0, 2))
            for name in ("engine", "done", "passed", "pass rate", "wall/task", "tokens out", "TPF"):
                table.add_column(name, justify="left" if name == "engine" else "right")
            for name, e in self.per.items():
                rate = f"{100 * e.passed / e.done:.0f}%" if e.done else "—"
                wall = f"{e.seconds / e.done:.1f} s" if e.done else "—"
                tpf = f"{e.tokens / e.passes:.2f}" if e.passes else "—"
                table.add_row(name, str(e.done), str(e.passed), rate, wall, f"{e.tokens:,}", tpf)
            now = [f"  running: {t} on {e} (try {k})" for (t, e), k in sorted(self.running.items())]
            header = Text(f"clover-code eval: {self.finished}/{self.total} done")
            return Group(header, ProgressBar(total=max(self.total, 1), completed=self.finished, width=50), table,
                         Text("\n".join(self.recent[-4:] + now)))


def _line(line: JSONObject) -> str:
    status = line.get("status")
    figures = f"{float(line.get('seconds') or 0):.1f} s, {int(line.get('tokens_out') or 0):,} tokens"
    if line.get("tpf"):
        figures += f", TPF {line['tpf']}"
    why = f": {line['error']}" if status in ("error", "timeout") and line.get("error") else ""
    return f"{line['task']} on {line['engine']}, try {line.get('try')}: {status} ({figures}){why}"
