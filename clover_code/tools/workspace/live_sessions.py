"""Which clover-code sessions are at work in a folder right now.

Each session holds a lock file for as long as its process lives: an exclusive `flock` on
`$XDG_STATE_HOME/clover-code/live/<folder>-<hash>/<session>.json`, which names its process and
start. Another session tells a live one from the leftover of one that died by trying the same
lock: the kernel lets go of it when the process ends, however it ends, so a crash leaves no
false "in use". The files live in the user's state folder, not the workspace (the model's
shell can write there, and the user commits it).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from clover_code.sandbox import own_dirs

try:
    import fcntl
except ImportError:  # no flock (Windows): nobody else is ever seen, as before
    fcntl = None  # type: ignore[assignment]


def default_state_dir() -> Path:
    return own_dirs.state_dir()


@dataclass(frozen=True)
class LiveSession:
    session: str
    pid: int
    started: float  # time.time() when it joined

    def describe(self) -> str:
        return f"pid {self.pid}, since {time.strftime('%H:%M', time.localtime(self.started))}"


class LiveSessions:
    """This session's presence in `root`, and the others'."""

    def __init__(self, root: str | Path, session: str, *, state_dir: Path | None = None) -> None:
        self.root = Path(root).resolve()
        self.session = session
        key = hashlib.sha256(str(self.root).encode()).hexdigest()[:16]
        self.folder = (state_dir or default_state_dir()) / "live" / f"{self.root.name}-{key}"
        self._held: IO[str] | None = None

    def join(self) -> None:
        """Hold this session's lock until `leave()` or the process ends. Best effort: a folder
        that cannot be written only means others will not see this session."""
        if fcntl is None or self._held is not None:
            return
        final = self.folder / f"{self.session}.json"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            # Locked and written under another name first: no one sees it unlocked or empty.
            # Open for the process's life (the lock is the file's): no `with`. Not inherited by children.
            held = open(final.with_suffix(".tmp"), "w", encoding="utf-8")  # noqa: SIM115
            fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.write(json.dumps({"session": self.session, "pid": os.getpid(), "started": time.time()}))
            held.flush()
            os.replace(final.with_suffix(".tmp"), final)
        except OSError:
            return
        self._held = held

    def leave(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            (self.folder / f"{self.session}.json").unlink(missing_ok=True)
            held.close()

    def others(self) -> list[LiveSession]:
        """The other sessions whose process still holds its lock, oldest first; the files of
        dead ones are removed on the way."""
        if fcntl is None or not self.folder.is_dir():
            return []
        found = [s for path in self.folder.glob("*.json") if path.stem != self.session
                 if (s := _live(path)) is not None]
        return sorted(found, key=lambda s: s.started)


def _live(path: Path) -> LiveSession | None:
    try:
        with open(path, encoding="utf-8") as file:
            try:
                fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:  # held: its session is alive
                data = json.loads(file.read() or "{}")
                return LiveSession(str(data.get("session", path.stem)), int(data.get("pid", 0)),
                                   float(data.get("started", 0.0)))
            path.unlink(missing_ok=True)  # nobody holds it: a session that ended without leaving
    except (OSError, ValueError, TypeError):
        pass
    return None
