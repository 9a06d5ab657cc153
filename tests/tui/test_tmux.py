"""The real `clover-code` in tmux on a sandbox repo: type a task, approve, read the screen."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.tmux import ROOT, Tmux, needs_tmux

pytestmark = needs_tmux

STATS = "numkit/stats.py"
REPLIES = [
    {"content": "Let me read the code.", "tool_calls": [{"name": "read_file", "arguments": {"path": STATS}}]},
    {"content": "The median ignores even lengths.", "tool_calls": [{"name": "edit_file", "arguments": {
        "path": STATS, "old_string": "    return ordered[middle]\n",
        "new_string": "    if len(ordered) % 2:\n        return ordered[middle]\n"
                      "    return (ordered[middle - 1] + ordered[middle]) / 2\n"}}]},
    "Fixed: **median** now averages the two middle values of an even-length list.",
]


@pytest.fixture
def sandbox_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "fix-median"
    shutil.copytree(ROOT / "sandbox" / "fix-median" / "repo", repo)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(argv, cwd=repo, check=True, env=env)
    return repo


def test_clover_code_in_tmux(tmux: Tmux, sandbox_repo: Path, tmp_path: Path):
    replies = tmp_path / "replies.jsonl"
    replies.write_text("".join(json.dumps(r) + "\n" for r in REPLIES))
    tmux.start(sandbox_repo, replies, (110, 36))
    tmux.send("fix the median of even-length lists")
    shown = ("fix the median of even-length lists", "read_file  numkit/stats.py", "+    if len(ordered) % 2:",
             "[n] no, tell the model")  # the task, the read, the diff before approval, the legend
    tmux.wait_until(lambda s: all(part in s for part in shown), "the approval with its diff")
    tmux.keys("y")
    screen = tmux.wait_until(lambda s: "averages the two middle values" in s and "edit_file  numkit/stats.py" in s
                             and "✓" in s, "the answer")
    assert "Traceback" not in screen
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in (sandbox_repo / STATS).read_text()
    tmux.keys("C-c")
    tmux.keys("C-c")
    tmux.wait_for("EXITED 0")
