"""Fixtures for TUI tests."""

from pathlib import Path

import pytest


@pytest.fixture
def repo(git_repo: Path) -> Path:
    (git_repo / "app.py").write_text("def add(a, b):\n    return a - b\n")
    return git_repo
