"""The nested repositories the user's index already records, kept as they are by every command.

Git on the host steps into each populated gitlink of the index (a nested repository recorded
there, the owner's submodule) and runs its settings: core.fsmonitor, filters. So for every
command and git run, the gitlinks inside the workspace are pinned: their `.git` (and a git dir
a `.git` file names inside the workspace) is bound read-only, a gitlink folder without one
read-only whole (nothing may make it a repository), and each folder from the workspace down to
them bound onto itself, so none can be moved aside and made again (a mount point cannot be
renamed or removed). A gitlink whose folder is missing, or lies behind a link or a file, has no
folder to bind: a `.git` that appears there during a run is removed after it (git on the host
steps through no link, so one behind a link is left). The gitlinks come from gitlinks.py's
IndexGitlinks, read again only when the index changed; pinning them costs a few stats a run.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class NestedGitPins:
    """How a command's sandbox keeps the index's nested repositories as they are."""

    anchors: tuple[Path, ...] = ()  # bound onto themselves: cannot be moved, removed or replaced
    read_only: tuple[Path, ...] = ()  # their .git, the git dirs those name, gitlink folders without one
    absent: tuple[Path, ...] = ()  # git dirs that must not appear where nothing could be bound

    def planted(self) -> list[Path]:
        """After a run: each absent git dir that appeared, removed (the caller says so)."""
        removed = []
        for path in self.absent:
            if not os.path.lexists(path) or not _real_folder(path.parent):
                continue  # behind a link or a file: git on the host does not look inside
            if stat.S_ISDIR(os.lstat(path).st_mode):
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
            removed.append(path)
        return removed


def pins(top: Path, root: Path, links: Iterable[str]) -> NestedGitPins:
    """The pins for the gitlinks `links` of the repository at `top`, those inside the workspace
    `root` (the rest no command can write)."""
    anchors: list[Path] = []
    read_only: list[Path] = []
    absent: list[Path] = []
    for link in sorted(links):
        folder = top / link
        if folder == root or not folder.is_relative_to(root):
            continue
        if not _real_folder(folder, root):
            absent.append(folder / ".git")
            continue
        anchors += _chain(root, folder)
        dotgit = folder / ".git"
        try:
            kind = os.lstat(dotgit).st_mode
        except OSError:
            read_only.append(folder)  # empty (or not): nothing may make it a repository
            continue
        if stat.S_ISLNK(kind):
            read_only.append(folder)  # a mount over a link would land on its target
            continue
        read_only.append(dotgit)
        for named in _named_git_dirs(dotgit, root, top):
            if not os.path.lexists(named) or not _real_folder(named.parent, root):
                absent.append(named)
                continue
            anchors += _chain(root, named.parent)
            read_only.append(named)
    pinned = set(read_only)
    return NestedGitPins(tuple(dict.fromkeys(p for p in anchors if p not in pinned)),
                         tuple(dict.fromkeys(read_only)), tuple(dict.fromkeys(absent)))


def planted_note(paths: list[Path], root: Path) -> str:
    named = ", ".join(str(path.relative_to(root)) if path.is_relative_to(root) else str(path) for path in paths)
    return (f"removed {named}: the index records that folder as a nested repository (a gitlink), so git on "
            "the host would run the settings of a repository made there")


def _real_folder(folder: Path, root: Path | None = None) -> bool:
    """Whether `folder` and every folder above it (up to `root`) is a folder, not a link."""
    for path in (folder, *folder.parents):
        if root is not None and path == root:
            return True
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False
        except OSError:
            return False
    return root is None


def _chain(root: Path, folder: Path) -> list[Path]:
    """The folders from just below `root` down to `folder`."""
    return [root / Path(*folder.relative_to(root).parts[:depth])
            for depth in range(1, len(folder.relative_to(root).parts) + 1)]


def _named_git_dirs(dotgit: Path, root: Path, top: Path) -> list[Path]:
    """The git dirs inside the workspace that `dotgit` sends git to (a `.git` file's `gitdir:`,
    a `commondir`), but those in the repository's own git dir (read-only to commands already)."""
    found: list[Path] = []
    git_dir = _gitfile_target(dotgit) if dotgit.is_file() else dotgit
    for candidate in (git_dir, _commondir(git_dir)):
        if candidate is None or candidate == dotgit:
            continue
        if candidate.is_relative_to(root) and not candidate.is_relative_to(top / ".git") and candidate != root:
            found.append(candidate)
    return found


def _gitfile_target(dotgit: Path) -> Path | None:
    try:
        text = dotgit.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError:
        return None
    first = text.splitlines()[0] if text else ""
    if not first.startswith("gitdir:"):
        return None
    return (dotgit.parent / first.removeprefix("gitdir:").strip()).resolve()


def _commondir(git_dir: Path | None) -> Path | None:
    if git_dir is None:
        return None
    try:
        named = (git_dir / "commondir").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    return (git_dir / named).resolve() if named else None
