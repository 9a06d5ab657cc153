"""Session logs: `.clover/sessions/<id>.jsonl`, one agent event per line, flushed per event,
so a crash loses nothing; `--resume [ID|last]` replays a log into a conversation.

Logs hold whatever the model and the tools produced, and CI uploads them: every line is
written with known secrets redacted and with characters no UTF-8 file or terminal should
take escaped (clover_code.jsonsafe). A log is also input: the shell can write into the
workspace, so reading one never trusts it: a line that is not an event is a SessionError
naming the line, a log that is not a regular file (a FIFO would block, a symlink would
let appends land outside the workspace) is refused.
"""

from __future__ import annotations

import os
import secrets
import stat
import time
from pathlib import Path
from typing import TextIO

from clover_code import jsonsafe
from clover_code.agent.events import Event, from_json, to_json
from clover_code.agent.old_logs import upgrade_events, upgrade_line
from clover_code.agent.redact import Redactor
from clover_code.errors import UserError

SESSIONS_DIR = Path(".clover") / "sessions"
MAX_LOG_BYTES = 256 * 1024 * 1024  # far above any real session; a bigger "log" is not one


class SessionError(UserError):
    """No such session, or a log that cannot be read; the message says which."""


def sessions_dir(root: Path) -> Path:
    """The workspace's sessions folder; refused when a symlink takes it out of the workspace."""
    folder = Path(root) / SESSIONS_DIR
    if folder.exists() and not folder.resolve().is_relative_to(Path(root).resolve()):
        raise SessionError(f"{folder} leads out of the workspace (a symlink): not using it for session logs")
    return folder


class SessionLog:
    def __init__(self, path: Path, redactor: Redactor | None = None):
        self.path = Path(path)
        self.id = self.path.stem
        self._file: TextIO | None = None
        # The environment's secrets by default; build_agent adds the configured api key.
        self.redactor = redactor if redactor is not None else Redactor.for_session()

    @classmethod
    def create(cls, root: Path) -> SessionLog:
        folder = sessions_dir(root)
        sid = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            ignore = folder / ".gitignore"
            # Logs are private and must not end up in the user's commits.
            if not ignore.exists() and not ignore.is_symlink():
                ignore.write_text("*\n", encoding="utf-8")
            log = cls(folder / f"{sid}.jsonl")
            log.path.touch()
        except OSError as exc:
            raise SessionError(f"cannot write the session log in {folder}: {exc.strerror or exc}") from None
        return log

    @classmethod
    def open(cls, root: Path, which: str = "last") -> SessionLog:
        if which.endswith(".jsonl") and Path(which).is_file():
            return cls(Path(which))
        folder = sessions_dir(root)
        found = folder.glob("*.jsonl") if folder.is_dir() else []
        logs = sorted(found, key=lambda p: (p.lstat().st_mtime, p.name))
        if not logs:
            raise SessionError(f"no sessions to resume in {folder}")
        if which in ("", "last"):
            return cls(logs[-1])
        matches = [p for p in logs if p.stem == which] or [p for p in logs if p.stem.startswith(which)]
        if len(matches) != 1:
            known = ", ".join(p.stem for p in logs[-5:])
            what = "no session" if not matches else "more than one session"
            raise SessionError(f"{what} matches {which!r} in {folder}; recent: {known}")
        return cls(matches[0])

    def append(self, event: Event) -> None:
        if self._file is None:
            self._file = _open_for_append(self.path)
        self._file.write(self.line(event) + "\n")
        self._file.flush()  # in the OS now: a crash of this process loses nothing

    def line(self, event: Event) -> str:
        """The event as it is logged: secrets redacted, one line of safe JSON."""
        return jsonsafe.dumps_line(self.redactor.value(to_json(event)))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def events(self) -> list[Event]:
        """Every event logged (a log of an earlier version read as this one's events); a last
        line cut short by a crash is skipped."""
        lines = self._read().splitlines()
        out = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                data = jsonsafe.loads(line)
                out.append(from_json(upgrade_line(data) if isinstance(data, dict) else data))
            except ValueError as exc:  # JSONDecodeError included: too deep, not JSON, not an event
                if n == len(lines):
                    break  # the write a crash interrupted
                raise SessionError(f"{self.path}:{n}: not a session event: {exc}") from None
        return upgrade_events(out)

    def _read(self) -> str:
        try:
            info = os.lstat(self.path)
            if not stat.S_ISREG(info.st_mode):
                raise SessionError(f"cannot read session {self.path}: not a regular file")
            if info.st_size > MAX_LOG_BYTES:
                raise SessionError(f"cannot read session {self.path}: over {MAX_LOG_BYTES >> 20} MiB")
            return self.path.read_bytes().decode("utf-8")
        except OSError as exc:
            raise SessionError(f"cannot read session {self.path}: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise SessionError(f"cannot read session {self.path}: not UTF-8 text ({exc.reason} at byte "
                               f"{exc.start})") from None


def _open_for_append(path: Path) -> TextIO:
    """The log, opened to append; never through a symlink, never anything but a regular file."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK, 0o600)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SessionError(f"cannot write the session log {path}: not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")
