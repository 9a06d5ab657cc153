"""Ending the TUI when its terminal goes away (a closed window, a killed tmux or ssh).

A hung-up terminal does not reliably signal the program: the kernel sends SIGHUP to the
session leader (the shell), and a non-interactive shell passes nothing on. The program
only finds out when a read or write fails with EIO; Textual's writer thread then dies with
its queue full, and the app's own shutdown blocks forever putting into that queue (seen:
a clover-code left sleeping for hours, holding its session's lock). So a watcher asks the
terminal once a second whether it is still there; when it is gone the process sends itself
the SIGHUP it missed (the app quits on it as a quit does; before the app catches it, or
after, it ends the process), and if the process still lives a few seconds later it ends
itself. Nothing is lost that way: the session log is flushed per event, and the
live-session lock is the kernel's to release.
"""

from __future__ import annotations

import errno
import os
import signal
import termios
import threading
import time
from collections.abc import Callable

POLL_S = 1.0
GRACE_S = 5.0
EXIT_HUNG_UP = 128 + 1  # as a shell reports a process ended by SIGHUP


def terminal_gone(fd: int) -> bool:
    """Whether the terminal on `fd` has hung up (EIO), as opposed to never having been one."""
    try:
        termios.tcgetattr(fd)
    except termios.error as exc:
        return bool(exc.args) and exc.args[0] == errno.EIO  # the other side of the pty is gone
    return False


def send_hangup() -> None:
    os.kill(os.getpid(), signal.SIGHUP)


def watch_terminal(fd: int, *, hang_up: Callable[[], None] = send_hangup, hard_exit: Callable[[int], None] = os._exit,
                   poll_s: float = POLL_S, grace_s: float = GRACE_S) -> threading.Thread | None:
    """Watch the terminal on `fd` in a daemon thread: when it hangs up, `hang_up()`, then
    `hard_exit(129)` if the process lives on for `grace_s`. None when `fd` is not a terminal
    (tests, pipes): nothing to watch."""
    if not os.isatty(fd):
        return None

    def watch() -> None:
        while not terminal_gone(fd):
            time.sleep(poll_s)
        hang_up()
        time.sleep(grace_s)
        hard_exit(EXIT_HUNG_UP)

    thread = threading.Thread(target=watch, name="clover-terminal-guard", daemon=True)
    thread.start()
    return thread
