"""The one way clover-code runs git on a workspace: inside the same sandbox as the shell.

Git executes programs that repositories configure: hooks (also from a work-tree
`core.hooksPath`, husky, lefthook), clean/smudge filters, fsmonitor, the configs of nested
repositories it recurses into. The shell can write all of those (a new `.git` in a folder
that had none, a `sub/.git` with a filter, the hook scripts in the tree), so a git run on
the host would run what the sandbox planted. Turning each feature off is a denylist that
misses the next one; so every git command runs sandboxed instead (docs/security.md):
hooks and filters a user relies on still run, contained, with no network, no secrets and
nothing writable but the work tree and the git dir, whose config files and hooks stay
read-only, so nothing run inside can plant a program for the user's next git on the host.

With the sandbox turned off (the user accepts unconfined commands) git runs bare.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from clover_code.errors import ToolError
from clover_code.sandbox.bwrap import command_env, confined_argv, protected_inside
from clover_code.sandbox.limits import CommandLimits, kill_group, limit_note
from clover_code.sandbox.policy import SandboxPolicy
from clover_code.sandbox.seccomp import SocketFilter

# No fsmonitor daemon, no colour or quoting in what the model reads; commits are unsigned,
# as the sandbox hides the signing keys.
SAFE_CONFIG = ("-c", "core.fsmonitor=false", "-c", "color.ui=false", "-c", "core.quotePath=false",
               "-c", "commit.gpgSign=false")
TIMEOUT_S = 300.0  # a commit's hooks may run a test suite


@dataclass(frozen=True)
class GitResult:
    code: int
    out: str
    err: str


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

    def read_only(self) -> tuple[Path, ...]:
        """Config files and hooks: what decides which programs git runs."""
        found = [self.common_dir / "config", self.git_dir / "config.worktree", self.common_dir / "hooks"]
        modules = self.common_dir / "modules"
        if modules.is_dir():
            found += [*modules.rglob("config"), *modules.rglob("hooks")]
        return tuple(dict.fromkeys(p for p in found if p.exists()))


class Git:
    """Runs git in one workspace (`root`), sandboxed unless `sandbox` is off."""

    def __init__(self, root: Path, *, sandbox: bool = True, policy: SandboxPolicy | None = None):
        self.root = Path(root).resolve()
        self.sandbox = sandbox
        self.policy = policy or SandboxPolicy()
        self._first: Repository | None = None  # the repository as first found (session start)
        self._looked = False  # whether _first has been looked for

    def repository(self) -> Repository | None:
        """The repository holding the workspace now, or None.

        A git dir outside the workspace is only used when it is the one first found: a `.git`
        file the shell wrote could point anywhere (another project's repository, ~)."""
        found = self._discover()
        if not self._looked:
            self._first, self._looked = found, True
        if found is None:
            return None
        outside = [d for d in found.writable() if not d.is_relative_to(self.root)]
        if outside and found != self._first:
            raise ToolError(f"the repository at {outside[0]} appeared during this session outside the "
                            "workspace; the git tools only use the one the session started in")
        return found

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
            check: bool = True, timeout: float = TIMEOUT_S, cwd: Path | None = None) -> GitResult:
        """`git args` in the workspace (or `cwd`); only `writable` (and what's under it) may change.
        A failure with `check` raises ToolError with git's own message."""
        cwd = cwd or self.root
        argv = ["git", *SAFE_CONFIG, *args]
        full_env = {**self._env(), **(env or {})}
        with SocketFilter() as socket_filter:
            if self.sandbox:
                writable = _outermost((self.root, *writable))
                read_only = (*protected_inside(self.root, (".clover",)), *read_only)  # settings, logs
                argv = confined_argv(argv, cwd=cwd, writable=writable, read_only=read_only,
                                     visible=_outermost(visible), policy=self.policy, socket_filter=socket_filter)
            result = self._execute(argv, cwd, full_env, input, timeout, socket_filter.pass_fds)
        if check and result.code != 0:
            raise ToolError(f"git {args[0]} failed: {(result.err or result.out).strip()}")
        return result

    def _env(self) -> dict[str, str]:
        """No GIT_* from our environment (they would point git elsewhere), no prompts."""
        env = {k: v for k, v in command_env(self.policy, self.sandbox).items() if not k.startswith("GIT_")}
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
        return GitResult(result.code, result.out, f"{result.err}\n{note}") if note else result

    def _communicate(self, argv: list[str], cwd: Path, env: dict[str, str], input: str | None,
                     timeout: float, limit: CommandLimits | None, pass_fds: tuple[int, ...]) -> GitResult:
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, text=True, errors="replace", pass_fds=pass_fds,
                                    stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        except OSError as exc:
            raise ToolError(f"git could not start: {exc.strerror or exc}") from None
        if limit:
            limit.start(proc.pid)
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            out, err = proc.communicate()
            err += f"\n[git timed out after {timeout:g} s and was killed]"
        if limit and limit.hit(err):
            err += "\n" + limit_note(self.policy.max_processes, killed=limit.killed)
        return GitResult(proc.returncode, out, err)


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

