"""A task folder's files, read and copied as untrusted input (docs/security.md, "Eval task folders").

A downloaded task decides nothing on the host. Every path it names is resolved inside its own
folder by the resolver the file tools use: an absolute path, a `..` or a link leading out is
refused, never read through. Every write into a workspace goes through that resolver's write
check (no `.git` component in any spelling, nothing under the root's `.clover/`, no link leading
out). A link inside a copied folder is copied as a link when it stays inside that folder; any
other link, and anything that is not a file, folder or link (a FIFO would hang the copy), makes
the task a problem to report.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Literal

from clover_code.errors import ToolError
from clover_code.eval.tasks import ALWAYS_SKIPPED, TaskError
from clover_code.tools.workspace import Workspace, reserved_path

EntryKind = Literal["folder", "file", "link"]
TOP = PurePath()  # a copy into the destination's root


@dataclass(frozen=True)
class Entry:
    """One thing a copy of a folder makes: its path under that folder and, for a link, its target."""

    relative: PurePath
    kind: EntryKind
    target: str = ""


def inside(folder: Path, name: str, what: str) -> Path:
    """The real path of `name` under `folder`; TaskError when it leads out (absolute, `..`, a link)."""
    if not name or "\0" in name:
        raise TaskError(f"{what}: {name!r} is no file name")
    try:
        return Workspace(folder).resolve(str(folder / name))
    except ToolError:
        real = os.path.realpath(folder / name)
        raise TaskError(f"{what} ({name}) leads outside {folder} (to {real}): a task may only use "
                        "files inside its own folder") from None


def read_text(folder: Path, name: str, what: str) -> str | None:
    """A text file of the task, or None when there is none; never read through a link out."""
    path = inside(folder, name, what)
    if not path.exists():
        return None
    if not path.is_file():
        raise TaskError(f"{what} is not a plain file")
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"cannot read {what}: {exc}") from None


def entries(folder: Path, under: PurePath = TOP, skip: tuple[str, ...] = ()) -> Iterator[Entry]:
    """What a copy of `folder` to `under` in a workspace makes, each folder before what it holds,
    no link followed. Left out: caches, names in `skip`, and what no write may create (`.git` in
    any spelling, a top `.clover/`). TaskError for a link that leads out of `folder`, or a FIFO,
    socket or device."""
    top = folder.resolve()
    for root, dirs, files in os.walk(top):  # followlinks=False: a link to a folder is listed, not entered
        here = Path(root)
        for name in sorted([*dirs, *files]):
            path, relative = here / name, (here / name).relative_to(top)
            if name in (*ALWAYS_SKIPPED, *skip) or reserved_path(Path(under, relative)) is not None:
                if name in dirs:
                    dirs.remove(name)
                continue
            yield _entry(top, path, relative)


def vet_tree(folder: Path, under: PurePath = TOP, skip: tuple[str, ...] = ()) -> None:
    """TaskError now, when a task is loaded, for what copying `folder` would refuse later."""
    for _ in entries(folder, under, skip):
        pass


def _entry(top: Path, path: Path, relative: PurePath) -> Entry:
    mode = path.lstat().st_mode
    if stat.S_ISDIR(mode):
        return Entry(relative, "folder")
    if stat.S_ISREG(mode):
        return Entry(relative, "file")
    if not stat.S_ISLNK(mode):
        raise TaskError(f"{path} is not a plain file, folder or link: refused")
    target = os.readlink(path)
    lexical = os.path.normpath(relative.parent / target)
    # Both: `sub/../x` can stay inside by its letters and leave through a link `sub`, and
    # `../<this folder's name>/x` can come back in here but would leave the copy.
    if os.path.isabs(target) or lexical == ".." or lexical.startswith("../") or not _resolves_inside(path, top):
        raise TaskError(f"{path} is a link to {target}, outside {top}: a task's links must stay inside "
                        "the folder copied")
    return Entry(relative, "link", target)


def _resolves_inside(path: Path, top: Path) -> bool:
    try:
        return path.resolve().is_relative_to(top)
    except (OSError, RuntimeError):  # a loop of links
        return False


class Destination:
    """A folder being filled (a workspace, a check's scratch copy): every write is checked by the
    file tools' resolver, so nothing lands outside it, in a `.git` or under its `.clover/`."""

    def __init__(self, root: Path):
        root.mkdir(parents=True, exist_ok=True)
        self.workspace = Workspace(root)
        self.root = self.workspace.root

    def path(self, relative: PurePath) -> Path:
        """Where a write of `relative` lands: its real path, inside the root."""
        try:
            return self.workspace.resolve_for_write(str(self.root / relative))
        except ToolError as exc:
            raise TaskError(f"cannot write {relative}: {exc}") from None

    def folder(self, relative: PurePath) -> None:
        if relative != TOP:
            self.path(relative).mkdir(parents=True, exist_ok=True)

    def file(self, relative: PurePath, source: Path) -> None:
        """A copy of the plain file `source` (itself no link), writable, its execute bits kept."""
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        src = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # a FIFO opens, and is refused
        with open(src, "rb") as reader:
            st = os.fstat(reader.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise TaskError(f"{source} is not a plain file: refused")
            mode = stat.S_IMODE(st.st_mode) | stat.S_IRUSR | stat.S_IWUSR
            dst = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, mode)
            with open(dst, "wb") as writer:
                shutil.copyfileobj(reader, writer)
                os.fchmod(writer.fileno(), mode)

    def link(self, relative: PurePath, target: str) -> None:
        """A link at `relative`, refused (and removed) unless it resolves inside the root."""
        parent = self.path(relative.parent) if relative.parent != TOP else self.root
        parent.mkdir(parents=True, exist_ok=True)
        where = parent / relative.name
        if where.is_symlink() or where.is_file():
            where.unlink()
        os.symlink(target, where)
        try:
            self.workspace.resolve(str(where))
        except ToolError:
            where.unlink()
            raise TaskError(f"{relative} would be a link to {target}, outside the workspace: refused") from None


def copy_tree(folder: Path, dest: Destination, under: PurePath = TOP, skip: tuple[str, ...] = ()) -> None:
    """`folder`'s files into `dest` at `under` (see `entries` for what is left out or refused)."""
    top = folder.resolve()
    dest.folder(under)
    for entry in entries(top, under, skip):
        target = under / entry.relative
        if entry.kind == "folder":
            dest.folder(target)
        elif entry.kind == "file":
            dest.file(target, top / entry.relative)
        else:
            dest.link(target, entry.target)


def copy_work(workspace: Path, dest: Path, leave_out: Callable[[PurePath], bool]) -> None:
    """The model's work, for a check: links copied as links (only the check's sandbox ever
    resolves them), anything but plain files, folders and links skipped, and what
    `leave_out(relative path)` names not copied."""
    def ignore(folder: str, names: list[str]) -> set[str]:
        here = Path(folder).relative_to(workspace)
        return {n for n in names if leave_out(here / n)}

    shutil.copytree(workspace, dest, symlinks=True, ignore=ignore, copy_function=_copy_plain,
                    dirs_exist_ok=True)


def _copy_plain(source: str, target: str) -> None:
    if stat.S_ISREG(os.lstat(source).st_mode):
        shutil.copy2(source, target, follow_symlinks=False)


def read_plain(root: Path, relative: str) -> str | None:
    """A file a check wrote under `root` (a verifier's reward), or None: never through a link out."""
    try:
        path = Workspace(root).resolve(str(root / relative))
    except ToolError:
        return None
    return path.read_text(encoding="utf-8") if path.is_file() else None
