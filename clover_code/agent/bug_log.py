"""Where a bug's traceback goes: `$XDG_STATE_HOME/clover-code/errors.log` (default
`~/.local/state/clover-code/`), the user's state folder. Not the workspace: the model's shell
reads it and the user commits it, and a traceback can quote paths and values. A user who
sees "internal error" gets one line and the place to find the rest (for a bug report).
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

from clover_code.sandbox.own_dirs import state_dir

MAX_LOG_BYTES = 256_000  # the older half is dropped past this: the log is for the latest bugs


def errors_log() -> Path:
    return state_dir() / "errors.log"


def keep_traceback(exc: BaseException) -> str | None:
    """Append `exc`'s traceback to the errors log; the log's path as shown to the user, or
    None when it cannot be written (a read-only home must not turn one error into two)."""
    path = errors_log()
    text = "".join(traceback.format_exception(exc))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            path.write_bytes(path.read_bytes()[-MAX_LOG_BYTES // 2:])
        with path.open("a", encoding="utf-8") as log:
            log.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')}\n{text}\n")
    except OSError:
        return None
    home = os.path.expanduser("~")
    shown = str(path)
    return "~" + shown[len(home):] if shown.startswith(home + os.sep) else shown


def describe_bug(exc: BaseException) -> str:
    """`Type: message (traceback in ...)`: one line, the traceback kept."""
    where = keep_traceback(exc)
    line = f"{type(exc).__name__}: {exc}"
    return f"{line} (traceback in {where})" if where else line
