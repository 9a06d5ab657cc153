"""Turn checkpoints and undo, on real repositories, real files and the real run_shell tool."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from clover_code.sandbox.bwrap import bwrap_problem
from clover_code.sandbox.gitrun import Git
from clover_code.tools import Registry, ToolContext, ToolError
from clover_code.tools.git import Checkpoints
from clover_code.tools.shell import TOOLS as SHELL_TOOLS
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoint_ledger import RefLedger
from clover_code.tools.workspace.checkpoints import CheckpointError

SANDBOX = bwrap_problem() is None  # the real sandbox where this machine has one


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def tree_state(root: Path) -> dict[str, tuple[bytes, bool]]:
    """Every file under root except .git: content and executable bit."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            path = Path(dirpath, name)
            state[path.relative_to(root).as_posix()] = (path.read_bytes(), os.access(path, os.X_OK))
    return state


def user_git_state(repo: Path) -> dict[str, str]:
    return {
        "head": git(repo, "rev-parse", "HEAD"),
        "branches": git(repo, "for-each-ref", "refs/heads", "refs/tags"),
        "stash": git(repo, "stash", "list"),
        "index": git(repo, "ls-files", "-s"),
        "staged": git(repo, "diff", "--cached"),
    }


async def agent_turn(root: Path, checkpoints: Checkpoints) -> None:
    """What an agent turn does: an edit through the workspace, then shell commands."""
    ws = Workspace(root)
    ctx = ToolContext(ws, sandbox=SANDBOX, checkpoints=checkpoints)
    checkpoints.ensure()  # the agent loop calls this before the turn's first change
    target = ws.resolve_for_write("src/app.py")
    ws.atomic_write(target, b"print('edited by the agent')\n")
    (root / "notes.md").write_text("created, untracked\n")
    registry = Registry(SHELL_TOOLS)
    command = ("rm docs/guide.md && mkdir -p gen && echo x > gen/new.txt && chmod +x run.sh "
               "&& echo more >> README.md")
    result = await registry.call("run_shell", {"command": command}, ctx)
    assert result.ok, result.output


@pytest.fixture
def project(git_repo: Path) -> Path:
    (git_repo / "src").mkdir()
    (git_repo / "src/app.py").write_text("print('hello')\n")
    (git_repo / "docs").mkdir()
    (git_repo / "docs/guide.md").write_text("# Guide\n")
    (git_repo / "run.sh").write_text("#!/bin/sh\necho run\n")
    (git_repo / ".gitignore").write_text("build/\n")
    git(git_repo, "add", "-A")
    git(git_repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "project")
    return git_repo


async def test_undo_restores_edits_new_files_and_shell_rm(project: Path, tmp_path: Path):
    # Uncommitted user work before the session: a modified file and an untracked one.
    (project / "src/app.py").write_text("print('user work in progress')\n")
    (project / "scratch.txt").write_text("untracked user file\n")
    before = tree_state(project)
    checkpoints = Checkpoints(project, cache_dir=tmp_path / "cache")
    checkpoints.begin_turn()
    await agent_turn(project, checkpoints)
    assert tree_state(project) != before
    summary = checkpoints.undo()
    assert tree_state(project) == before
    assert "Undid turn 1" in summary
    assert "docs/guide.md" in summary and "notes.md" in summary and "src/app.py" in summary
    assert not (project / "gen").exists()  # emptied directories go too


async def test_user_index_stash_and_branches_untouched(project: Path, tmp_path: Path):
    (project / "README.md").write_text("stashed change\n")
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "stash", "-q")
    git(project, "branch", "feature")
    (project / "src/app.py").write_text("staged change\n")
    git(project, "add", "src/app.py")
    (project / "src/app.py").write_text("staged change, then edited\n")
    before = user_git_state(project)
    checkpoints = Checkpoints(project, cache_dir=tmp_path / "cache")
    checkpoints.begin_turn()
    await agent_turn(project, checkpoints)
    assert checkpoints.diff_since_start()
    checkpoints.undo()
    assert user_git_state(project) == before
    assert (project / "src/app.py").read_text() == "staged change, then edited\n"
    refs = git(project, "for-each-ref", "--format=%(refname)", "refs/clover").split()
    assert [ref.rsplit("/", 1)[1] for ref in refs] == ["turn-0"]  # one checkpoint (where kept from: written down)
    assert not (tmp_path / "cache").exists()  # a real repository needs no shadow


async def test_not_a_git_repository_uses_a_shadow(tmp_path: Path):
    plain = tmp_path / "plain"
    (plain / "src").mkdir(parents=True)
    (plain / "src/app.py").write_text("print('hello')\n")
    (plain / "docs").mkdir()
    (plain / "docs/guide.md").write_text("# Guide\n")
    (plain / "run.sh").write_text("#!/bin/sh\n")
    (plain / "README.md").write_text("hello\n")
    before = tree_state(plain)
    checkpoints = Checkpoints(plain, cache_dir=tmp_path / "cache")
    checkpoints.begin_turn()
    await agent_turn(plain, checkpoints)
    assert "+print('edited by the agent')" in checkpoints.diff_since_start()
    checkpoints.undo()
    assert tree_state(plain) == before
    assert not (plain / ".git").exists() and not (plain / ".clover").exists()
    assert list((tmp_path / "cache" / "shadow").iterdir())


def test_undo_goes_back_one_turn_at_a_time(project: Path, tmp_path: Path):
    checkpoints = Checkpoints(project, cache_dir=tmp_path / "cache")
    assert "Nothing to undo" in checkpoints.undo()
    states = []
    for turn in range(3):
        checkpoints.begin_turn()
        states.append(tree_state(project))
        checkpoints.ensure()
        checkpoints.ensure()  # idempotent within the turn
        (project / f"turn{turn}.txt").write_text(f"{turn}\n")
    for turn in reversed(range(3)):
        assert f"Undid turn {turn + 1}" in checkpoints.undo()
        assert tree_state(project) == states[turn]
    assert "Nothing left to undo" in checkpoints.undo()


def test_turn_without_changes_is_skipped_by_undo(project: Path, tmp_path: Path):
    checkpoints = Checkpoints(project, cache_dir=tmp_path / "cache")
    checkpoints.begin_turn()
    checkpoints.ensure()
    (project / "a.txt").write_text("a\n")
    checkpoints.begin_turn()
    checkpoints.ensure()  # e.g. a shell command that changed nothing
    assert "Undid turn 1" in checkpoints.undo()
    assert not (project / "a.txt").exists()


def test_ignored_files_are_left_alone(project: Path, tmp_path: Path):
    (project / "build").mkdir()
    (project / "build/out.bin").write_bytes(b"old build")
    checkpoints = Checkpoints(project, cache_dir=tmp_path / "cache")
    checkpoints.begin_turn()
    checkpoints.ensure()
    (project / "build/out.bin").write_bytes(b"new build")
    (project / "build/more.bin").write_bytes(b"more")
    (project / "src/app.py").write_text("changed\n")
    checkpoints.undo()
    assert (project / "src/app.py").read_text() == "print('hello')\n"
    assert (project / "build/out.bin").read_bytes() == b"new build" and (project / "build/more.bin").exists()


def test_workspace_in_a_subfolder_does_not_touch_the_rest_of_the_repo(project: Path, tmp_path: Path):
    checkpoints = Checkpoints(project / "src", cache_dir=tmp_path / "cache")
    checkpoints.begin_turn()
    checkpoints.ensure()
    (project / "src/app.py").write_text("agent change\n")
    (project / "README.md").write_text("user edits outside the workspace\n")
    checkpoints.undo()
    assert (project / "src/app.py").read_text() == "print('hello')\n"
    assert (project / "README.md").read_text() == "user edits outside the workspace\n"


def test_old_sessions_refs_are_pruned(project: Path, tmp_path: Path):
    tree = git(project, "write-tree").strip()
    when = "2001-01-01T00:00:00"
    old_env = {**os.environ, "GIT_COMMITTER_DATE": when, "GIT_AUTHOR_DATE": when, "GIT_AUTHOR_NAME": "t",
               "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    old = subprocess.run(["git", "commit-tree", tree, "-m", "old"], cwd=project, env=old_env, check=True,
                         capture_output=True, text=True).stdout.strip()
    git(project, "update-ref", "refs/clover/checkpoints/2001-old/1", old)
    checkpoints = Checkpoints(project, cache_dir=tmp_path / "cache")
    checkpoints.begin_turn()
    checkpoints.ensure()
    refs = git(project, "for-each-ref", "--format=%(refname)", "refs/clover")
    assert "2001-old" not in refs and [ref.rsplit("/", 1)[1] for ref in refs.split()] == ["turn-0"]


class _NoSandbox(Git):
    """git as a machine without bubblewrap runs it: refused."""

    def run(self, *args, **kwargs):
        raise ToolError("git refused: bubblewrap (bwrap) is not installed")


def test_without_git_a_turn_still_begins_and_a_rewind_still_answers(project: Path, tmp_path: Path):
    checkpoints = Checkpoints(project, cache_dir=tmp_path / "cache", git=_NoSandbox(project))
    checkpoints.continue_session("20260101-000000-abcdef", turns=1)
    checkpoints.begin_turn(1)  # the turn goes on; its changes will say they could not be checkpointed
    with pytest.raises(ToolError):
        checkpoints.ensure()
    assert not checkpoints.files_kept(0) and not checkpoints.files_kept(1)  # nothing can be kept: none is said to be
    assert "Files not restored" in checkpoints.rewind(0) and "Files not restored" in checkpoints.rewind(1)


async def test_diff_after_a_resume_covers_the_earlier_runs_of_the_session(project: Path, tmp_path: Path):
    session = "20260101-000000-abcdef"
    first = Checkpoints(project, cache_dir=tmp_path / "cache")
    first.continue_session(session)
    first.begin_turn(0)
    await agent_turn(project, first)
    earlier = first.diff_since_start()
    assert "+print('edited by the agent')" in earlier
    resumed = Checkpoints(project, cache_dir=tmp_path / "cache")
    resumed.continue_session(session, turns=1)
    assert resumed.diff_since_start() == earlier
    resumed.begin_turn(1)
    resumed.ensure()
    (project / "src/app.py").write_text("print('edited again')\n")
    resumed.settle()
    both = resumed.diff_since_start()
    assert "-print('hello')" in both and "+print('edited again')" in both and "notes.md" in both


def _turn(checkpoints: Checkpoints, project: Path, turn: int, text: str) -> None:
    checkpoints.begin_turn(turn)
    checkpoints.ensure()
    (project / "README.md").write_text(text)
    checkpoints.settle()


def test_a_redo_still_restores_files_after_a_resume_that_sent_a_new_message(project: Path, tmp_path: Path):
    """Rewind, quit, resume with that rewind still redoable, send a message (which ends it),
    rewind again, resume again: /redo must bring back the files of the second rewind."""
    session, cache = "20260101-000000-abcdef", tmp_path / "cache"
    first = Checkpoints(project, cache_dir=cache)
    first.continue_session(session)
    for turn, text in enumerate(("v1", "v2", "v3")):
        _turn(first, project, turn, text)
    first.rewind(1)  # the conversation keeps turn 0; turns 1-2 can be redone
    assert (project / "README.md").read_text() == "v1"
    second = Checkpoints(project, cache_dir=cache)
    second.continue_session(session, turns=1, redo=[(1, 3)])
    _turn(second, project, 1, "new")  # a new message: the earlier rewind can no longer be redone
    second.rewind(1)
    assert (project / "README.md").read_text() == "v1"
    third = Checkpoints(project, cache_dir=cache)
    third.continue_session(session, turns=1, redo=[(1, 2)])
    assert "README.md" in third.redo()
    assert (project / "README.md").read_text() == "new"


def test_a_redo_that_fails_leaves_the_checkpoints_as_they_were(project: Path, tmp_path: Path, monkeypatch):
    checkpoints = Checkpoints(project, cache_dir=tmp_path / "cache")
    for turn, text in enumerate(("v1", "v2")):
        _turn(checkpoints, project, turn, text)
    checkpoints.rewind(1)

    def broken(*args, **kwargs):
        raise CheckpointError("checkpoint failed: disk full")

    with monkeypatch.context() as patch:
        patch.setattr(checkpoints, "_restore", broken)
        with pytest.raises(CheckpointError):
            checkpoints.redo()
    assert "README.md" in checkpoints.redo()  # the same redo, still there, works once the failure is gone
    assert (project / "README.md").read_text() == "v2"


def test_a_rewind_never_writes_or_removes_an_ignored_file(project: Path, tmp_path: Path):
    """Even a checkpoint that holds an ignored, untracked file (`.env`) leaves it as it is; a
    tracked file that matches .gitignore is the user's to track and comes back."""
    (project / ".gitignore").write_text("build/\n.env\n*.local\n")
    (project / "settings.local").write_text("tracked v0\n")
    git(project, "add", "-f", ".gitignore", "settings.local")
    git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "settings")
    (project / ".env").write_text("SECRET=the user's\n")
    first = Checkpoints(project, cache_dir=tmp_path / "cache")
    first.continue_session("20260101-000000-abcdef", turns=0)
    first.begin_turn(0)
    first.ensure()
    (project / "settings.local").write_text("tracked v1\n")
    (project / "src/app.py").write_text("changed\n")
    first.settle()
    # A checkpoint whose tree holds the .env, written down as this session's own.
    turn = git(project, "rev-parse", "refs/clover/checkpoints/20260101-000000-abcdef/turn-0").strip()
    index = tmp_path / "forge-index"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    subprocess.run(["git", "read-tree", f"{turn}^{{tree}}"], cwd=project, env=env, check=True)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=project, input="SECRET=planted\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "update-index", "--add", "--cacheinfo", f"100644,{blob},.env"], cwd=project, env=env,
                   check=True)
    tree = subprocess.run(["git", "write-tree"], cwd=project, env=env, capture_output=True, text=True,
                          check=True).stdout.strip()
    forged = git(project, "-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", tree, "-m", "x").strip()
    git(project, "update-ref", "refs/clover/checkpoints/20260101-000000-abcdef/turn-0", forged)
    ledger = RefLedger(project / ".git")
    ledger.write("20260101-000000-abcdef", {**ledger.read("20260101-000000-abcdef"), "turn-0": forged},
                 ledger.notes("20260101-000000-abcdef"))

    resumed = Checkpoints(project, cache_dir=tmp_path / "cache")
    resumed.continue_session("20260101-000000-abcdef", turns=1)
    summary = resumed.rewind(0)
    assert (project / "src/app.py").read_text() == "print('hello')\n"
    assert (project / "settings.local").read_text() == "tracked v0\n" and "settings.local" in summary
    assert (project / ".env").read_text() == "SECRET=the user's\n" and ".env" not in summary
