"""Spinner: one line above the editor while the agent works: what it does (the tool running
now and its command, cut to fit the width), for how long, how many tokens it wrote, and that
Esc stops it.

It asks `state()` ten times a second rather than being told: the app has many ways into and
out of work (a turn, a `!cmd`, a cancel, a failure) and one question answers them all. The
line has a fixed height, so a tick repaints it without re-laying out the screen; it is shown
and hidden only when work starts and ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.widget import Widget

from clover_code.ui.terminal_text import one_line

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK_S = 0.1


@dataclass(frozen=True)
class SpinnerState:
    label: str  # "Working", "Waiting for your answer", "Running !make test"...
    tokens: int = 0  # written by the model in this turn so far
    tool: str = ""  # the tool running now ("shell"), if one is
    detail: str = ""  # what it runs ("pytest -q"), cut to the line's room
    tool_started: float = 0.0  # time.monotonic() when it started


class Spinner(Widget):
    DEFAULT_CSS = """
    Spinner { height: 1; padding: 0 1; display: none; color: $text-muted; }
    Spinner.-on { display: block; }
    """

    def __init__(self, state: Callable[[], SpinnerState | None], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._state = state
        self.current: SpinnerState | None = None
        self.started = 0.0
        self._frame = 0

    def on_mount(self) -> None:
        self.set_interval(TICK_S, self.tick)

    def tick(self) -> None:
        state = self._state()
        if state is None:
            if self.current is not None:
                self.current = None
                self.remove_class("-on")
            return
        if self.current is None:
            self.started = time.monotonic()
            self.add_class("-on")
        self.current = state
        self._frame = (self._frame + 1) % len(FRAMES)
        self.refresh()

    def line(self, width: int | None = None) -> Text:
        """The line, fitted to `width` cells (the widget's own by default)."""
        state = self.current
        if state is None:
            return Text()
        width = width if width is not None else max(self.content_size.width, 20)
        text = Text()
        text.append(f"{FRAMES[self._frame]} ", style="bold cyan")
        if state.tool:  # "running shell: pytest -q · 12s · esc to interrupt", the command cut to fit
            tail = f" · {_duration(time.monotonic() - state.tool_started)} · esc to interrupt"
            head = f"running {state.tool}"
            room = width - text.cell_len - len(head) - len(tail) - 2
            detail = _fit(state.detail, room)
            text.append(head + (f": {detail}" if detail else ""), style="bold")
            text.append(tail, style="dim")
            return text
        elapsed = time.monotonic() - self.started
        text.append(f"{state.label}… ", style="bold")
        parts = [_duration(elapsed)]
        if state.tokens > 0:
            parts.append(f"↓ {state.tokens:,} tokens")
        parts.append("esc to interrupt")
        text.append(f"({' · '.join(parts)})", style="dim")
        return text

    def render(self) -> Text:
        return self.line()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds}s" if seconds < 60 else f"{seconds // 60}m {seconds % 60:02d}s"


def _fit(text: str, room: int) -> str:
    """`text` on one line in `room` cells ('' when there is no room to say anything)."""
    return one_line(text, room) if room >= 8 or cell_len(" ".join(text.split())) <= room else ""
