"""Telling a reply that has degenerated from one that is merely long.

A model that meets something it never saw in training can fall into writing one character or
a short pattern over and over (the demo model, after a git error it did not know, wrote 6,430
passes of `xxxx`/`kkkk`, and the run still ended `done`). Nothing but max_tokens ends such a
reply, and the next request only continues it, so the agent watches the committed text and
stops the reply once its tail is made of a handful of pieces.

The test: the reply's last WINDOW characters hold at most MAX_PIECES distinct strings of PIECE
characters. One character or a pattern of up to 8 repeated has at most 8 of them; runs of two
such patterns in turn (`xxxx…kkkk…xxxx`) add only the pieces of their switches. Text, code, a
markdown rule or a table row repeated (their period is the row, tens of characters) have
far more: the window spans several blocks of ordinary output without tripping.
"""

from __future__ import annotations

WINDOW = 512  # characters: a few 32-token blocks, so a long `====` rule or one odd block never trips it
PIECE = 8
MAX_PIECES = 16


def degenerate(text: str) -> bool:
    """Whether the last WINDOW characters of `text` are a short pattern (or two) over and over."""
    if len(text) < WINDOW:
        return False
    tail = text[-WINDOW:]
    return len({tail[i:i + PIECE] for i in range(WINDOW - PIECE + 1)}) <= MAX_PIECES


class DegenerationWatch:
    """Fed each block's committed text; says when the reply has degenerated, and how."""

    def __init__(self) -> None:
        self._tail = ""
        self.reason: str | None = None  # set once the reply has degenerated

    def add(self, text: str) -> bool:
        """Take one block's text; True once the reply has degenerated."""
        self._tail = (self._tail + text)[-WINDOW:]
        if self.reason is None and degenerate(self._tail):
            sample = repr(self._tail[-24:])
            self.reason = (f"Stopped: the reply degenerated into one short pattern repeated (its last {WINDOW} "
                           f"characters end {sample}), so the request was cancelled. The model is lost here: "
                           "rephrase the task, give it the missing context, or use a stronger model.")
        return self.reason is not None
