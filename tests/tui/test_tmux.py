"""The real `clover-code` in tmux on a sandbox repo: type a task, approve, read the screen."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

STATS = "numkit/stats.py"
REPLIES = [
    {"content": "Let me read the code.", "tool_calls": [{"name": "read_file", "arguments": {"path": STATS}}]},
    {"content": "The median ignores even lengths.", "tool_calls": [{"name": "edit_file", "arguments": {
        "path": STATS, "old_string": "    return ordered[middle]\n",
        "new_string": "    if len(ordered) % 2:\n        return ordered[middle]\n"
                      "    return (ordered[middle - 1] + ordered[middle]) / 2\n"}}]},
    "Fixed: **median** now averages the two middle values of an even-length list.",
]


class Tmux:
    def __init__(self, socket: str):
        self.base = ["tmux", "-L", socket]

    def __call__(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=10).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "tui")

    def wait_for(self, text: str, timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if text in screen:
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{text!r} never showed; the screen:\n{self.screen()}")


@pytest.fixture
def sandbox_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "fix-median"
    shutil.copytree(ROOT / "sandbox" / "fix-median" / "repo", repo)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(argv, cwd=repo, check=True, env=env)
    return repo


def test_clover_code_in_tmux(sandbox_repo: Path, tmp_path: Path):
    replies = tmp_path / "replies.jsonl"
    replies.write_text("".join(json.dumps(r) + "\n" for r in REPLIES))
    tmux = Tmux(f"clover-test-{os.getpid()}")
    command = (f"cd {sandbox_repo} && env -u COLUMNS -u LINES {sys.executable} -m clover_code.cli "
               f"--engine scripted:{replies} --no-sandbox; echo EXITED $?; sleep 30")
    tmux("new-session", "-d", "-s", "tui", "-x", "110", "-y", "36", command)
    try:
        tmux.wait_for("scripted")  # the status bar: first paint
        tmux("send-keys", "-t", "tui", "-l", "fix the median of even-length lists")
        tmux("send-keys", "-t", "tui", "Enter")
        tmux.wait_for("[n] no, tell the model")
        time.sleep(0.3)  # let the frame settle
        screen = tmux.screen()
        assert "fix the median of even-length lists" in screen
        assert "read_file  numkit/stats.py" in screen
        assert "+    if len(ordered) % 2:" in screen  # the diff, before approval
        tmux("send-keys", "-t", "tui", "y")
        tmux.wait_for("averages the two middle values")
        time.sleep(0.3)
        screen = tmux.screen()
        assert "edit_file  numkit/stats.py" in screen and "✓" in screen
        assert "Traceback" not in screen
        assert "(ordered[middle - 1] + ordered[middle]) / 2" in (sandbox_repo / STATS).read_text()
        tmux("send-keys", "-t", "tui", "C-c")
        tmux("send-keys", "-t", "tui", "C-c")
        tmux.wait_for("EXITED 0")
    finally:
        tmux("kill-server")
