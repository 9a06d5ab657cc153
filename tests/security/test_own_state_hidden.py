"""Class 8 of issue 41: clover-code's own state is out of the sandbox's reach.

The prompt history (pasted secrets), the errors log, and the shadow checkpoint repositories
of other folders (every file of another project, its untracked `.env.local` included) live in
the user's XDG folders, which the root file system shows read-only. Each attack is run once
unconfined, to show it finds the secret, and once through the real run_shell in the sandbox;
this folder's own checkpoints, whose shadow lies among the others, keep working.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from clover_code.sandbox.bwrap import bwrap_problem
from clover_code.sandbox.gitrun import Git
from clover_code.tools import Registry, ToolContext
from clover_code.tools.shell import TOOLS
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoints import Checkpoints
from clover_code.ui.tui.prompt_history import PromptHistory

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox: {bwrap_problem()}")
SECRET = "s3cr3t-own-state-0123456789"
# Reads every shadow repository's snapshots, the prompt history and the errors log, wherever
# the XDG variables or the home folder put them.
READ_STATE = ('for base in "${XDG_CACHE_HOME:-$HOME/.cache}" "${XDG_STATE_HOME:-$HOME/.local/state}"; do '
              'ls -R "$base/clover-code"; cat "$base"/clover-code/*.jsonl "$base"/clover-code/*.log; done; '
              'for repo in "${XDG_CACHE_HOME:-$HOME/.cache}"/clover-code/shadow/*.git; do '
              'git --git-dir "$repo" log --all -p; done')


@pytest.fixture
def visible(tmp_path: Path) -> Iterator[Path]:
    """A folder outside /tmp (which the sandbox replaces with its own), not hidden: as a
    home folder is."""
    folder = Path(tempfile.mkdtemp(prefix="clover-state-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder)


@pytest.fixture(params=["xdg", "home"])
def user_state(request, visible: Path, monkeypatch) -> Path:
    """The user's folders where XDG_* say, or under the home folder when they say nothing."""
    monkeypatch.setenv("HOME", str(visible / "home"))
    for name in ("STATE", "CACHE", "DATA", "CONFIG"):
        if request.param == "xdg":
            monkeypatch.setenv(f"XDG_{name}_HOME", str(visible / "xdg" / name.lower()))
        else:
            monkeypatch.delenv(f"XDG_{name}_HOME", raising=False)
    return visible


def other_project_checkpointed(visible: Path) -> Path:
    """Another folder (no git repository) after a session there: its shadow repository holds it."""
    other = visible / "other-project"
    other.mkdir()
    (other / ".env.local").write_text(f"DATABASE_PASSWORD={SECRET}\n")
    checkpoints = Checkpoints(other)
    checkpoints.begin_turn()
    checkpoints.ensure()
    checkpoints.live.leave()
    return other


async def shell(root: Path, command: str, sandbox: bool) -> str:
    ctx = ToolContext(Workspace(root), sandbox=sandbox, shell_timeout=60)
    return (await Registry(TOOLS).call("run_shell", {"command": command}, ctx)).output


async def test_history_and_other_folders_checkpoints_are_unreadable(tmp_path: Path, user_state: Path):
    other_project_checkpointed(user_state)
    PromptHistory().add(f"deploy with the key {SECRET}", cwd=str(user_state / "other-project"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert SECRET in await shell(workspace, READ_STATE, sandbox=False)  # the attack finds it unconfined
    confined = await shell(workspace, READ_STATE, sandbox=True)
    assert SECRET not in confined and "other-project" not in confined, confined


async def test_this_folders_checkpoints_still_work_beside_hidden_ones(tmp_path: Path, user_state: Path):
    """Its shadow repository is bound again inside the hidden cache folder: writable for the
    checkpoints' git, while the shadow of another folder beside it stays out of sight."""
    other = other_project_checkpointed(user_state)
    workspace = user_state / "this-project"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("before\n")
    checkpoints = Checkpoints(workspace)
    checkpoints.begin_turn()
    checkpoints.ensure()
    (workspace / "notes.txt").write_text("after\n")
    checkpoints.settle()
    assert "Undid turn 1" in checkpoints.undo()
    assert (workspace / "notes.txt").read_text() == "before\n"
    shadows = sorted((user_state / "xdg" / "cache" if (user_state / "xdg").exists() else
                      user_state / "home" / ".cache") .glob("clover-code/shadow/*.git"))
    mine = next(s for s in shadows if s.name.startswith("this-project-"))
    theirs = next(s for s in shadows if s.name.startswith(other.name))
    git = Git(workspace)
    seen = git.run("--git-dir", str(theirs), "log", "--all", "-p", writable=(mine,), check=False)
    assert seen.code != 0 and SECRET not in seen.out + seen.err
    checkpoints.live.leave()
