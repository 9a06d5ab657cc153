"""LiveOutput: a running command's latest lines and its elapsed time, inside its tool card.

Mounted in the card itself, beside the folded body, so it shows while the card is folded;
removed when the result arrives (the card's body then holds the output the model read).
Output arrives in pieces (ToolOutput, at most 20 a second); only the last TAIL_LINES lines
are kept and drawn, however much the command prints.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.widget import Widget

from clover_code.ui.terminal_text import visible

TAIL_LINES = 6
MAX_LINE_CHARS = 400  # of one kept line: a progress bar without newlines is still one line


class LiveOutput(Widget):
    DEFAULT_CSS = """
    LiveOutput { height: auto; max-height: 7; padding: 0 0 0 2; color: $text-muted; }
    """

    def __init__(self) -> None:
        super().__init__(classes="live-output")
        self.started = time.monotonic()
        self.lines: list[str] = []
        self.partial = ""  # the last line, not ended yet
        self.total_lines = 0

    def on_mount(self) -> None:
        self.set_interval(1.0, self.refresh)  # the elapsed time moves on without output too

    def append(self, text: str) -> None:
        text = text.replace("\r\n", "\n")
        pieces = (self.partial + text).split("\n")
        self.partial = _last_redraw(pieces.pop())[-MAX_LINE_CHARS:]
        self.total_lines += len(pieces)
        self.lines = (self.lines + [_last_redraw(p)[-MAX_LINE_CHARS:] for p in pieces[-TAIL_LINES:]])[-TAIL_LINES:]
        self.refresh(layout=self.size.height < self._height())

    def _shown(self) -> list[str]:
        return (self.lines + [self.partial] if self.partial else self.lines)[-TAIL_LINES:]

    def _height(self) -> int:
        return 1 + len(self._shown())

    def render(self) -> Text:
        elapsed = time.monotonic() - self.started
        text = Text()
        more = self.total_lines + bool(self.partial) - len(self._shown())
        earlier = f" · {more:,} earlier line{'s' if more != 1 else ''}" if more > 0 else ""
        head = f"running for {elapsed:.0f}s{earlier}"
        text.append(head, style="cyan")
        for line in self._shown():
            text.append("\n" + visible(line), style="dim")
        return text


def _last_redraw(line: str) -> str:
    """A line a progress bar redraws with CR shows as the terminal would: its last version."""
    return line.rsplit("\r", 1)[-1] if "\r" in line else line
