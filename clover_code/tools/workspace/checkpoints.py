"""Turn checkpoints: snapshot the work tree before a turn changes it, undo back to it.

A snapshot is a commit of the whole work tree (untracked, non-ignored files included)
made with git plumbing and a private index file, kept under a private ref
(refs/clover/checkpoints/<session>/<n>): the user's index, HEAD, branches and stash
are never touched, and no other git run may write those refs (sandbox/gitdir_guard.py).
A folder that is not a git repository (or a sub-folder of one) gets a private shadow
repository under the user's cache directory whose work tree is the folder; no .git is ever
created in it.

Undo and rewind put back only what this session changed: a snapshot before each change
(`ensure`) and after it (`settle`) tell the session's own changes from what someone else (a
second session in the same repository, the user's editor) changed between them
(ownership.py). Each file of the session's goes back as it was before the session first
changed it; one someone else changed between the session's changes, or since, is left as it
is, and the summary says so; files this session never touched are never rewritten, and a
redo puts back only what its rewind changed. `/diff` shows this session's files only.
Restoring rewrites only files that differ: created ones are removed, deleted ones come back.
Ignored files (build output, venvs, `.env`) are neither saved nor touched, whatever a
checkpoint's tree holds. Git runs inside the sandbox like every other git command
(sandbox/gitrun.py), with hooks off; what differs between two trees comes as GitPython's
Diff objects from that same git (sandbox/gitpython.py).
Sessions at work in the same folder see each other (live_sessions.py), and undo says so.

A session's checkpoints outlive its process, so a rewind of a resumed session (`--resume`,
`/model`) restores files as within one run. They are kept per session id (the session
log's) under refs/clover/checkpoints/<session>/: `turn-N` (the tree before turn N's first
change), `settled-N` (after its latest), `redo-K` and `rewound-K` (the trees before and after
the K-th rewind that /redo can take back). The refs live in the git dir (or the shadow
repository), and are written down in the user's state folder too (checkpoint_ledger.py): a
resumed session trusts a ref only as written down there, as a program git runs could forge
one. Noted beside them: what someone else changed between a turn's changes, and the first
turn whose checkpoints are kept (`from`: a turn before it ran in a version that kept them per
run, so its files cannot be restored; a `from-N` ref in versions before). The log gives only
the session id (made ref-safe) and the turn numbers. A restore never writes inside a `.git`
or under the root's `.clover/`, whatever a checkpoint's tree holds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from clover_code.errors import ToolError
from clover_code.jsonsafe import JSON
from clover_code.sandbox import own_dirs
from clover_code.sandbox.gitpython import SandboxedRepo, diff_trees
from clover_code.sandbox.gitrun import Git, GitResult, Repository
from clover_code.tools.workspace import reserved_path
from clover_code.tools.workspace.checkpoint_ledger import RefLedger
from clover_code.tools.workspace.live_sessions import LiveSession, LiveSessions
from clover_code.tools.workspace.ownership import RestorePlan, TurnOwnership, TurnRecord, first_changes, restore_plan

# Snapshots are clover-code's, dated now (empty: git's own clock), whoever the user commits as.
IDENTITY = {"GIT_AUTHOR_NAME": "clover-code", "GIT_AUTHOR_EMAIL": "clover-code@localhost",
            "GIT_COMMITTER_NAME": "clover-code", "GIT_COMMITTER_EMAIL": "clover-code@localhost",
            "GIT_AUTHOR_DATE": "", "GIT_COMMITTER_DATE": ""}
# Derived trees nobody wants snapshotted in a folder without its own .gitignore.
SHADOW_EXCLUDES = "node_modules/\n.venv/\nvenv/\n__pycache__/\n*.pyc\n.mypy_cache/\n.pytest_cache/\n"
# Snapshots run no hooks (there are none for plumbing; this keeps it so).
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")
LISTED = 8  # file names shown per kind in an undo summary
KEEP_DAYS = 14  # checkpoint refs of older sessions are dropped (their objects then age out in gc)
PRUNE_EVERY_S = 3600.0  # looked for at most this often per repository: it costs a session start a git run
REFS = "refs/clover/checkpoints"
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_REF = re.compile(r"(turn|settled|redo|rewound|from)-(\d{1,9})")


class CheckpointError(ToolError):
    """A snapshot or restore failed; the message says why."""


def default_cache_dir() -> Path:
    return own_dirs.cache_dir()


class Checkpoints:
    def __init__(self, root: str | Path, *, cache_dir: Path | None = None, git: Git | None = None):
        self.root = Path(root).resolve()
        self._cache_dir = cache_dir or default_cache_dir()
        self._runner = git or Git(self.root)
        self._lock = threading.Lock()
        self._git_dir: Path | None = None  # found on first use
        self._repo: SandboxedRepo | None = None  # the same, as GitPython's objects (made on first use)
        self._writable: tuple[Path, ...] = ()  # the git dirs snapshots write to
        self._ledger: RefLedger | None = None  # where the refs are written down (found with the git dir)
        self._shadow = False  # True: a private repository, not the user's
        self._tmp = tempfile.TemporaryDirectory(prefix="clover-checkpoints-")
        self._index = Path(self._tmp.name) / "index"  # private index, kept warm across snapshots
        self._session = f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        self._name = self._session  # whose refs: the session log's id once continue_session() names it
        self._stack: list[tuple[int, str]] = []  # (turn, commit), oldest first
        self._first: str | None = None  # the session's first checkpoint, kept after undo
        self._count = 0
        self._turn = -1  # turns count from 0, as the conversation counts them; shown from 1
        self._kept_from: int | None = None  # the first turn whose checkpoints are kept (written down)
        self._taken = False  # a checkpoint exists for the current turn
        self._open = False  # a change is under way: snapshot before it taken, after it not yet
        self._pre: str | None = None  # the tree before the change under way
        self._redo: list[_Rewind] = []  # what rewinds undid, latest last
        self._loaded = True  # nothing to read back: a new session (continue_session says otherwise)
        self._turns = 0  # continue_session(): the conversation's turns, and the rewinds redo can take back
        self._pending: list[tuple[int, int]] = []
        self._refs: dict[str, str] = {}  # this session's refs (name under its folder -> commit), as written down
        # checkpoint commit -> the work tree after its turn's latest change (settle())
        self._settled: dict[str, str] = {}
        self._trees: dict[str, str] = {}  # checkpoint commit -> its tree, for this run's checkpoints
        self._owned: dict[str, TurnOwnership] = {}  # checkpoint commit -> what others changed in its turn
        self._made: list[str] = []  # every checkpoint of the session, oldest first (undone ones too)
        # Seen by other sessions in this folder for as long as this process lives.
        self.live = LiveSessions(self.root, self._session)
        self.live.join()

    # -- public ------------------------------------------------------------------

    def continue_session(self, session: str, turns: int = 0, redo: list[tuple[int, int]] | None = None) -> None:
        """Keep the checkpoints as those of session `session` (its log's id), whose conversation
        has `turns` turns and, oldest first, the rewinds /redo can take back as (the turn
        rewound to, the turns before it): an earlier run's checkpoints of it are read back on
        first use. Call before any other method."""
        with self._lock:
            self._name = safe_session_name(session)
            self._turns, self._pending = turns, list(redo or [])
            self._loaded = False

    def kept_since(self) -> int | None:
        """The first turn whose file checkpoints are kept (a rewind to an earlier one cannot
        restore files); None: none is, as no turn has begun with them kept."""
        with self._lock:
            self._load()
            return self._kept_from

    def begin_turn(self, turn: int | None = None) -> None:
        """A turn starts: `turn` its number (the conversation's), else the next one. The
        checkpoints of the turns it replaces (rewound away) are gone for good."""
        with self._lock:
            self._turn = self._turn + 1 if turn is None else turn
            self._taken = self._open = False
            self._load()  # first: an earlier run's pending redo is one of those now gone
            self._redo.clear()  # a new turn: what rewinds undid is gone for good
            self._stack = [entry for entry in self._stack if entry[0] < self._turn]
            try:
                self._ensure_git_dir()
                stale = [name for name in self._refs if (found := _REF.fullmatch(name)) and (found[1] in (
                    "redo", "rewound") or (found[1] in ("turn", "settled") and int(found[2]) >= self._turn))]
                self._update_refs(stale, {})
            except ToolError:  # no git here (no sandbox...): no checkpoint can be kept, none is said to be
                return
            if self._kept_from is None:
                self._kept_from = self._turn
                self._write_down()

    def ensure(self) -> None:
        """Snapshot the work tree before a change: the turn's checkpoint before its first; before
        a later one, what changed since the last is someone else's (ownership.py). Once per
        change: a second call before `settle` (run_shell asks for itself) does nothing."""
        with self._lock:
            if self._open:
                return
            self._load()
            tree = self._snapshot_tree()
            if self._taken and self._stack:
                self._changed_between(self._stack[-1][1], tree)
            else:
                parent = ["-p", self._stack[-1][1]] if self._stack else []
                ref = f"turn-{self._turn}" if self._turn >= 0 else f"made-{self._count + 1}"
                commit = self._keep(tree, f"clover checkpoint: turn {self._turn + 1}", *parent, ref=ref)
                self._stack.append((self._turn, commit))
                self._made.append(commit)
                self._trees[commit], self._owned[commit] = tree, TurnOwnership()
                self._first = self._first or commit
                self._taken = True
            self._pre, self._open = tree, True

    def settle(self) -> None:
        """Snapshot the work tree after a change of this turn: what differs across the change is
        this session's to undo (what others change before or after it is not)."""
        with self._lock:
            if not (self._taken and self._stack):
                return
            turn, commit = self._stack[-1]
            tree = self._settled[commit] = self._snapshot_tree()
            owned = self._owned.get(commit)
            if owned is not None and owned.others and self._pre is not None:
                owned.changed_by_session(self._paths(self._pre, tree))
            self._pre, self._open = None, False
            if turn >= 0:  # read back with the checkpoint when the session is resumed
                self._update_refs([], {f"settled-{turn}": tree})

    def _changed_between(self, commit: str, tree: str) -> None:
        """Before a later change of the turn of `commit`: what differs between the tree after its
        last change and `tree` (now) was changed by someone else."""
        before = self._trees.get(commit, f"{commit}^{{tree}}")
        last = self._settled.get(commit, before)
        if last == tree:
            return
        owned = self._owned.setdefault(commit, TurnOwnership())
        owned.changed_between(self._paths(last, tree), owned.own(self._paths(before, last)))
        self._write_down()

    def other_sessions(self) -> list[LiveSession]:
        """Other clover-code sessions at work in this folder now."""
        return self.live.others()

    def undo(self) -> str:
        """Restore the tree of the last checkpoint that differs from now; a summary of what changed."""
        with self._lock:
            if not self._stack:
                if self._first is None:
                    return "Nothing to undo: no changes were made in this session."
                return "Nothing left to undo: every checkpoint of this session has been restored."
            current = self._snapshot_tree()
            while self._stack:
                turn, commit = self._stack.pop()
                plan = self._plan(current, [commit])
                changes = self._restore(current, plan)
                if changes or plan.kept:
                    headline = f"Undid turn {turn + 1}: the files are back as they were before it."
                    return self._told(_summary(headline, changes) if changes else
                                      f"Turn {turn + 1} not undone: every file it changed was changed since.",
                                      plan.kept)
            self._taken = False
            return self._told("Nothing to undo: the files already match the session's start.", [])

    def rewind(self, turn: int, *, files: bool = True, conversation: bool = True) -> str:
        """Put the work tree back as it was when `turn` began (its checkpoint, or the next
        one's: a turn that changed nothing has none); `redo()` takes it back. What it did.
        `files=False`: only the conversation goes back (the files stay, redo pairs all the
        same); `conversation=False`: only the files (the later turns' checkpoints stay)."""
        with self._lock:
            self._load()
            if not files:
                self._pushed(_Rewind(None, None, self._rewound(turn) if conversation else []))
                return ""
            if self._kept_from is None or turn < self._kept_from:
                self._pushed(_Rewind(None, None, self._rewound(turn) if conversation else []))
                return NOT_KEPT
            later = [entry for entry in self._stack if entry[0] >= turn]
            if not later:
                self._pushed(_Rewind(None, None, self._rewound(turn) if conversation else []))
                return "No files to restore: they were not changed since that turn."
            current = self._snapshot_tree()
            point = self._keep(current, f"clover redo point: before rewinding to turn {turn + 1}", ref=None)
            plan = self._plan(current, [commit for _, commit in later])
            changes = self._restore(current, plan)
            after = self._snapshot_tree() if changes else current
            depth = len(self._redo) + 1
            self._update_refs([], {f"redo-{depth}": point, f"rewound-{depth}": after})
            self._redo.append(_Rewind(point, after, self._rewound(turn) if conversation else []))
            return self._told(_summary("The files are back as they were before that turn.", changes) if changes else (
                "No files to restore: they already match that turn's start."), plan.kept)

    def files_kept(self, turn: int) -> bool:
        """Whether a rewind to `turn` can restore the files (its checkpoints were kept)."""
        kept = self.kept_since()
        return kept is not None and turn >= kept

    def _rewound(self, turn: int) -> list[tuple[int, str]]:
        """The checkpoints of `turn` and later leave the stack (the conversation goes back to
        before `turn`); they are what a redo puts back."""
        later = [entry for entry in self._stack if entry[0] >= turn]
        self._stack = self._stack[: len(self._stack) - len(later)]
        return later

    def _pushed(self, undone: _Rewind) -> None:
        """A rewind that changed no file: an earlier redo point at its depth is not its."""
        self._redo.append(undone)
        stale = [name for name in (f"redo-{len(self._redo)}", f"rewound-{len(self._redo)}") if name in self._refs]
        if stale:
            try:
                self._update_refs(stale, {})
            except CheckpointError:
                pass

    def redo(self) -> str:
        """Take back the latest rewind: the work tree as it was before it. What it did."""
        with self._lock:
            self._load()
            if not self._redo:
                return ""
            undone = self._redo[-1]
            changes: list[tuple[str, str]] = []
            kept: list[str] = []
            if undone.tree is not None:  # restored before the stacks move: a failure leaves both as they were
                current = self._snapshot_tree()
                plan = self._redo_plan(undone.tree, undone.after, current)
                changes, kept = self._restore(current, plan), plan.kept
            self._redo.pop()
            self._stack.extend(undone.stack)
            if not changes and not kept:
                return ""
            return self._told(_summary("The files are back as they were before the rewind.", changes) if changes
                              else "No files restored: each one the rewind changed was changed since.", kept)

    def _redo_plan(self, point: str, after: str | None, current: str) -> RestorePlan:
        """What taking back a rewind restores: the files it changed (from `point`, the tree before
        it, to `after`), of those, not one someone changed since."""
        before = f"{point}^{{tree}}"
        if after is None:  # a rewind written down by an earlier version: every file that differs
            return RestorePlan({point: sorted(self._paths(current, before))}, [])
        rewound = self._paths(after, before)
        since = rewound & self._paths(after, current)
        return RestorePlan({point: sorted(rewound - since)}, sorted(since))

    def _plan(self, current: str, checkpoints: list[str]) -> RestorePlan:
        """What going back over the turns of `checkpoints` (oldest first) restores (ownership.py)."""
        return restore_plan(self._records(checkpoints, current), current, self._paths)

    def _records(self, checkpoints: list[str], current: str) -> list[TurnRecord]:
        """The turns of `checkpoints`; a turn never settled (cancelled mid-call): now stands in."""
        return [TurnRecord(commit, self._trees.get(commit, f"{commit}^{{tree}}"), self._settled.get(commit, current),
                           self._owned.get(commit, TurnOwnership())) for commit in checkpoints]

    def _paths(self, old: str, new: str) -> set[str]:
        return {path for _, path in self._changes(old, new)} if old != new else set()

    def _restore(self, current: str, plan: RestorePlan) -> list[tuple[str, str]]:
        """Put the plan's paths back as their checkpoints have them (one created since is removed);
        the changes made, as (status from now to the checkpoint, path)."""
        wanted = {path for path in plan.paths if reserved_path(Path(path)) is None}  # never .git, never .clover/
        wanted -= self._ignored(wanted)
        changes: list[tuple[str, str]] = []
        for commit, paths in plan.sources.items():
            mine = wanted.intersection(paths)
            group = [change for change in self._changes(current, f"{commit}^{{tree}}") if change[1] in mine]
            if group:
                self._git("--literal-pathspecs", "restore", f"--source={commit}", "--staged", "--worktree",
                          "--pathspec-from-file=-", "--pathspec-file-nul",
                          input="".join(f"{path}\0" for _, path in group))
            changes += group
        self._taken = False  # a later change needs a fresh checkpoint
        return sorted(changes, key=lambda change: change[1])

    def _ignored(self, paths: set[str]) -> set[str]:
        """Of `paths`, those git ignores and the user's index does not track (a `.env`): a restore
        never writes or removes one. Raises when git cannot tell."""
        if not paths:
            return set()
        done = self._result("check-ignore", "-z", "--stdin", input="".join(f"{path}\0" for path in paths),
                            index=self._ensure_git_dir() / "index")
        if done.code not in (0, 1):  # 1: none ignored
            raise CheckpointError(f"checkpoint failed: git check-ignore: {done.err.strip()}")
        return set(done.out.split("\0")) - {""}

    def _told(self, summary: str, kept: list[str]) -> str:
        """`summary`, with the files left alone and the other sessions at work here."""
        lines = [summary]
        if kept:
            more = f", ... ({len(kept) - LISTED} more)" if len(kept) > LISTED else ""
            lines.append(f"{len(kept)} left as they are (someone else changed them too): "
                         f"{', '.join(kept[:LISTED])}{more}")
        others = self.live.others()
        if others:
            lines.append(other_sessions_notice(others))
        return "\n".join(lines)

    def _keep(self, tree: str, message: str, *parent: str, ref: str | None) -> str:
        """A commit of `tree`, under this session's private ref `ref` (so gc keeps it, and a
        resumed session finds it); `ref=None`: the caller writes the ref."""
        commit = self._git("commit-tree", tree, *parent, "-m", message)
        self._count += 1
        if ref is not None:
            self._update_refs([], {ref: commit})
        return commit

    def _update_refs(self, delete: list[str], create: dict[str, str]) -> None:
        """Delete and point this session's refs (names under its folder), in one git call."""
        if not delete and not create:
            return
        prefix = f"{REFS}/{self._name}"
        self._git("update-ref", "--stdin", input="".join(
            [f"delete {prefix}/{name}\n" for name in delete] +
            [f"update {prefix}/{name} {value}\n" for name, value in create.items()]))
        self._refs = {name: value for name, value in self._refs.items() if name not in delete} | create
        self._write_down()

    def _write_down(self) -> None:
        """This session's refs, and what others changed in its turns, in the user's state folder."""
        if self._ledger is None:
            return
        notes: dict[str, JSON] = {
            name: owned.to_json() for name, value in self._refs.items()
            if name.startswith("turn-") and (owned := self._owned.get(value)) and (owned.others or owned.tainted)}
        if self._kept_from is not None:  # a from-N ref, in versions before: a marker needs no git run
            notes["from"] = self._kept_from
        self._ledger.write(self._name, self._refs, notes)

    def _load(self) -> None:
        """An earlier run's checkpoints of this session, read back once (continue_session):
        those of its live turns join the stack, those of rewound turns wait for /redo."""
        if self._loaded:
            return
        self._loaded = True
        prefix = f"{REFS}/{self._name}/"
        try:
            self._ensure_git_dir()
            written = self._ledger.read(self._name) if self._ledger is not None else {}
            # nothing written down, nothing to trust: a new session needs no git run here
            listing = self._git("for-each-ref", "--format=%(objectname) %(refname)", prefix) if written else ""
        except ToolError:  # no git here (no sandbox...): this run's checkpoints only, as a snapshot will say
            return
        notes = self._ledger.notes(self._name) if self._ledger is not None else {}
        found: dict[str, dict[int, str]] = {"turn": {}, "settled": {}, "redo": {}, "rewound": {}, "from": {}}
        if isinstance(kept := notes.get("from"), int) and kept >= 0:
            found["from"][kept] = ""
        for line in listing.splitlines():
            value, _, ref = line.partition(" ")
            name = ref.removeprefix(prefix)
            if written.get(name) != value:  # not one clover-code wrote: forged, or from elsewhere
                continue
            self._refs[name] = value
            if (match := _REF.fullmatch(name)) is not None:
                found[match[1]][int(match[2])] = value
        if found["from"]:
            self._kept_from = min(found["from"])
        lost = [int(match[2]) for name in written if (match := _REF.fullmatch(name)) and match[1] == "turn"
                and name not in self._refs]  # written down, gone from git (deleted by hand, or forged over)
        if lost and self._kept_from is not None:
            self._kept_from = max(self._kept_from, max(lost) + 1)
        turns = sorted(found["turn"].items())
        # /diff shows the whole session: the earlier runs' checkpoints count as this one's
        earlier = [commit for _, commit in turns if commit not in self._made]
        self._made[:0] = earlier
        self._first = earlier[0] if earlier else self._first
        self._stack = [entry for entry in turns if entry[0] < self._turns] + [
            entry for entry in self._stack if entry[0] >= self._turns]
        for turn, commit in turns:
            if turn in found["settled"]:
                self._settled[commit] = found["settled"][turn]
            self._owned.setdefault(commit, TurnOwnership.from_json(notes.get(f"turn-{turn}")))
        self._redo = [_Rewind(found["redo"].get(depth), found["rewound"].get(depth),
                              [entry for entry in turns if lo <= entry[0] < hi])
                      for depth, (lo, hi) in enumerate(self._pending, 1)]

    def diff_since_start(self) -> str:
        """Unified diff of the files this session changed, from the session's first checkpoint
        to now ('' if none): another session's files are not this one's changes."""
        with self._lock:
            self._load()
            if self._first is None:
                return ""
            current = self._snapshot_tree()
            sources = first_changes(self._records(self._made, current), self._paths)
            return "".join(self._git("--literal-pathspecs", "diff", "--no-color", "--no-ext-diff", "--no-textconv",
                                     f"{commit}^{{tree}}", current, "--", *paths, strip=False)
                           for commit, paths in sources.items())

    # -- plumbing ------------------------------------------------------------------

    def _ensure_git_dir(self) -> Path:
        if self._git_dir is None:
            self._git_dir = self._find_git_dir()
            self._seed_index(self._git_dir)
            self._prune_old_sessions()
        return self._git_dir

    def _snapshot_tree(self) -> str:
        self._ensure_git_dir()
        self._git("add", "-A", "--", ".")
        tree = self._git("write-tree")
        if self._shadow and self._git_dir is not None:  # keep the stat cache for the next session here
            kept = self._git_dir / "index.clover-tmp"
            shutil.copy2(self._index, kept)
            os.replace(kept, self._git_dir / "index")
        return tree

    def _changes(self, old: str, new: str) -> list[tuple[str, str]]:
        """(status letter, path) of each file that differs from tree-ish `old` to `new`."""
        try:
            return [(change.change_type or "M", change.b_path or change.a_path or "")
                    for change in diff_trees(self._objects(), old, new)]
        except ToolError as exc:
            raise CheckpointError(f"checkpoint failed: {exc}") from None

    def _objects(self) -> SandboxedRepo:
        """The checkpoints' repository as GitPython's objects; its git is `_result`'s."""
        if self._repo is None:
            git_dir = self._ensure_git_dir()
            self._repo = SandboxedRepo(self._runner, Repository(self.root, git_dir, git_dir), env=self._env(),
                                       writable=self._writable_now(), checkpoint_refs=True, options=NO_HOOKS)
        return self._repo

    def _find_git_dir(self) -> Path:
        repository = self._runner.session_repository()  # the session's, as at its start
        if repository is not None and repository.top == self.root:
            self._writable = repository.writable()
            self._ledger = RefLedger(repository.common_dir)
            return repository.git_dir
        self._shadow = True
        shadow = self._shadow_repo()
        self._ledger = RefLedger(shadow)
        return shadow

    def _shadow_repo(self) -> Path:
        key = hashlib.sha256(str(self.root).encode()).hexdigest()[:16]
        shadow = self._cache_dir / "shadow" / f"{self.root.name}-{key}.git"
        self._writable = (shadow,)
        if not (shadow / "HEAD").exists():  # bare: every snapshot names its work tree (GIT_WORK_TREE)
            shadow.mkdir(parents=True, exist_ok=True)
            self._git("init", "-q", "--bare", str(shadow))
            (shadow / "info").mkdir(exist_ok=True)
            (shadow / "info" / "exclude").write_text(SHADOW_EXCLUDES)
        return shadow

    def _seed_index(self, git_dir: Path) -> None:
        """Start from the repository's index (a shadow's: the last session's): its stat cache
        spares re-hashing unchanged files, and it holds tracked files that .gitignore would
        otherwise hide from `add -A`."""
        user_index = git_dir / "index"
        if user_index.exists():
            shutil.copy2(user_index, self._index)
            if self._git("ls-files", "--cached", "--", "DOES-NOT-EXIST", check=False) is None:
                self._index.unlink(missing_ok=True)  # unreadable copy (split index...): start empty

    def _prune_old_sessions(self) -> None:
        """Sessions whose newest checkpoint is older than KEEP_DAYS lose all their refs (a
        settled tree has no date of its own: it goes with its session); looked for at most once
        every PRUNE_EVERY_S per repository, as it costs every session's first turn a git run."""
        if self._ledger is not None and self._ledger.pruned_within(PRUNE_EVERY_S):
            return
        listing = self._git("for-each-ref", "--format=%(committerdate:unix) %(refname)", REFS)
        cutoff = time.time() - KEEP_DAYS * 86400
        newest: dict[str, float] = {}
        refs: dict[str, list[str]] = {}
        for when, _, ref in (line.partition(" ") for line in listing.splitlines()):
            session = ref.removeprefix(f"{REFS}/").split("/", 1)[0]
            refs.setdefault(session, []).append(ref)
            newest[session] = max(newest.get(session, 0.0), float(when) if when.isdigit() else 0.0)
        gone = {session for session in refs if newest[session] < cutoff and session != self._name}
        old = [ref for session in gone for ref in refs[session]]
        if old:
            self._git("update-ref", "--stdin", input="".join(f"delete {ref}\n" for ref in old))
        if self._ledger is not None:
            self._ledger.drop(gone, older_than_days=KEEP_DAYS, keep=self._name)
            self._ledger.mark_pruned()

    @overload
    def _git(self, *args: str, strip: bool = True, check: Literal[True] = True, input: str | None = None) -> str: ...

    @overload
    def _git(self, *args: str, strip: bool = True, check: bool, input: str | None = None) -> str | None: ...

    def _git(self, *args: str, strip: bool = True, check: bool = True,
             input: str | None = None) -> str | None:
        """git's output; a failure raises CheckpointError, or gives None with check=False."""
        done = self._result(*args, input=input)
        if done.code != 0:
            if not check:
                return None
            raise CheckpointError(f"checkpoint failed: git {args[0]}: {done.err.strip()}")
        return done.out.strip() if strip else done.out

    def _result(self, *args: str, input: str | None = None, index: Path | None = None) -> GitResult:
        """git on the checkpoints' git dir, with the private index (or `index`), hooks off; the
        one kind of run that may write refs/clover."""
        try:
            return self._runner.run(*NO_HOOKS, *args, writable=self._writable_now(), visible=(self.root,),
                                    env=self._env(index), input=input, check=False, checkpoint_refs=True)
        except ToolError as exc:
            raise CheckpointError(f"checkpoint failed: {exc}") from None

    def _env(self, index: Path | None = None) -> dict[str, str]:
        env = {**IDENTITY, "GIT_INDEX_FILE": str(index or self._index)}
        if self._git_dir is not None:
            env |= {"GIT_DIR": str(self._git_dir), "GIT_WORK_TREE": str(self.root)}
        return env

    def _writable_now(self) -> tuple[Path, ...]:
        return (*self._writable, self._index.parent)


def other_sessions_notice(others: list[LiveSession]) -> str:
    who = "; ".join(s.describe() for s in others)
    session = "Another clover-code session is" if len(others) == 1 else f"{len(others)} other clover-code sessions are"
    return (f"{session} at work in this folder ({who}): undo and diff here count only this "
            "session's changes, and leave its edits alone (save one made while a change of this "
            "session's was running, such as a long command).")


NOT_KEPT = ("Files not restored: no file checkpoint of that turn was kept (it ran in a clover-code that "
            f"kept them per run only or did not write them down, more than {KEEP_DAYS} days ago, as another "
            "user or on another machine, or without a git sandbox).")


def safe_session_name(session: str) -> str:
    """`session` as one ref name component: an id as session logs are named stays as it is,
    anything else (a log's file name is the workspace's to choose) becomes a digest of it."""
    if _SAFE_ID.fullmatch(session):
        return session
    return "h-" + hashlib.sha256(session.encode("utf-8", "surrogatepass")).hexdigest()[:24]


@dataclass(frozen=True)
class _Rewind:
    """What one rewind undid: the work tree before it (None: it changed no file), after it
    (None: not written down, by an earlier version) and the checkpoints of the turns it went
    back over."""

    tree: str | None
    after: str | None
    stack: list[tuple[int, str]]


def _summary(headline: str, changes: list[tuple[str, str]]) -> str:
    """`changes` go from now to the checkpoint: A = comes back, D = removed, else restored."""
    groups: dict[str, list[str]] = {"restored": [], "removed (created since)": [], "brought back (deleted since)": []}
    for status, path in changes:
        key = {"A": "brought back (deleted since)", "D": "removed (created since)"}.get(status[0], "restored")
        groups[key].append(path)
    lines = [headline]
    for label, paths in groups.items():
        if paths:
            more = f", ... ({len(paths) - LISTED} more)" if len(paths) > LISTED else ""
            shown = ", ".join(paths[:LISTED]) + more
            lines.append(f"{len(paths)} {label}: {shown}")
    return "\n".join(lines)
