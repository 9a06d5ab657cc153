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


@pytest.fixture
def cli():
    """`run_cli` as a fixture, for test folders whose own conftest.py shadows `import conftest`."""
    return run_cli


def _tiny_checkpoint(tmp_path_factory, kind: str) -> Path:
    """Build a peaked tiny checkpoint (tools/make_tiny_model.py) once per test session."""
    if str(ROOT / "tools") not in sys.path:
        sys.path.insert(0, str(ROOT / "tools"))
    from make_tiny_model import make_tiny_model
    return make_tiny_model(tmp_path_factory.mktemp(f"tiny_{kind}"), kind, peaked=True)


@pytest.fixture(scope="session")
def tiny_attention_ckpt(tmp_path_factory) -> Path:
    """Folder of a tiny attention-only (qwen3) Clover-style checkpoint with a peaked output head."""
    return _tiny_checkpoint(tmp_path_factory, "attention")


@pytest.fixture(scope="session")
def tiny_hybrid_ckpt(tmp_path_factory) -> Path:
    """Folder of a tiny Gated DeltaNet hybrid (qwen3_5_text) checkpoint with a peaked output head."""
    return _tiny_checkpoint(tmp_path_factory, "hybrid")
