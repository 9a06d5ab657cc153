"""Issue 47: GitPython starts no git, and runs no hook, outside the sandbox.

A repository is planted as the sandboxed shell would plant it: a pre-commit hook, a clean
filter and an fsmonitor program, each writing a marker on the host. Then GitPython is driven
every way clover-code uses it (and the ways it must not be usable): the marker must not appear;
a control run of plain git on the host shows the payload is live.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clover_code.sandbox.bwrap import bwrap_problem
from clover_code.sandbox.gitpython import HostGitClosed, SandboxedRepo, diff_trees, git
from clover_code.sandbox.gitrun import Git
from clover_code.tools import Registry, ToolContext, ToolError
from clover_code.tools.git import TOOLS as GIT_TOOLS
from clover_code.tools.shell import TOOLS as SHELL_TOOLS
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoints import Checkpoints

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox: {bwrap_problem()}")
REGISTRY = Registry([*GIT_TOOLS, *SHELL_TOOLS])


def payload(marker: Path) -> str:
    return f"#!/bin/sh\ntouch {marker}\nexit 0\n"


async def planted(ws: Path, marker: Path, tmp_path: Path) -> ToolContext:
    """A repository whose hook, filter and fsmonitor each touch `marker`, made by the sandboxed shell."""
    ws.mkdir()
    (ws / "notes.txt").write_text("first\n")
    git_runner = Git(ws, sandbox=True)
    ctx = ToolContext(Workspace(ws), sandbox=True, shell_timeout=30, git=git_runner,
                      checkpoints=Checkpoints(ws, cache_dir=tmp_path / "cache", git=git_runner))
    script = payload(marker).replace("\n", "\\n")
    result = await REGISTRY.call("run_shell", {"command": (
        "git init -q && git config user.email a@b.invalid && git config user.name attacker && "
        f"printf '{script}' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && "
        f"printf '{script}' > .git/monitor && chmod +x .git/monitor && "
        f"git config core.fsmonitor \"$PWD/.git/monitor\" && git config filter.x.clean 'touch {marker}; cat' && "
        "echo '* filter=x' > .gitattributes")}, ctx)
    assert result.ok, result.output
    git_runner.repository()
    return ctx


async def test_gitpython_runs_only_the_sandboxed_git(tmp_path: Path):
    ws, marker = tmp_path / "ws", tmp_path / "host-marker"
    ctx = await planted(ws, marker, tmp_path)
    runner = ctx.git
    assert runner is not None
    where = runner.repository()
    assert where is not None
    repo = SandboxedRepo(runner, where)
    assert repo.is_dirty(untracked_files=True)
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "first")  # the hook runs, inside the sandbox
    (ws / "notes.txt").write_text("second\n")
    repo.git.commit("-q", "-a", "-m", "second")
    assert repo.head.commit.message == "second\n"  # objects read by the sandboxed cat-file
    assert [(d.change_type, d.b_path) for d in diff_trees(repo, "HEAD~1", "HEAD")] == [("M", "notes.txt")]
    with pytest.raises(HostGitClosed):
        repo.index.commit("GitPython's own commit runs hooks itself")
    with pytest.raises(ToolError, match=r"^git rev-parse failed: fatal: "):  # a message, for the model
        repo.git.rev_parse("--verify", "no-such-ref^{commit}")
    for name, args in [("git_status", {}), ("git_diff", {}), ("git_log", {}), ("git_commit", {"message": "x"})]:
        await REGISTRY.call(name, args, ctx)
    checkpoints = ctx.checkpoints
    assert checkpoints is not None
    checkpoints.begin_turn()
    checkpoints.ensure()
    (ws / "notes.txt").write_text("third\n")
    checkpoints.settle()
    assert "third" in checkpoints.diff_since_start()
    checkpoints.undo()
    assert not marker.exists()
    subprocess.run(["git", "status"], cwd=ws, capture_output=True, check=False)  # control: host git
    assert marker.exists()


async def test_gitpython_outside_the_sandbox_starts_nothing(tmp_path: Path):
    ws, marker = tmp_path / "ws", tmp_path / "host-marker"
    await planted(ws, marker, tmp_path)
    plain = git.Repo(ws)  # reading the git dir and its config: files only
    refused = [lambda: plain.git.status(), lambda: plain.is_dirty(), lambda: plain.git.add("-A"),
               lambda: plain.index.commit("x"), lambda: git.Repo.init(tmp_path / "other"),
               lambda: git.Git(str(ws)).version()]
    for call in refused:
        with pytest.raises(HostGitClosed):
            call()
    assert not marker.exists()


def test_importing_gitpython_runs_no_host_git(tmp_path: Path):
    """GitPython checks its git at import; a `git` first on PATH would run in the workspace."""
    marker, bin_dir = tmp_path / "host-marker", tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(payload(marker))
    (bin_dir / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", "import clover_code.sandbox.gitpython"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    subprocess.run(["git", "version"], env=env, capture_output=True, check=False)  # control: that git is first
    assert marker.exists()
