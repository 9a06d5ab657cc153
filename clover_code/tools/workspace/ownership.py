"""Which files are this session's: its own changes told apart from what others changed between them.

A session snapshots the work tree before each change it makes and after it (checkpoints.py).
What differs across one change is its own; what differs between the snapshot after one change
and the snapshot before the next was changed by someone else (a second session in the same
folder, the user's editor), even when it happened during this session's turn. So a file the
session never changed is never restored or shown as its own, and a file someone else changed
between this session's changes of it, or after its last, is left as it is and named.

What no snapshot can tell apart: a change someone else makes while one of this session's own
changes runs (a long shell command) counts as this session's.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

from clover_code.jsonsafe import JSON

Paths = Callable[[str, str], "set[str]"]  # the paths that differ between two tree-ish


@dataclass
class TurnOwnership:
    """Of one turn: what someone else changed between this session's changes."""

    others: set[str] = field(default_factory=set)  # changed by someone else only: never this session's
    tainted: set[str] = field(default_factory=set)  # this session's, and someone else's in between

    def changed_between(self, between: set[str], own: set[str]) -> None:
        """Before a change: `between` changed since the session's last change (by someone else);
        `own` are the session's files of the turn so far."""
        self.tainted |= between & own
        self.others |= between - own

    def changed_by_session(self, changed: set[str]) -> None:
        """After a change: `changed` differ across it. A file someone else changed earlier in the
        turn becomes the session's, yet its checkpoint holds a state before their change."""
        self.tainted |= changed & self.others
        self.others -= changed

    def own(self, changed_in_turn: set[str]) -> set[str]:
        """The session's files, of those that differ between the turn's checkpoint and its last change."""
        return changed_in_turn - self.others

    def to_json(self) -> dict[str, JSON]:
        return {"others": sorted(self.others), "tainted": sorted(self.tainted)}

    @classmethod
    def from_json(cls, data: object) -> TurnOwnership:
        """As written by to_json; anything else reads as nothing known (a page from before)."""
        if not isinstance(data, dict):
            return cls()
        return cls(_strings(data.get("others")), _strings(data.get("tainted")))


@dataclass(frozen=True)
class TurnRecord:
    """One turn's checkpoint as a restore reads it."""

    checkpoint: str  # the commit before the turn's first change
    before: str  # its tree (`<commit>^{tree}` where the id is not at hand)
    settled: str  # the tree after its last change (the work tree now, for a turn never settled)
    ownership: TurnOwnership


@dataclass(frozen=True)
class RestorePlan:
    """Which checkpoint each of the session's files goes back to, and the files left alone."""

    sources: dict[str, list[str]]  # checkpoint commit -> paths restored from it
    kept: list[str]  # the session's, changed by someone else since: left as they are

    @property
    def paths(self) -> list[str]:
        return sorted(path for paths in self.sources.values() for path in paths)


def first_changes(turns: list[TurnRecord], paths: Paths) -> dict[str, list[str]]:
    """The session's files in `turns` (oldest first), each under the checkpoint of the first turn
    that changed it: the state it had before this session changed it."""
    touched = _touches(turns, paths)
    sources: dict[str, list[str]] = {}
    for path, records in sorted(touched.items()):
        sources.setdefault(records[0].checkpoint, []).append(path)
    return sources


def restore_plan(turns: list[TurnRecord], current: str, paths: Paths) -> RestorePlan:
    """What going back over `turns` (oldest first) restores, the work tree being `current`: each
    file the session changed in them goes back to the checkpoint of the first turn that changed it,
    unless someone else changed it between the session's changes or since its last one."""
    touched = _touches(turns, paths)
    tainted = set().union(*(turn.ownership.tainted for turn in turns)) & touched.keys()
    # A file is left as the session left it when its tree after one of the session's turns that
    # changed it matches the next such turn's checkpoint, and the last one matches now.
    spans: dict[tuple[str, str], set[str]] = {}
    for path, records in touched.items():
        for before, after in itertools.pairwise(records):
            spans.setdefault((before.settled, after.before), set()).add(path)
        spans.setdefault((records[-1].settled, current), set()).add(path)
    for (old, new), among in spans.items():
        if old != new and not among <= tainted:
            tainted |= among & paths(old, new)
    sources: dict[str, list[str]] = {}
    for path, records in sorted(touched.items()):
        if path not in tainted:
            sources.setdefault(records[0].checkpoint, []).append(path)
    return RestorePlan(sources, sorted(tainted))


def _touches(turns: list[TurnRecord], paths: Paths) -> dict[str, list[TurnRecord]]:
    """Each file the session changed in `turns`, with the turns that changed it, oldest first."""
    touched: dict[str, list[TurnRecord]] = {}
    for turn in turns:
        for path in turn.ownership.own(paths(turn.before, turn.settled)):
            touched.setdefault(path, []).append(turn)
    return touched


def _strings(value: object) -> set[str]:
    return {item for item in value if isinstance(item, str)} if isinstance(value, list) else set()
