"""What a sandboxed git may change in a git dir: its state, never what decides what git runs.

Git keeps its state in the git dir: objects, refs, logs, the index, HEAD and the like. The rest
of it decides what git reads or runs: `config` and `config.worktree`, `hooks/`, `commondir` and
`gitdir` (they send git to another folder's config), `info/` (attributes, excludes, grafts),
`worktrees/` and `modules/` (the git dirs of linked worktrees and submodules, with their configs
and hooks), `remotes/`, `branches/`, `objects/info/alternates`. A program git runs in the
sandbox (a hook, a filter, a nested repository's filter) must change none of it, or the user's
next git on the host runs what it planted: a `commondir` naming a work-tree folder whose config
sets core.fsmonitor did exactly that.

What exists of it is bound read-only for the run. Git renames its lock files into place in the
git dir's top folder, so that folder stays writable: a name that appears there during a run and
is not one git writes (or an alternates file) is removed after it, and the run fails naming it;
a name the user's own git made in those milliseconds would go too, but git makes none of these
in everyday work. The turn checkpoints' refs (refs/clover) are read-only as well, except to the
checkpoints' own runs.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

# Git's own state in a git dir's top folder (gitrepository-layout(5)); `lfs/` is git-lfs's store.
WRITTEN = frozenset({
    "HEAD", "ORIG_HEAD", "FETCH_HEAD", "AUTO_MERGE", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR",
    "MERGE_AUTOSTASH", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "BISECT_LOG", "BISECT_START",
    "BISECT_TERMS", "BISECT_EXPECTED_REV", "BISECT_ANCESTORS_OK", "BISECT_NAMES", "BISECT_HEAD",
    "COMMIT_EDITMSG", "SQUASH_MSG", "TAG_EDITMSG", "NOTES_MERGE_PARTIAL", "NOTES_MERGE_REF",
    "NOTES_MERGE_WORKTREE", "index", "packed-refs", "gc.log", "gc.pid",
    "objects", "refs", "logs", "rebase-merge", "rebase-apply", "sequencer", "rr-cache", "lfs",
})
TEMPORARY = ("sharedindex.", "next-index-")  # a split index's files; a partial commit's index
# Inside folders git writes, yet read as where objects come from.
OBJECT_SOURCES = ("objects/info/alternates", "objects/info/http-alternates")
CHECKPOINT_REFS = "refs/clover"

Identity = tuple[object, ...]


@dataclass(frozen=True)
class GitDirGuard:
    """The protected entries of `git_dirs` for one git run."""

    git_dirs: tuple[Path, ...]
    checkpoint_refs: bool = False  # True: the run may write refs/clover (the checkpoints' bookkeeping)

    def state(self) -> dict[Path, Identity | None]:
        """Each protected path (existing, or one that must not appear) and what is there now."""
        found: dict[Path, Identity | None] = {}
        for git_dir in self.git_dirs:
            for path in self._entries(git_dir, top=True):
                found[path] = _identity(path)
            for name in OBJECT_SOURCES:
                found[git_dir / name] = _identity(git_dir / name)
        return found

    def read_only(self, state: dict[Path, Identity | None]) -> tuple[Path, ...]:
        """What to bind read-only: the protected entries there are (a symlink is checked after
        the run instead: a bind would cover its target, not the link)."""
        paths = [path for path, seen in state.items() if seen is not None and seen[0] != "link"]
        if not self.checkpoint_refs:
            paths += [refs for d in self.git_dirs if (refs := d / CHECKPOINT_REFS).is_dir()]
        return tuple(paths)

    def undo(self, before: dict[Path, Identity | None]) -> list[Path]:
        """After the run: remove what appeared among the protected names and put back a replaced
        symlink; the paths it changed. An entry bound read-only cannot have changed; one that did
        (the user's own git, at the same time) is the user's and stays."""
        after = self.state()
        watched = {d / name for d in self.git_dirs for name in OBJECT_SOURCES}
        changed: list[Path] = []
        for path in sorted(before.keys() | after.keys()):
            was, now = before.get(path), after.get(path)
            if was == now or (was is not None and was[0] != "link"):
                continue
            if was is None and path.parent not in self.git_dirs and path not in watched:
                continue  # a new linked worktree's folder (the user's `git worktree add`): git reads none by itself

            _remove(path)
            if was is not None:
                os.symlink(str(was[1]), path)
            changed.append(path)
        return changed

    def _entries(self, folder: Path, *, top: bool) -> list[Path]:
        """The protected entries of `folder`: at a git dir's top, all but git's own state; a
        folder that holds another guarded git dir (worktrees/, for a linked worktree's own)
        counts by its entries, the guarded one left to its own turn."""
        found: list[Path] = []
        for entry in _listing(folder):
            path = folder / entry
            if (top and _written(entry)) or path in self.git_dirs:
                continue
            if any(d.is_relative_to(path) for d in self.git_dirs):
                found += self._entries(path, top=False)
            else:
                found.append(path)
        return found


def _written(name: str) -> bool:
    return name.removesuffix(".lock") in WRITTEN or name.startswith(TEMPORARY)


def _identity(path: Path) -> Identity | None:
    try:
        seen = path.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(seen.st_mode):
        return ("link", os.readlink(path))
    return (stat.S_IFMT(seen.st_mode), seen.st_dev, seen.st_ino)


def _listing(folder: Path) -> list[str]:
    try:
        return sorted(os.listdir(folder))
    except OSError:  # not a folder, or gone
        return []


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
