"""How run_shell starts a command: inside bubblewrap, or bare when the user chose so.

The sandbox: the whole root file system read-only (so system tools and the venv's
python, pytest and rg work), the workspace writable, a private /tmp, no network
(an empty network namespace: not even the host's loopback), its own PID namespace
(when its first process ends, the kernel kills every process left inside), no
capabilities (root inside could otherwise remount / read-write), and it dies with
its parent.

The workspace's .git stays read-only, as in Codex CLI's sandbox: git tools and
checkpoints run outside the sandbox, so a command that could plant a hook or a
`core.fsmonitor` program in .git/ would escape through them. Commands can still read
the repository (git status, log, diff); changing it goes through the git tools.
.clover/ (project settings, read by the next session) stays read-only for the same reason.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from clover_code.tools import ToolError

SHELL = "/bin/bash" if Path("/bin/bash").exists() else "/bin/sh"
PROTECTED = (".git", ".clover")  # inside the workspace, yet read-only in the sandbox


def bwrap_argv(bwrap: str, root: Path, cwd: Path, command: str) -> list[str]:
    """The bwrap command line that runs `command` in `cwd` with only `root` writable."""
    return [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",  # before the workspace bind: a workspace under /tmp stays visible
        "--bind", str(root), str(root),
        *_readonly_inside(root, PROTECTED),
        "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
        "--cap-drop", "ALL",
        "--die-with-parent",
        "--chdir", str(cwd),
        "--", SHELL, "-c", command,
    ]


def _readonly_inside(root: Path, names: tuple[str, ...]) -> list[str]:
    """ro-bind each existing root/<name> (a symlink: its target, when that is inside the root)."""
    argv: list[str] = []
    for name in names:
        path = root / name
        if not path.exists():
            continue  # never create mount points in the user's folder
        real = path.resolve()
        if real == root or not real.is_relative_to(root):
            continue  # outside the workspace: read-only already
        argv += ["--ro-bind", str(real), str(real)]
    return argv


def bare_argv(command: str) -> list[str]:
    return [SHELL, "-c", command]


@functools.cache
def bwrap_problem() -> str | None:
    """None when bubblewrap can build a sandbox here; else why not (asked once per process)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    probe = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
             "--unshare-pid", "--cap-drop", "ALL", "--die-with-parent", "--", "/bin/true"]
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not start: {exc}"
    if done.returncode != 0:
        return f"bubblewrap cannot build a sandbox here: {done.stderr.strip() or done.returncode}"
    return None


def sandbox_argv(root: Path, cwd: Path, command: str, sandbox: bool) -> list[str]:
    """argv for the command; refuses (ToolError) when a sandbox is wanted but impossible."""
    if not sandbox:
        return bare_argv(command)
    problem = bwrap_problem()
    if problem is not None:
        raise ToolError(
            f"run_shell refused: {problem}, and commands only run inside its sandbox. "
            "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or start clover-code "
            "with the sandbox turned off if you accept commands running unconfined."
        )
    return bwrap_argv(shutil.which("bwrap") or "bwrap", root, cwd, command)


def shell_env(sandbox: bool) -> dict[str, str]:
    """The command's environment: ours, with the running venv's tools on PATH."""
    env = dict(os.environ)
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
