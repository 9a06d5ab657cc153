"""Attack: the workspace controls the session log (its name, its turns) that a resumed
session's rewind reads its checkpoints by. A rewind must stay in the workspace's files: never
a ref outside the session's own, never a file under `.clover/` or in a `.git`, whatever a
checkpoint's tree holds or the log is called."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from clover_code.tools.workspace.checkpoints import Checkpoints, safe_session_name


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def one_turn(checkpoints: Checkpoints, change) -> None:
    checkpoints.begin_turn(0)
    checkpoints.ensure()
    change()
    checkpoints.settle()


@pytest.mark.parametrize("name", ["../../heads/main", "x/../../../HEAD", "a b", "main.lock", "-d", "..", "é"])
def test_a_hostile_session_name_keeps_the_refs_in_their_namespace(git_repo: Path, tmp_path: Path, name: str):
    head = git(git_repo, "rev-parse", "HEAD")
    checkpoints = Checkpoints(git_repo, cache_dir=tmp_path / "cache")
    checkpoints.continue_session(name, turns=0)
    one_turn(checkpoints, lambda: (git_repo / "README.md").write_text("changed\n"))
    refs = git(git_repo, "for-each-ref", "--format=%(refname)").split()
    ours = [ref for ref in refs if ref.startswith("refs/clover/")]
    assert ours and all(ref.startswith(f"refs/clover/checkpoints/{safe_session_name(name)}/") for ref in ours)
    assert safe_session_name(name).startswith("h-")
    assert git(git_repo, "rev-parse", "HEAD") == head and "refs/heads/main" in refs
    checkpoints.rewind(0)
    assert (git_repo / "README.md").read_text() == "hello\n"


def test_a_rewind_never_writes_clover_config(git_repo: Path, tmp_path: Path):
    """Even when the checkpoints say the session changed `.clover/config.toml` (a shell without
    the sandbox could), a rewind leaves it as it is: the project's settings are not a file
    the agent's undo puts back."""
    config = git_repo / ".clover" / "config.toml"
    config.parent.mkdir()
    config.write_text('max_turns = 5\n')
    checkpoints = Checkpoints(git_repo, cache_dir=tmp_path / "cache")
    checkpoints.continue_session("20260101-000000-abcdef", turns=0)

    def change() -> None:
        config.write_text('engine = "http://attacker"\n')
        (git_repo / "README.md").write_text("changed\n")

    one_turn(checkpoints, change)
    summary = checkpoints.rewind(0)
    assert (git_repo / "README.md").read_text() == "hello\n" and "README.md" in summary
    assert config.read_text() == 'engine = "http://attacker"\n' and ".clover" not in summary


def test_a_resumed_rewind_reads_checkpoints_from_the_git_dir_only(git_repo: Path, tmp_path: Path):
    """The log gives only a session name: the checkpoints come from refs the sandboxed shell
    cannot write. A name with no refs restores nothing and says so."""
    first = Checkpoints(git_repo, cache_dir=tmp_path / "cache")
    first.continue_session("20260101-000000-abcdef", turns=0)
    one_turn(first, lambda: (git_repo / "README.md").write_text("changed\n"))
    other = Checkpoints(git_repo, cache_dir=tmp_path / "cache")
    other.continue_session("20260101-000000-fedcba", turns=1)  # a log of another name, same turns
    assert not other.files_kept(0)
    assert "Files not restored: no file checkpoint" in other.rewind(0)
    assert (git_repo / "README.md").read_text() == "changed\n"
