"""Session logs: `.clover/sessions/<id>.jsonl`, one agent event per line, flushed per event,
so a crash loses nothing; `--resume [ID|last]` replays a log into a conversation.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

from clover_code.agent.events import Event, from_json, to_json

SESSIONS_DIR = Path(".clover") / "sessions"


class SessionError(Exception):
    """No such session, or a log that cannot be read; the message says which."""


def sessions_dir(root: Path) -> Path:
    return Path(root) / SESSIONS_DIR


class SessionLog:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.id = self.path.stem
        self._file: Any = None

    @classmethod
    def create(cls, root: Path) -> SessionLog:
        folder = sessions_dir(root)
        sid = time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            ignore = folder / ".gitignore"
            if not ignore.exists():  # logs are private and must not end up in the user's commits
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
        logs = sorted(folder.glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name)) if folder.is_dir() else []
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
            self._file = open(self.path, "a", encoding="utf-8")
        self._file.write(json.dumps(to_json(event), ensure_ascii=False, default=str) + "\n")
        self._file.flush()  # in the OS now: a crash of this process loses nothing

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def events(self) -> list[Event]:
        """Every event logged; a last line cut short by a crash is skipped."""
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise SessionError(f"cannot read session {self.path}: {exc.strerror}") from None
        out = []
        for n, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                out.append(from_json(json.loads(line)))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                if n == len(lines):
                    break  # the write a crash interrupted
                raise SessionError(f"{self.path}:{n}: not a session event: {exc}") from None
        return out

