"""git_status, git_diff, git_log, git_commit on real temp repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from clover_code.tools import Registry, ToolContext
from clover_code.tools.git import TOOLS
from clover_code.tools.workspace import Workspace


def git(repo: Path, *args: str) -> str:
    # The repository's own identity (the fixture's config), whatever GIT_* another test left behind.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture
def repo(git_repo: Path) -> Path:
    git(git_repo, "config", "user.name", "Tester")
    git(git_repo, "config", "user.email", "tester@example.invalid")
    return git_repo


async def call(root: Path, name: str, **args):
    return await Registry(TOOLS).call(name, args, ToolContext(Workspace(root)))


async def test_status_clean_then_dirty(repo: Path):
    clean = await call(repo, "git_status")
    assert clean.ok and clean.data["clean"] and "branch: main" in clean.output
    assert "working tree clean" in clean.output
    (repo / "README.md").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    dirty = await call(repo, "git_status")
    assert not dirty.data["clean"] and dirty.data["entries"] == 2
    assert " M README.md" in dirty.output and "?? new.txt" in dirty.output


async def test_diff_unstaged_staged_and_path(repo: Path):
    (repo / "README.md").write_text("hello\nworld\n")
    (repo / "other.txt").write_text("x\n")
    git(repo, "add", "other.txt")
    unstaged = await call(repo, "git_diff")
    assert "+world" in unstaged.output and "other.txt" not in unstaged.output
    staged = await call(repo, "git_diff", staged=True)
    assert "+x" in staged.output and "README.md" not in staged.output
    limited = await call(repo, "git_diff", path="other.txt")
    assert limited.ok and "No unstaged changes in other.txt" in limited.output


async def test_diff_path_outside_workspace_is_refused(repo: Path):
    result = await call(repo, "git_diff", path="../../etc/passwd")
    assert not result.ok and "outside the workspace" in result.output


async def test_log_shows_n_newest(repo: Path):
    for i in range(3):
        (repo / f"f{i}.txt").write_text(f"{i}\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", f"commit {i}")
    result = await call(repo, "git_log", n=2)
    lines = result.output.splitlines()
    assert len(lines) == 2 and result.data["commits"] == 2
    assert lines[0].endswith("Tester: commit 2") and lines[1].endswith("commit 1")
    by_path = await call(repo, "git_log", path="f0.txt")
    assert by_path.output.count("\n") == 0 and "commit 0" in by_path.output


async def test_log_without_commits(tmp_path: Path):
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    result = await call(tmp_path, "git_log")
    assert result.ok and "No commits yet" in result.output


async def test_commit_everything_adds_a_new_commit(repo: Path):
    before = git(repo, "rev-parse", "HEAD").strip()
    (repo / "README.md").write_text("changed\n")
    (repo / "new.txt").write_text("new\n")
    result = await call(repo, "git_commit", message="Change readme, add new.txt")
    assert result.ok, result.output
    assert git(repo, "rev-parse", "HEAD").strip() == result.data["commit"]
    assert git(repo, "rev-parse", "HEAD~1").strip() == before  # a child, not an amend
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "log", "-1", "--format=%s") == "Change readme, add new.txt\n"
    assert "2 files changed" in result.output and result.data["branch"] == "main"


async def test_commit_only_given_paths(repo: Path):
    (repo / "a.txt").write_text("a\n")
    (repo / "b.txt").write_text("b\n")
    result = await call(repo, "git_commit", message="add a", paths=["a.txt"])
    assert result.ok, result.output
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == ["a.txt"]
    assert "?? b.txt" in git(repo, "status", "--porcelain")


async def test_commit_a_deletion(repo: Path):
    (repo / "README.md").unlink()
    result = await call(repo, "git_commit", message="drop readme", paths=["README.md"])
    assert result.ok, result.output
    assert git(repo, "ls-files") == ""


async def test_nothing_to_commit_is_a_clear_error(repo: Path):
    result = await call(repo, "git_commit", message="nothing")
    assert not result.ok and "nothing to commit" in result.output


async def test_empty_message_is_refused(repo: Path):
    result = await call(repo, "git_commit", message="  ")
    assert not result.ok and "message" in result.output


async def test_outside_a_repository_is_a_clear_error(tmp_path: Path):
    plain = tmp_path / "plain"
    plain.mkdir()
    for name in ("git_status", "git_log", "git_diff"):
        result = await call(plain, name)
        assert not result.ok and "not inside a git repository" in result.output
    result = await call(plain, "git_commit", message="x")
    assert not result.ok and "not inside a git repository" in result.output


async def test_workspace_in_a_subfolder_of_the_repo(repo: Path):
    sub = repo / "pkg"
    sub.mkdir()
    (sub / "mod.py").write_text("x = 1\n")
    result = await call(sub, "git_status")
    assert result.ok and "pkg/" in result.output


async def test_long_diff_is_cut_in_the_middle(repo: Path):
    (repo / "README.md").write_text("".join(f"line {i}\n" for i in range(20_000)))
    result = await call(repo, "git_diff")
    assert result.ok and len(result.output) < 60_000
    assert "cut from the middle" in result.output and "+line 19999" in result.output


@pytest.fixture
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home without a git config, no identity in the environment."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for name in ("AUTHOR", "COMMITTER"):
        for part in ("NAME", "EMAIL", "DATE"):
            monkeypatch.delenv(f"GIT_{name}_{part}", raising=False)


async def test_commit_takes_its_identity_from_the_environment(git_repo: Path, no_user_config,
                                                              monkeypatch: pytest.MonkeyPatch):
    """As a CI job sets it: GIT_AUTHOR_* / GIT_COMMITTER_* and nothing in any config."""
    git(git_repo, "config", "user.useConfigOnly", "true")  # git guesses nothing from the host name
    for name, value in {"GIT_AUTHOR_NAME": "Ci Author", "GIT_AUTHOR_EMAIL": "author@ci.invalid",
                        "GIT_COMMITTER_NAME": "Ci Committer", "GIT_COMMITTER_EMAIL": "committer@ci.invalid",
                        "GIT_AUTHOR_DATE": "2020-02-02T12:00:00+00:00"}.items():
        monkeypatch.setenv(name, value)
    (git_repo / "a.txt").write_text("a\n")
    result = await call(git_repo, "git_commit", message="from CI")
    assert result.ok, result.output
    shown = git(git_repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%ad", "--date=iso-strict")
    assert shown == "Ci Author <author@ci.invalid>|Ci Committer <committer@ci.invalid>|2020-02-02T12:00:00+00:00\n"


async def test_commit_without_any_identity_says_how_to_set_one(git_repo: Path, no_user_config):
    git(git_repo, "config", "user.useConfigOnly", "true")
    before = git(git_repo, "rev-parse", "HEAD")
    (git_repo / "a.txt").write_text("a\n")
    result = await call(git_repo, "git_commit", message="who am I")
    assert not result.ok and "no identity is set" in result.output
    assert "git config user.email" in result.output and "GIT_AUTHOR_NAME" in result.output
    assert "Please tell me who you are" not in result.output
    assert git(git_repo, "rev-parse", "HEAD") == before and git(git_repo, "diff", "--cached") == ""  # nothing staged
