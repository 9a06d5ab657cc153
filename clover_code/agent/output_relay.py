"""OutputRelay: a running tool's output, as ToolOutput events at most every FLUSH_S.

A command may print megabytes in bursts of 64 KiB reads; a UI needs only what a person can
read: the pieces are gathered and sent at most 10 times a second, and of a burst larger than
KEEP_CHARS only its end is sent (a card shows the tail; the ToolFinished that follows holds
the output the model reads).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from clover_code.agent.events import Event, ToolOutput
from clover_code.engine import ToolCall

FLUSH_S = 0.1
KEEP_CHARS = 8_000  # of one flush; what comes before is cut, with a mark
CUT_MARK = "…\n"


class OutputRelay:
    def __init__(self, call: ToolCall, emit: Callable[[Event], None]) -> None:
        self.call, self.emit = call, emit
        self._pending: list[str] = []
        self._size = 0
        self._timer: asyncio.TimerHandle | None = None
        self.closed = False

    def feed(self, text: str) -> None:
        """Text the tool just printed (called on the event loop's thread): ToolContext.on_output."""
        if self.closed or not text:
            return
        self._pending.append(text)
        self._size += len(text)
        if self._size > 4 * KEEP_CHARS:  # a flood between flushes: keep only what may be shown
            self._pending, self._size = [self._tail()], KEEP_CHARS + len(CUT_MARK)
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(FLUSH_S, self.flush)

    def flush(self) -> None:
        self._timer = None
        if self.closed or not self._pending:
            return
        text = self._tail() if self._size > KEEP_CHARS else "".join(self._pending)
        self._pending, self._size = [], 0
        self.emit(ToolOutput(self.call, text))

    def close(self) -> None:
        """The tool ended: what is still pending is dropped (its result says it all)."""
        self.closed = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _tail(self) -> str:
        return CUT_MARK + "".join(self._pending)[-KEEP_CHARS:]
