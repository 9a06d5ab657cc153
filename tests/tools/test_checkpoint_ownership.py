"""Two sessions in one repository (issue 34): each undoes and diffs only its own changes,
leaves the other's edits alone, and knows the other is there."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from clover_code.tools.workspace.checkpoints import Checkpoints
from clover_code.tools.workspace.live_sessions import LiveSessions


def session(repo: Path, tmp_path: Path) -> Checkpoints:
    return Checkpoints(repo, cache_dir=tmp_path / "cache")


def change(checkpoints: Checkpoints, path: Path, text: str | None) -> None:
    """One change as the agent makes it: checkpoint before the turn's first, settle after."""
    checkpoints.ensure()
    if text is None:
        path.unlink()
    else:
        path.write_text(text)
    checkpoints.settle()


def test_undo_puts_back_only_this_sessions_files(git_repo: Path, tmp_path: Path):
    (git_repo / "mine.py").write_text("mine v0\n")
    (git_repo / "theirs.py").write_text("theirs v0\n")
    first, second = session(git_repo, tmp_path), session(git_repo, tmp_path)
    first.begin_turn()
    change(first, git_repo / "mine.py", "mine v1\n")
    change(first, git_repo / "created.py", "new\n")
    second.begin_turn()
    change(second, git_repo / "theirs.py", "theirs v1\n")
    change(second, git_repo / "theirs_new.py", "theirs new\n")
    (git_repo / "by_hand.txt").write_text("typed in an editor\n")

    summary = first.undo()

    assert (git_repo / "mine.py").read_text() == "mine v0\n" and not (git_repo / "created.py").exists()
    assert (git_repo / "theirs.py").read_text() == "theirs v1\n"
    assert (git_repo / "theirs_new.py").read_text() == "theirs new\n"
    assert (git_repo / "by_hand.txt").read_text() == "typed in an editor\n"
    assert "restored: mine.py" in summary and "removed (created since): created.py" in summary
    assert "Another clover-code session is at work in this folder" in summary
    second.undo()
    assert (git_repo / "theirs.py").read_text() == "theirs v0\n" and not (git_repo / "theirs_new.py").exists()
    assert (git_repo / "mine.py").read_text() == "mine v0\n"


def test_a_file_changed_since_by_someone_else_is_left_and_named(git_repo: Path, tmp_path: Path):
    (git_repo / "shared.py").write_text("v0\n")
    (git_repo / "mine.py").write_text("mine v0\n")
    first, second = session(git_repo, tmp_path), session(git_repo, tmp_path)
    first.begin_turn()
    change(first, git_repo / "shared.py", "first's edit\n")
    change(first, git_repo / "mine.py", "mine v1\n")
    second.begin_turn()
    change(second, git_repo / "shared.py", "second's edit on top\n")

    summary = first.undo()

    assert (git_repo / "shared.py").read_text() == "second's edit on top\n"  # not clobbered
    assert (git_repo / "mine.py").read_text() == "mine v0\n"
    assert "1 left as they are (someone else changed them too): shared.py" in summary


def test_rewind_leaves_the_other_sessions_files_too(git_repo: Path, tmp_path: Path):
    (git_repo / "mine.py").write_text("mine v0\n")
    first, second = session(git_repo, tmp_path), session(git_repo, tmp_path)
    first.begin_turn(0)
    change(first, git_repo / "mine.py", "mine v1\n")
    second.begin_turn(0)
    change(second, git_repo / "theirs.py", "theirs\n")
    first.begin_turn(1)
    change(first, git_repo / "mine.py", "mine v2\n")

    first.rewind(0)

    assert (git_repo / "mine.py").read_text() == "mine v0\n"
    assert (git_repo / "theirs.py").read_text() == "theirs\n"


def test_diff_shows_only_this_sessions_files(git_repo: Path, tmp_path: Path):
    first, second = session(git_repo, tmp_path), session(git_repo, tmp_path)
    first.begin_turn()
    change(first, git_repo / "mine.py", "mine\n")
    second.begin_turn()
    change(second, git_repo / "theirs.py", "theirs\n")
    diff = first.diff_since_start()
    assert "+mine" in diff and "theirs" not in diff
    assert "+theirs" in second.diff_since_start() and "mine" not in second.diff_since_start()


def test_alone_undo_still_restores_shell_side_effects(git_repo: Path, tmp_path: Path):
    (git_repo / "a.txt").write_text("a\n")
    only = session(git_repo, tmp_path)
    only.begin_turn()
    only.ensure()
    subprocess.run("rm a.txt && mkdir -p gen && echo x > gen/new.txt", shell=True, cwd=git_repo, check=True)
    only.settle()
    summary = only.undo()
    assert (git_repo / "a.txt").read_text() == "a\n" and not (git_repo / "gen").exists()
    assert "at work in this folder" not in summary  # alone: no notice


def test_a_session_that_ended_is_not_reported(git_repo: Path, tmp_path: Path):
    me = LiveSessions(git_repo, "me", state_dir=tmp_path / "state")
    me.join()
    code = ("import sys, time; from clover_code.tools.workspace.live_sessions import LiveSessions; "
            f"s = LiveSessions({str(git_repo)!r}, 'child', "
            f"state_dir=__import__('pathlib').Path({str(tmp_path / 'state')!r})); "
            "s.join(); print('joined', flush=True); time.sleep(30)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "joined"
        others = me.others()
        assert [(s.session, s.pid) for s in others] == [("child", child.pid)]
    finally:
        child.kill()  # no goodbye: the kernel drops its lock
        child.wait()
    assert me.others() == []
    assert not (me.folder / "child.json").exists()  # its leftover is cleared on the way
    me.leave()
    assert not (me.folder / "me.json").exists()
