"""Class 1 of issue 31: git never runs, on the host, a program the sandbox planted.

Each attack plants its payload through the real sandboxed shell (or, where the shell
cannot reach, as the repository's owner would have it), then drives the git tools and
checkpoints. The payload writes a marker file on the host; a control run of plain git on
the host shows the payload is live, and the marker must not appear through clover-code.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from clover_code.sandbox.bwrap import bwrap_problem
from clover_code.sandbox.gitrun import Git
from clover_code.tools import Registry, ToolContext
from clover_code.tools.git import TOOLS as GIT_TOOLS
from clover_code.tools.shell import TOOLS as SHELL_TOOLS
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoints import Checkpoints

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox: {bwrap_problem()}")
REGISTRY = Registry([*GIT_TOOLS, *SHELL_TOOLS])
IDENTITY = "git config user.email a@b.invalid && git config user.name attacker"


def context(root: Path, tmp_path: Path) -> ToolContext:
    """As clover_code/wiring/assemble.py builds it: one git runner for the session, shared with checkpoints."""
    git = Git(root, sandbox=True)
    git.repository()  # the repository the session starts in (None: a plain folder)
    return ToolContext(Workspace(root), sandbox=True, shell_timeout=30, git=git,
                       checkpoints=Checkpoints(root, cache_dir=tmp_path / "cache", git=git))


async def shell(ctx: ToolContext, command: str) -> str:
    result = await REGISTRY.call("run_shell", {"command": command}, ctx)
    assert result.ok, result.output
    return result.output


def host_git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "host-marker"


async def test_hook_and_filter_in_a_git_dir_the_shell_created(tmp_path: Path, marker: Path):
    ws = tmp_path / "plain"
    ws.mkdir()
    (ws / "notes.txt").write_text("a folder with no repository\n")
    ctx = context(ws, tmp_path)
    await shell(ctx, f"git init -q && {IDENTITY} && git config filter.x.clean 'touch {marker}; cat' && "
                     "echo '* filter=x' > .gitattributes && "
                     f"printf '#!/bin/sh\\ntouch {marker}\\nexit 0\\n' > .git/hooks/pre-commit && "
                     "chmod +x .git/hooks/pre-commit")
    for name, args in [("git_status", {}), ("git_diff", {}), ("git_commit", {"message": "x"})]:
        result = await REGISTRY.call(name, args, ctx)
        assert result.ok, result.output
    ctx.checkpoints.begin_turn()
    ctx.checkpoints.ensure()
    next_session = Checkpoints(ws, cache_dir=tmp_path / "cache")  # the next run finds the planted .git
    next_session.ensure()
    assert not marker.exists()
    (ws / "notes.txt").write_text("changed\n")
    host_git(ws, "add", "-A")  # control: the same repository, git on the host
    assert marker.exists()


async def test_filter_of_a_nested_repository(git_repo: Path, tmp_path: Path, marker: Path):
    ctx = context(git_repo, tmp_path)
    await shell(ctx, f"mkdir sub && cd sub && git init -q && {IDENTITY} && echo a > a.txt && git add a.txt && "
                     f"git commit -qm a && git config filter.x.clean 'touch {marker}; cat' && "
                     "echo '* filter=x' > .git/info/attributes")
    recorded = await REGISTRY.call("git_commit", {"message": "record sub"}, ctx)
    assert recorded.ok, recorded.output
    for stamp in ("2000-01-01", "2001-01-01"):
        await shell(ctx, f"touch -d {stamp} sub/a.txt")  # stat-dirty: git re-reads it through the filter
        for name in ("git_status", "git_diff"):
            assert (await REGISTRY.call(name, {}, ctx)).ok
        ctx.checkpoints.begin_turn()
        ctx.checkpoints.ensure()
    assert not marker.exists()
    host_git(git_repo, "status")  # control
    assert marker.exists()


async def test_hooks_in_the_work_tree_run_contained(git_repo: Path, tmp_path: Path, marker: Path):
    """The owner keeps hooks in the tree (core.hooksPath, as husky does): they still run on
    git_commit, inside the sandbox, even after the shell rewrote them."""
    (git_repo / ".githooks").mkdir()
    hook = git_repo / ".githooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho ran > hook-ran.txt\n")
    hook.chmod(0o755)
    host_git(git_repo, "config", "core.hooksPath", ".githooks")
    ctx = context(git_repo, tmp_path)
    (git_repo / "a.txt").write_text("a\n")
    first = await REGISTRY.call("git_commit", {"message": "with the owner's hook"}, ctx)
    assert first.ok and (git_repo / "hook-ran.txt").exists()  # the supported way still works

    await shell(ctx, f"printf '#!/bin/sh\\ntouch {marker}\\necho again > hook-ran.txt\\n"
                     "git config core.fsmonitor evil 2>/dev/null\\ntrue\\n' > .githooks/pre-commit")
    (git_repo / "b.txt").write_text("b\n")
    second = await REGISTRY.call("git_commit", {"message": "hook rewritten by the shell"}, ctx)
    assert second.ok, second.output
    assert (git_repo / "hook-ran.txt").read_text() == "again\n"  # it ran...
    assert not marker.exists()  # ...contained
    config = subprocess.run(["git", "config", "--get", "core.fsmonitor"], cwd=git_repo, capture_output=True)
    assert config.stdout == b""  # and could not plant a program for the owner's next git


async def test_shell_cannot_write_the_git_dir_or_settings(git_repo: Path, tmp_path: Path, marker: Path):
    ctx = context(git_repo, tmp_path)
    result = await REGISTRY.call("run_shell", {"command": f"git config core.fsmonitor 'touch {marker}'"}, ctx)
    assert (not result.ok and "Read-only" in result.output) or "could not lock" in result.output
    (git_repo / ".clover").mkdir()
    result = await REGISTRY.call("run_shell", {"command": "echo 'engine = \"scripted:x\"' > .clover/config.toml"},
                                 ctx)
    assert not result.ok and not (git_repo / ".clover" / "config.toml").exists()


async def test_git_file_pointing_outside_is_refused(tmp_path: Path):
    home = Path(tempfile.mkdtemp(prefix="clover-sec-", dir=Path.home()))  # outside the private /tmp
    other = home / "other"
    other.mkdir()
    host_git(other, "init", "-q")
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = context(ws, tmp_path)  # no repository at the start
    await shell(ctx, f"echo 'gitdir: {other / '.git'}' > .git")
    refused = await REGISTRY.call("git_status", {}, ctx)
    shutil.rmtree(home)
    assert not refused.ok and "appeared during this session" in refused.output


async def test_hooks_get_no_secrets(git_repo: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-4242-very-secret")
    hook = git_repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nenv > seen-env.txt\n")
    hook.chmod(0o755)
    ctx = context(git_repo, tmp_path)
    (git_repo / "a.txt").write_text("a\n")
    assert (await REGISTRY.call("git_commit", {"message": "x"}, ctx)).ok
    seen = (git_repo / "seen-env.txt").read_text()
    assert "PATH=" in seen and "tok-4242-very-secret" not in seen
