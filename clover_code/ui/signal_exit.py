"""How a headless run ends on SIGINT or SIGTERM outside its turn (while it starts, while a
model loads, once the turn is over): at once, with exit code 130 and the result its output
format promises, and never by raising KeyboardInterrupt into whatever code is running.

Raised into library code, that exception was lost (a broad `except`, a `__del__` or an atexit
callback swallowed it and the run went on to its end) or ended the process in SIGABRT (C++ under
torch cannot unwind it, and an interpreter shutting down under a thread still decoding aborts).
So the handler writes the last words itself with os.write (the frame it interrupted may be in
the middle of a write to the same stream) and ends the process with os._exit. During the turn,
ui.headless.drive cancels the turn instead, so that the session log ends whole; a second signal
there ends the process here.

A signal's disposition belongs to the process, so this module keeps one state for it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import NoReturn

from clover_code.ui.exit_codes import EXIT_INTERRUPTED

SIGNALS = (signal.SIGINT, signal.SIGTERM)
LastWords = Callable[[], tuple[str, str]]  # (for stderr, for stdout), made when the signal comes


class _State:
    last_words: LastWords | None = None  # None: nothing to say yet; a signal waits for words
    waiting = False  # a signal came before there were words
    code = EXIT_INTERRUPTED


_state = _State()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _state.last_words is None:
        _state.waiting = True
        return
    end_now(_state.code, *_state.last_words())


def catch_signals() -> None:
    """SIGINT and SIGTERM come here from now on: first thing in a headless run (a signal then
    waits for `on_signal_say`, which comes a moment later), and again wherever asyncio gave
    them back their default actions."""
    for sig in SIGNALS:
        signal.signal(sig, _on_signal)


def on_signal_say(last_words: LastWords, code: int = EXIT_INTERRUPTED) -> None:
    """From now on a signal ends the process with `code`, after writing what `last_words()`
    returns then; a signal that came earlier ends it now."""
    _state.last_words, _state.code = last_words, code
    catch_signals()
    if _state.waiting:
        end_now(code, *last_words())


def threads_wound_down(seconds: float) -> bool:
    """Wait up to `seconds` for daemon threads still running (an interrupted decode stops
    before its next forward pass); whether they all ended, so the interpreter may shut down."""
    deadline = time.monotonic() + seconds
    for thread in _daemons():
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(thread.is_alive() for thread in _daemons())


def _daemons() -> list[threading.Thread]:
    """The daemon threads Python started (one it only met running Python code cannot be joined)."""
    return [t for t in threading.enumerate() if t.daemon and not isinstance(t, threading._DummyThread)]


def end_now(code: int, err: str = "", out: str = "") -> NoReturn:
    """Write `err` and `out` after what Python still holds for those streams, and end the
    process without unwinding anything (no exception, no interpreter shutdown)."""
    for stream in (sys.stderr, sys.stdout):
        try:
            stream.flush()
        except (OSError, ValueError, RuntimeError):  # RuntimeError: the interrupted frame was writing to it
            pass
    for fd, text in ((2, err), (1, out)):
        _write_all(fd, text.encode("utf-8", "backslashreplace"))
    os._exit(code)


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:  # a reader that went away: nothing more can be said
        pass
