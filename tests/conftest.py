import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A real git repository with one commit."""
    repo = tmp_path / "repo"
    repo.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=repo, check=True, env=env)
    return repo


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None, timeout: float = 120,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """Run the real `clover-code` process."""
    return subprocess.run([sys.executable, "-m", "clover_code.cli", *args], cwd=cwd, input=input,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
