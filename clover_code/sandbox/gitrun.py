"""The one way clover-code runs git on a workspace: inside the same sandbox as the shell.

Git executes programs that repositories configure: hooks (also from a work-tree
`core.hooksPath`, husky, lefthook), clean/smudge filters, fsmonitor, the configs of nested
repositories it recurses into. The shell can write all of those (a new `.git` in a folder
that had none, a `sub/.git` with a filter, the hook scripts in the tree), so a git run on
the host would run what the sandbox planted. Turning each feature off is a denylist that
misses the next one; so every git command runs sandboxed instead (docs/security.md):
hooks and filters a user relies on still run, contained, with no network, no secrets and
nothing writable but the work tree and git's own state in the git dir: what in it decides
which programs git runs stays read-only and is checked after every run (gitdir_guard.py), and
no run may record a nested repository in the index (gitlinks.py) nor rewrite one it records
(gitlink_pins.py), so nothing run inside can plant a program for the user's next git on the
host. Nor does clover-code's git step into
nested repositories (their filters and fsmonitor would run): no submodule recursion, and
status and diff ignore what changed inside one.

With the sandbox turned off (the user accepts unconfined commands) git runs bare.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from clover_code.errors import ToolError
from clover_code.sandbox.bwrap import command_env, confined_argv, protected_inside
from clover_code.sandbox.gitdir_guard import GitDirGuard
from clover_code.sandbox.gitlink_pins import NestedGitPins, pins, planted_note
from clover_code.sandbox.gitlinks import IndexGitlinks, NestedRepositoryError, gitlinks
from clover_code.sandbox.limits import CommandLimits, kill_group, limit_note
from clover_code.sandbox.policy import SandboxPolicy
from clover_code.sandbox.seccomp import SocketFilter

# No fsmonitor daemon, no colour or quoting in what the model reads; commits are unsigned,
# as the sandbox hides the signing keys. No step into nested repositories: no recursion, no
# diff or summary run inside one (`--ignore-submodules=dirty` on status and diff beats a
# `.gitmodules` that asks for more).
SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "color.ui=false", "-c", "core.quotePath=false",
               "-c", "commit.gpgSign=false", "-c", "submodule.recurse=false", "-c", "diff.submodule=short",
               "-c", "diff.ignoreSubmodules=dirty", "-c", "status.submoduleSummary=false")
NO_NESTED = "--ignore-submodules=dirty"  # status, diff: a nested repository's commit only, never its work tree
# Who commits: the user's identity from the environment (CI sets these), else git's config.
IDENTITY_ENV = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
                "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE")
TIMEOUT_S = 300.0  # a commit's hooks may run a test suite


@dataclass(frozen=True)
class GitResult:
    code: int
    out: str  # as text: undecodable bytes replaced, line ends as "\n"
    err: str
    raw: bytes = b""  # stdout exactly as git wrote it (objects, paths that are not UTF-8)


@dataclass(frozen=True)
class Repository:
    """Where a workspace's repository lives, as git itself reports it."""

    top: Path  # the work tree's top folder
    git_dir: Path
    common_dir: Path  # differs from git_dir in a linked worktree

    def writable(self) -> tuple[Path, ...]:
        return (self.git_dir, self.common_dir)

    def visible(self) -> tuple[Path, ...]:
        """Readable for git, though maybe under the sandbox's private /tmp: the whole work tree."""
        return (self.top,)


class Git:
    """Runs git in one workspace (`root`), sandboxed unless `sandbox` is off."""

    def __init__(self, root: Path, *, sandbox: bool = True, policy: SandboxPolicy | None = None):
        self.root = Path(root).resolve()
        self.sandbox = sandbox
        self.policy = policy or SandboxPolicy()
        self._first: Repository | None = None  # the repository as first found (session start)
        self._looked = False  # whether _first has been looked for
        self._index: IndexGitlinks | None = None  # the gitlinks of _first's index

    def repository(self) -> Repository | None:
        """The repository holding the workspace now, or None.

        A git dir outside the workspace is only used when it is the one first found: a `.git`
        file the shell wrote could point anywhere (another project's repository, ~)."""
        found = self._discover()
        if not self._looked:
            self._first, self._looked = found, True
            self._index = IndexGitlinks(found.git_dir / "index") if found else None
        if found is None:
            return None
        outside = [d for d in found.writable() if not d.is_relative_to(self.root)]
        if outside and found != self._first:
            raise ToolError(f"the repository at {outside[0]} appeared during this session outside the "
                            "workspace; the git tools only use the one the session started in")
        return found

    def nested_pins(self) -> NestedGitPins:
        """What keeps a command from the nested repositories the session's index records
        (gitlink_pins.py); the index is read again (a git run) only when it changed."""
        self.session_repository()
        if self._index is not None:
            self._index.known(self._read_gitlinks)
        return self._pins()

    def _pins(self) -> NestedGitPins:
        """The pins of the gitlinks as last read (none before the repository was looked for)."""
        if self._first is None or self._index is None or not self.sandbox:
            return NestedGitPins()
        return pins(self._first.top, self.root, self._index.links)

    def session_repository(self) -> Repository | None:
        """The repository as the session found it first (looked for now if not yet): no git run
        once it has been looked for."""
        if not self._looked:
            self.repository()
        return self._first

    def _discover(self) -> Repository | None:
        done = self.run("rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir",
                        writable=(), visible=_enclosing_top(self.root), check=False)
        lines = done.out.splitlines()
        if done.code != 0 or len(lines) != 3:
            return None
        common = Path(lines[2]) if Path(lines[2]).is_absolute() else self.root / lines[2]
        return Repository(Path(lines[0]).resolve(), Path(lines[1]).resolve(), common.resolve())

    def run(self, *args: str, writable: tuple[Path, ...], read_only: tuple[Path, ...] = (),
            visible: tuple[Path, ...] = (), env: dict[str, str] | None = None, input: str | None = None,
            check: bool = True, timeout: float = TIMEOUT_S, cwd: Path | None = None,
            checkpoint_refs: bool = False) -> GitResult:
        """`git args` in the workspace (or `cwd`); only `writable` (and what's under it) may change,
        of a git dir only git's own state (refs/clover only with `checkpoint_refs`). A failure with
        `check` raises ToolError with git's own message; so does, always, a run that changed what
        decides which programs git runs, or recorded a nested repository (both undone first)."""
        guard = GitDirGuard(self._git_dirs(writable), checkpoint_refs)
        before = guard.state()
        if self._index is not None:
            self._index.known(self._read_gitlinks)
        nested = self._pins()
        try:
            result = self._run_confined(args, writable=writable, read_only=(*guard.read_only(before), *read_only),
                                        visible=visible, env=env, input=input, timeout=timeout,
                                        cwd=cwd or self.root, nested=nested)
        finally:
            made = nested.planted()
        planted = guard.undo(before)
        added = self._index.added(self._read_gitlinks) if self._index is not None else []
        if added:
            self._unstage(added)
        if planted:
            raise ToolError(f"git {args[0]}: a program it ran changed what decides which programs git runs "
                            f"({', '.join(map(str, planted))}); removed, as git on the host would have run it")
        if made:
            raise ToolError(f"git {args[0]}: a program it ran made a repository in a nested repository's "
                            f"place; {planted_note(made, self.root)}")
        if added:
            raise NestedRepositoryError(added)
        if check and result.code != 0:
            raise ToolError(f"git {args[0]} failed: {(result.err or result.out).strip()}")
        return result

    def _run_confined(self, args: tuple[str, ...], *, writable: tuple[Path, ...], read_only: tuple[Path, ...],
                      visible: tuple[Path, ...], env: dict[str, str] | None, input: str | None, timeout: float,
                      cwd: Path, nested: NestedGitPins | None = None) -> GitResult:
        argv = ["git", *SAFE_CONFIG, *args]
        full_env = {**self._env(), **(env or {})}
        with SocketFilter() as socket_filter:
            if self.sandbox:
                nested = nested or NestedGitPins()
                writable = (*_outermost((self.root, *writable)), *nested.anchors)
                # .clover: settings and logs; the index's nested repositories as they are
                read_only = (*protected_inside(self.root, (".clover",)), *nested.read_only, *read_only)
                argv = confined_argv(argv, cwd=cwd, writable=writable, read_only=read_only,
                                     visible=_outermost(visible), policy=self.policy, socket_filter=socket_filter)
            return self._execute(argv, cwd, full_env, input, timeout, socket_filter.pass_fds)

    def _git_dirs(self, writable: tuple[Path, ...]) -> tuple[Path, ...]:
        """The git dirs a run can write: those it is given, and a `.git` folder in the workspace."""
        return tuple(dict.fromkeys(path.resolve() for path in (self.root / ".git", *writable)
                                   if (path / "HEAD").is_file()))

    def _read_gitlinks(self) -> frozenset[str] | None:
        """The gitlinks of the session's repository's index, read with its git dir read-only."""
        repository = self._first
        if repository is None:
            return None
        done = self._run_confined(("ls-files", "--stage", "-z"), writable=(), read_only=repository.writable(),
                                  visible=repository.visible(), env=None, input=None, timeout=TIMEOUT_S,
                                  cwd=repository.top)
        return gitlinks(done.out) if done.code == 0 else None

    def _unstage(self, paths: list[str]) -> None:
        """Take `paths` out of the session's repository's index (git runs nothing for this)."""
        repository = self._first
        if repository is None:
            return
        guard = GitDirGuard(repository.writable())
        self._run_confined(("update-index", "--force-remove", "-z", "--stdin"), writable=repository.writable(),
                           read_only=guard.read_only(guard.state()), visible=repository.visible(), env=None,
                           input="".join(f"{path}\0" for path in paths), timeout=TIMEOUT_S, cwd=repository.top)

    def _env(self) -> dict[str, str]:
        """No GIT_* from our environment but who commits (the others would point git elsewhere),
        no prompts."""
        env = {k: v for k, v in command_env(self.policy, self.sandbox).items()
               if not k.startswith("GIT_") or k in IDENTITY_ENV}
        return {**env, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}

    def _execute(self, argv: list[str], cwd: Path, env: dict[str, str], input: str | None,
                 timeout: float, pass_fds: tuple[int, ...]) -> GitResult:
        if not self.sandbox:
            return self._communicate(argv, cwd, env, input, timeout, None, pass_fds)
        limit = CommandLimits(self.policy.max_processes, self.policy.memory_mb)
        try:
            result = self._communicate(limit.wrap(argv), cwd, env, input, timeout, limit, pass_fds)
        finally:
            limit.close()
        note = limit.memory_note(result.err)
        return GitResult(result.code, result.out, f"{result.err}\n{note}", result.raw) if note else result

    def _communicate(self, argv: list[str], cwd: Path, env: dict[str, str], input: str | None,
                     timeout: float, limit: CommandLimits | None, pass_fds: tuple[int, ...]) -> GitResult:
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, pass_fds=pass_fds,
                                    stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise ToolError(f"git could not start: {exc.strerror or exc}") from None
        if limit:
            limit.start(proc.pid)
        try:
            raw, raw_err = proc.communicate(None if input is None else input.encode(), timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            raw, raw_err = proc.communicate()
            raw_err += f"\n[git timed out after {timeout:g} s and was killed]".encode()
        err = _text(raw_err)
        if limit and limit.hit(err):
            err += "\n" + limit_note(self.policy.max_processes, killed=limit.killed)
        return GitResult(proc.returncode, _text(raw), err, raw)


def _text(data: bytes) -> str:
    """What a text-mode pipe would have read: UTF-8 with replacements, universal newlines."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _enclosing_top(root: Path) -> tuple[Path, ...]:
    """The nearest folder at or above `root` that holds a `.git`: where discovery will look."""
    for folder in (root, *root.parents):
        if (folder / ".git").exists():
            return (folder,)
    return ()


def _outermost(paths: tuple[Path, ...]) -> tuple[Path, ...]:
    """The paths, without those inside another one of them (one bind covers both)."""
    unique = list(dict.fromkeys(p.resolve() for p in paths))
    return tuple(p for p in unique if not any(p != q and p.is_relative_to(q) for q in unique))

