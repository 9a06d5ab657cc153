"""The checkpoint refs clover-code wrote, written down where no command can write.

A session's checkpoints live in the git dir (refs/clover/checkpoints/<session>/), and git's
state there is git's to write: a hook that git_commit runs may call `git update-ref`, a filter
may append to packed-refs, and a forged `turn-N` would make a rewind after `--resume` write
files the session never touched. So each session's refs are also written down in the user's
state folder, out of every sandbox's reach, and a resumed session trusts a ref only when it
names the commit written down for it (a log from another machine, or from before this ledger,
restores the conversation only). Beside the refs, each turn's page notes what someone else
changed between the session's changes (ownership.py), which a resumed session needs to leave
their files alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from clover_code.jsonsafe import JSON
from clover_code.tools.workspace.live_sessions import default_state_dir

PRUNED = ".pruned"  # its time: when old sessions' refs were last dropped


class RefLedger:
    """The refs each session of one git dir wrote: `<state>/checkpoints/<repo>-<hash>/<session>.json`."""

    def __init__(self, git_dir: Path, *, state_dir: Path | None = None):
        key = hashlib.sha256(str(git_dir).encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = git_dir.parent.name if git_dir.name == ".git" else git_dir.name
        self.folder = (state_dir or default_state_dir()) / "checkpoints" / f"{name}-{key}"

    def read(self, session: str) -> dict[str, str]:
        """The refs written down for `session` (name under its folder -> commit); {} if none."""
        refs = self._page(session).get("refs")
        if not isinstance(refs, dict):
            return {}
        return {k: v for k, v in refs.items() if isinstance(k, str) and isinstance(v, str)}

    def notes(self, session: str) -> dict[str, object]:
        """What was noted beside `session`'s refs (ref name -> note, as written); {} if none."""
        notes = self._page(session).get("notes")
        return {k: v for k, v in notes.items() if isinstance(k, str)} if isinstance(notes, dict) else {}

    def _page(self, session: str) -> dict[str, object]:
        try:
            found = json.loads((self.folder / f"{session}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def write(self, session: str, refs: dict[str, str], notes: dict[str, JSON] | None = None) -> None:
        """Write down `session`'s refs as they now are, with `notes` on some of them. Best effort:
        a state folder that cannot be written only means a resumed session will not restore files."""
        final = self.folder / f"{session}.json"
        part = final.with_name(f".{final.name}.{os.getpid()}")
        page: dict[str, JSON] = {"refs": dict(refs), **({"notes": notes} if notes else {})}
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            part.write_text(json.dumps(page, sort_keys=True), encoding="utf-8")
            os.replace(part, final)
        except OSError:
            part.unlink(missing_ok=True)

    def pruned_within(self, seconds: float) -> bool:
        """Whether old sessions' refs were dropped here less than `seconds` ago (mark_pruned)."""
        try:
            return time.time() - (self.folder / PRUNED).stat().st_mtime < seconds
        except OSError:
            return False

    def mark_pruned(self) -> None:
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / PRUNED).touch()
        except OSError:
            pass

    def drop(self, sessions: set[str], *, older_than_days: float, keep: str) -> None:
        """Forget `sessions` (their refs are gone), and any other session's page not written for
        `older_than_days`, except `keep`'s."""
        cutoff = time.time() - older_than_days * 86400
        try:
            pages = list(self.folder.iterdir())
        except OSError:
            return
        for page in pages:
            session = page.name.removesuffix(".json")
            if session == keep or not page.name.endswith(".json"):
                continue
            try:
                if session in sessions or page.stat().st_mtime < cutoff:
                    page.unlink()
            except OSError:
                pass
