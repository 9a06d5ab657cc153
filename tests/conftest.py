import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


@pytest.fixture(autouse=True, scope="session")
def user_state_home(tmp_path_factory: pytest.TempPathFactory):
    """The user's state folder (live-session locks, errors log, prompt history) is the test
    run's own, never the real home's; a test may point it elsewhere (monkeypatch)."""
    state = tmp_path_factory.mktemp("xdg-state")
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(state)
    yield state
    if before is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = before


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
    """Build a peaked tiny checkpoint (tools/training/make_tiny_model.py) once per test session."""
    from tools.training.make_tiny_model import make_tiny_model
    return make_tiny_model(tmp_path_factory.mktemp(f"tiny_{kind}"), kind, peaked=True)


@pytest.fixture(scope="session")
def tiny_attention_ckpt(tmp_path_factory) -> Path:
    """Folder of a tiny attention-only (qwen3) Clover-style checkpoint with a peaked output head."""
    return _tiny_checkpoint(tmp_path_factory, "attention")


@pytest.fixture(scope="session")
def tiny_hybrid_ckpt(tmp_path_factory) -> Path:
    """Folder of a tiny Gated DeltaNet hybrid (qwen3_5_text) checkpoint with a peaked output head."""
    return _tiny_checkpoint(tmp_path_factory, "hybrid")


def _call_markup(name: str, **arguments: str) -> str:
    import json

    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def reply_with_second_call_cut(block_size: int) -> str:
    """A reply with two calls (read_file README.md, glob *.md) where the first closes in the block
    the second opens in and the second closes in the next block (the ScriptedEngine's blocks of
    `block_size` words): the case that once leaked raw `<tool_call>` JSON into the TUI."""
    from clover_code.engine.scripted import split_tokens

    first, second = _call_markup("read_file", path="README.md"), _call_markup("glob", pattern="*.md")
    for filler in range(block_size):
        before = "Reading it." + " word" * filler + " " + first + " Then "
        text = before + second + " Done."

        def block_at(offset: int, text: str = text) -> int:  # the block holding the character at `offset`
            return (len(split_tokens(text[:offset + 1])) - 1) // block_size

        end_first, start_second = len("Reading it." + " word" * filler + " " + first) - 1, len(before)
        end_second = start_second + len(second) - 1
        if block_at(end_first) == block_at(start_second) == block_at(end_second) - 1:
            return text
    raise AssertionError(f"no reply of that shape for blocks of {block_size} words")


@pytest.fixture
def second_call_cut() -> "Callable[[int], str]":
    return reply_with_second_call_cut


def reply_with_debris_cut(block_size: int) -> str:
    """A reply whose call (read_file README.md) is followed by markup debris as models write it
    (`"}}`, a stray `</tool_call>`, `}}`), cut by a block boundary after the `"}}` (the
    ScriptedEngine's blocks of `block_size` words), then prose, then a tag the reply's end cuts
    off: what once reached the transcript as text."""
    from clover_code.engine.scripted import split_tokens

    for filler in range(block_size):
        head = "Reading it." + " word" * filler + " " + _call_markup("read_file", path="README.md") + '"}}'
        if len(split_tokens(head)) % block_size == 0:
            return head + "\n</tool_call>}} Then done. </tool_c"
    raise AssertionError(f"no reply of that shape for blocks of {block_size} words")


@pytest.fixture
def debris_cut() -> "Callable[[int], str]":
    return reply_with_debris_cut
