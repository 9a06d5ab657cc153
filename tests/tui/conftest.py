"""Fixtures for TUI tests."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.tmux import Tmux


@pytest.fixture(autouse=True)
def user_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's state folder (errors log, prompt history) in the test's own folder."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


@pytest.fixture
def repo(git_repo: Path) -> Path:
    (git_repo / "app.py").write_text("def add(a, b):\n    return a - b\n")
    return git_repo


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    """A private tmux server for the test, killed after it."""
    server = Tmux(tmp_path / "tmux.sock")
    yield server
    server("kill-server")
