"""Failures as a user reads them: one line to act on; a bug's traceback kept in a file
(`$XDG_STATE_HOME/clover-code/errors.log`).

The app and the slash commands both report failures this way (a module of its own, so
neither imports the other for it).
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

from clover_code.agent.session import SessionError
from clover_code.engine import EngineError
from clover_code.settings import ConfigError
from clover_code.tools import ToolError

# Errors whose message says what to do (a checkpoint's is a ToolError): shown as they are.
ACTIONABLE_ERRORS = (EngineError, ConfigError, ToolError, SessionError)
MAX_LOG_BYTES = 256_000  # an older half is dropped past this: the log is for the latest bugs


def errors_log() -> Path:
    """The user's state folder, as for the prompt history: not the workspace, whose files the
    model's shell reads and the user commits (a traceback can quote paths and values)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "clover-code" / "errors.log"


def describe_error(exc: BaseException, keep: bool = True) -> str:
    """One line a user can act on. A bug (not an actionable error) also leaves its traceback
    in the errors log (unless `keep` is False), and the line says where."""
    if isinstance(exc, ACTIONABLE_ERRORS):
        return str(exc)
    line = f"{type(exc).__name__}: {exc}"
    where = keep_traceback(exc) if keep else None
    return f"{line} (traceback in {where})" if where else line


def keep_traceback(exc: BaseException) -> str | None:
    """Append `exc`'s traceback to the errors log; its path as shown to the user, or None
    when it cannot be written (a read-only home must not turn one error into two)."""
    path = errors_log()
    text = "".join(traceback.format_exception(exc))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            kept = path.read_bytes()[-MAX_LOG_BYTES // 2:]
            path.write_bytes(kept)
        with path.open("a", encoding="utf-8") as log:
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')}\n{text}\n")
    except OSError:
        return None
    home = os.path.expanduser("~")
    shown = str(path)
    return "~" + shown[len(home):] if shown.startswith(home + os.sep) else shown
