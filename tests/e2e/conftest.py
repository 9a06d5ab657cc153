"""End-to-end fixtures: sandbox task repositories and the real `clover-code` process."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.e2e import demo_env, prepare_repo


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """The venv's python first on PATH (the agent's shell runs `python -m pytest`), a git
    identity for commits, and no user config file."""
    return {**demo_env(), "XDG_CONFIG_HOME": str(tmp_path / "xdg")}


@pytest.fixture
def task_repo(tmp_path: Path) -> Callable[[str], Path]:
    """A fresh git repository of a sandbox task (one commit)."""
    return lambda name: prepare_repo(name, tmp_path / "work")


@pytest.fixture
def clover(cli, env) -> Callable[..., subprocess.CompletedProcess]:
    """The real process: clover("--task", ..., input=None, timeout=120)."""
    def run(*args: str, input: str | None = None, timeout: float = 120, cwd: Path | None = None):
        return cli(*args, input=input, timeout=timeout, env=env, cwd=cwd)
    return run
