"""Workspace policy: every path a tool touches stays inside the root.

Also the stale-read guard (the agent may only change a file as it last saw it) and
atomic writes. Shared by every tool family; no tool opens a path it did not get from
`Workspace.resolve` / `resolve_for_write`.
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from clover_code.errors import ToolError

# Hashing lets a touched-but-unchanged file (same bytes, new mtime) count as fresh;
# above this size mtime+size alone decide, so a huge file costs no full read.
HASH_LIMIT = 16 * 1024 * 1024


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Characters some filesystems drop from names (HFS+ ignores these code points; NTFS drops
# trailing dots and spaces), so `.git\u200c` or `.git.` may open `.git` there.
_IGNORED_IN_NAMES = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e"
                                        "\u206a\u206b\u206c\u206d\u206e\u206f\ufeff"))


def _comparable(name: str) -> str:
    """A path component as a case-insensitive, forgiving filesystem may see it."""
    return name.translate(_IGNORED_IN_NAMES).rstrip(". ").lower() or name


# Read once at import: os.umask can only be read by setting it, which is not thread-safe.
_UMASK = _current_umask()


@dataclass(frozen=True)
class _Seen:
    mtime_ns: int
    size: int
    digest: str | None  # sha256 of the content, None when over HASH_LIMIT


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path, size: int) -> str | None:
    if size > HASH_LIMIT:
        return None
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def reserved_path(relative: Path) -> str | None:
    """Why nothing of clover-code may write `relative` (a path under the root), or None: a
    `.git` folder at any depth (hooks and config run on the host) and the root's `.clover/`
    (session logs, the project's config). File tools and checkpoint restores both ask."""
    parts = [_comparable(part) for part in relative.parts]
    if ".git" in parts:
        return "never write inside a .git folder (git runs what it finds there); use the git tools"
    if parts[:1] == [".clover"]:
        return "never write under .clover/ (clover-code's own session logs and settings)"
    return None


def _refuse_reserved(given: str, relative: Path) -> None:
    why = reserved_path(relative)
    if why is not None:
        raise ToolError(f"{given!r}: file tools {why}")


class Workspace:
    def __init__(self, root: str | Path):
        try:
            resolved = Path(root).expanduser().resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise ToolError(f"workspace root {root} does not exist: {exc}") from None
        if not resolved.is_dir():
            raise ToolError(f"workspace root {root} is not a directory")
        self.root: Path = resolved
        self._given_root = Path(os.path.abspath(Path(root).expanduser()))  # may pass through symlinks
        self._seen: dict[Path, _Seen] = {}

    # -- paths -----------------------------------------------------------------

    def resolve(self, path: str) -> Path:
        """The real path of `path` (relative to the root, or absolute inside it)."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError("path is empty; give a path relative to the workspace root")
        if "\0" in path:
            raise ToolError(f"path {path!r} contains a NUL byte")
        raw = path.strip()
        given = Path(os.path.expanduser(raw))
        joined = given if given.is_absolute() else self.root / given
        try:
            real = joined.resolve(strict=False)
        except (OSError, RuntimeError) as exc:  # symlink loop
            raise ToolError(f"cannot resolve path {raw!r}: {exc}") from None
        if self._inside(real):
            return real
        lexical = Path(os.path.normpath(joined))
        if self._inside(lexical) or lexical.is_relative_to(self._given_root):
            raise ToolError(
                f"path {raw!r} goes through a symlink that leads outside the workspace (to {real}); refused"
            )
        raise ToolError(
            f"path {raw!r} is outside the workspace ({self.root}); "
            "tools may only access files inside it: use a path relative to the workspace root"
        )

    def resolve_for_write(self, path: str) -> Path:
        """Like `resolve`, and also refuses the root itself, anything in a `.git` folder and
        anything under the root's `.clover/`, whether the path names them or leads there
        through `..` or symlinks."""
        real = self.resolve(path)
        if real == self.root:
            raise ToolError(f"path {path!r} is the workspace root itself, not a file")
        for relative in (real.relative_to(self.root), self._lexical(path)):
            if relative is not None:
                _refuse_reserved(path, relative)
        return real

    def create_new(self, path: str, data: bytes) -> Path:
        """Write `data` to `path`, a file that must not exist yet, where `resolve_for_write`
        allows. A name that is a symlink is refused, even a dangling one or one that points
        inside (writing through it would write its target), and the file is made with O_EXCL,
        which follows no link: one planted meanwhile fails the write instead of redirecting it.
        FileExistsError when something is already there."""
        named = self.root / path.strip()
        if named.is_symlink():
            raise ToolError(f"{path!r} is a symbolic link (to {os.readlink(named)}); refusing to write through it: "
                            "remove the link first")
        real = self.resolve_for_write(path)
        fd = os.open(real, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        return real

    def _lexical(self, path: str) -> Path | None:
        """`path` with `..` folded but no symlink followed, relative to the root (None: outside)."""
        given = Path(os.path.expanduser(path.strip()))
        joined = Path(os.path.normpath(given if given.is_absolute() else self.root / given))
        for root in (self.root, self._given_root):
            if joined.is_relative_to(root):
                return joined.relative_to(root)
        return None

    def relative(self, path: Path) -> str:
        """'src/a.py' for display; '.' for the root."""
        try:
            rel = Path(path).relative_to(self.root)
        except ValueError:
            return str(path)
        return rel.as_posix() or "."

    def _inside(self, path: Path) -> bool:
        return path == self.root or path.is_relative_to(self.root)

    # -- stale-read guard --------------------------------------------------------

    def note_read(self, path: Path, data: bytes | None = None) -> None:
        """Remember the file as the agent saw it. `data`: its full content, if at hand."""
        st = path.stat()
        if data is not None and len(data) == st.st_size:
            digest = _digest(data) if st.st_size <= HASH_LIMIT else None
        else:
            digest = _file_digest(path, st.st_size)
        self._seen[path] = _Seen(st.st_mtime_ns, st.st_size, digest)

    def note_written(self, path: Path) -> None:
        """After our own write, the new content counts as seen."""
        self.note_read(path)

    def forget(self, path: Path) -> None:
        """After our own delete or move: no record of the old path."""
        self._seen.pop(path, None)

    def check_fresh(self, path: Path) -> None:
        """Refuse to change a file the agent never read, or that changed since it read it."""
        try:
            st = path.stat()
        except FileNotFoundError:
            return  # a new file: nothing to go stale
        name = self.relative(path)
        if stat.S_ISDIR(st.st_mode):
            raise ToolError(f"{name} is a directory, not a file")
        seen = self._seen.get(path)
        if seen is None:
            raise ToolError(
                f"{name} exists but you have not read it yet; read it with read_file first, then retry"
            )
        if (st.st_mtime_ns, st.st_size) == (seen.mtime_ns, seen.size):
            return
        if st.st_size == seen.size and seen.digest is not None and _file_digest(path, st.st_size) == seen.digest:
            self._seen[path] = _Seen(st.st_mtime_ns, st.st_size, seen.digest)  # touched, bytes unchanged
            return
        raise ToolError(
            f"{name} changed on disk since you last read it (edited by the user or another program); "
            "read it again with read_file, then redo your change"
        )

    # -- writing -----------------------------------------------------------------

    def atomic_write(self, path: Path, data: bytes) -> None:
        """Write via a temp file in the same directory, fsync, rename; keeps an existing file's mode."""
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            mode = 0o666 & ~_UMASK
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fchmod(fh.fileno(), mode)
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable; some filesystems refuse, which is harmless."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
