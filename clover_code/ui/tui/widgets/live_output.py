"""LiveOutput: a running command's latest lines and its elapsed time, inside its tool card.

Mounted in the card itself, beside the folded body, so it shows while the card is folded;
removed when the result arrives (the card's body then holds the output the model read).
Output arrives in pieces (ToolOutput, at most 10 a second); only the last TAIL_LINES lines
are kept, however much the command prints, and they are redrawn at most DRAW_EVERY_S: more
is more than anyone reads, and each redraw is paint a streaming reply shares.
"""

from __future__ import annotations

import time

from rich.text import Text
from textual.widget import Widget

from clover_code.ui.terminal_text import visible

TAIL_LINES = 6
DRAW_EVERY_S = 0.25
MAX_LINE_CHARS = 400  # of one kept line: a progress bar without newlines is still one line


class LiveOutput(Widget):
    DEFAULT_CSS = """
    LiveOutput { height: 1; padding: 0 0 0 2; color: $text-muted; }
    LiveOutput.-output { height: 7; }
    """

    def __init__(self) -> None:
        super().__init__(classes="live-output")
        self.started = time.monotonic()
        self.lines: list[str] = []
        self.partial = ""  # the last line, not ended yet
        self.total_lines = 0
        self._dirty = False
        self._ticks = 0

    def on_mount(self) -> None:
        self.set_interval(DRAW_EVERY_S, self._tick)

    def _tick(self) -> None:
        self._ticks += 1
        every_second = self._ticks % round(1 / DRAW_EVERY_S) == 0  # the elapsed time moves on without output too
        if self._dirty or every_second:
            self._dirty = False
            self.refresh()

    def append(self, text: str) -> None:
        text = text.replace("\r\n", "\n")
        pieces = (self.partial + text).split("\n")
        self.partial = _last_redraw(pieces.pop())[-MAX_LINE_CHARS:]
        self.total_lines += len(pieces)
        self.lines = (self.lines + [_last_redraw(p)[-MAX_LINE_CHARS:] for p in pieces[-TAIL_LINES:]])[-TAIL_LINES:]
        self._dirty = True
        # Its full height at the first output, once: a height that grew line by line would
        # re-lay out the screen per line, and that is paid by the reply streaming below.
        self.set_class(True, "-output")

    def _shown(self) -> list[str]:
        return (self.lines + [self.partial] if self.partial else self.lines)[-TAIL_LINES:]

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
