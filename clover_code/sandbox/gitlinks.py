"""Nested repositories in the user's index: no git run of clover-code may record one.

Git on the host looks inside every populated gitlink of the index (a nested repository recorded
there) to tell whether it changed: `git status` runs in it with that repository's own config,
its core.fsmonitor and filters. A nested repository the session's shell made is the session's
to write, so none may reach the index: not through `git add -A` (git_commit), nor through a hook
or filter writing the index while clover-code's git runs. The index is read again only when a
run changed it (its stat), so a run that leaves it alone costs one stat.

Those the index already records are kept as they are by gitlink_pins.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from clover_code.errors import ToolError

GITLINK_MODE = "160000"

Stamp = tuple[int, int, int, int]
Reader = Callable[[], "frozenset[str] | None"]  # the index's gitlinks, None when it cannot be read


class NestedRepositoryError(ToolError):
    """A git run recorded nested repositories in the index; they were taken out again."""

    def __init__(self, paths: list[str]):
        self.paths = paths
        one = len(paths) == 1
        named = ", ".join(f"{path}/" for path in paths)
        super().__init__(
            f"{named} {'is a git repository' if one else 'are git repositories'} of "
            f"{'its' if one else 'their'} own (nested): clover-code's git never records one in the index, "
            f"as git on the host would then run {'its' if one else 'their'} settings (core.fsmonitor, "
            "filters); taken out of the index again. To commit the files inside, remove its `.git`; "
            "to keep it as a submodule, the user adds it (`git submodule add`).")


def gitlinks(stage: str) -> frozenset[str]:
    """The gitlink paths in `git ls-files --stage -z` output."""
    found = set()
    for record in stage.split("\0"):
        meta, _, path = record.partition("\t")
        if meta.startswith(GITLINK_MODE + " ") and path:
            found.add(path)
    return frozenset(found)


class IndexGitlinks:
    """The gitlinks of one index file as last read, and the file's stat then."""

    def __init__(self, index: Path):
        self.index = index
        self._stamp: Stamp | None = None
        self._links: frozenset[str] | None = None

    @property
    def links(self) -> frozenset[str]:
        """The gitlinks as last read (none when the index could not be read)."""
        return self._links or frozenset()

    def known(self, read: Reader) -> None:
        """Before a run: read the gitlinks again if the index changed since (the user's git)."""
        stamp = _stamp(self.index)
        if stamp != self._stamp or self._links is None:
            self._stamp, self._links = stamp, read()

    def added(self, read: Reader) -> list[str]:
        """After a run: the gitlinks it added (none when the index is as it was). The caller
        takes them out again; the index is read afresh before the next run."""
        stamp = _stamp(self.index)
        if stamp == self._stamp:
            return []
        links, before = read(), self._links
        self._stamp, self._links = stamp, links
        if links is None or before is None:  # unreadable: nothing to compare, nothing to undo
            return []
        new = sorted(links - before)
        if new:
            self._stamp = None
        return new


def _stamp(index: Path) -> Stamp | None:
    try:
        seen = index.stat()
    except OSError:
        return None
    return (seen.st_ino, seen.st_size, seen.st_mtime_ns, seen.st_ctime_ns)
