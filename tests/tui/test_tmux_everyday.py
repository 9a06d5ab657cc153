"""Issue 34's everyday features on the real `clover-code` in tmux, at 120x40 and 80x24: what a
user types and what the terminal shows."""

from __future__ import annotations

import time
from pathlib import Path

from tests.support.tmux import Tmux, make_repo, needs_tmux, write_replies

pytestmark = needs_tmux

STEPS = "for i in 1 2 3 4 5 6 7 8 9 10; do echo step $i; sleep 0.3; done"



def read_and_fix(done: str) -> list:
    return [{"content": "Fixing it.", "tool_calls": [{"name": "edit_file", "arguments": {
        "path": "app.py", "old_string": "a - b", "new_string": "a + b"}}]}, done]


def test_live_output_bang_at_path_rewind_redo_history_and_modes_at_120x40(tmux: Tmux, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"app.py": "def add(a, b):\n    return a - b\n"})
    replies = write_replies(tmp_path / "replies.jsonl", [
        {"content": "Running the steps.", "tool_calls": [{"name": "run_shell", "arguments": {"command": STEPS}}]},
        "All ten steps ran.", *read_and_fix("Fixed: add adds."), "It printed the status."])
    tmux.start(repo, replies, (120, 40))

    tmux.send("run the steps")
    tmux.wait_for("[y] yes once")
    screen = tmux.wait_for("Waiting for your answer")  # the spinner, while the approval waits
    assert "esc to interrupt" in screen
    tmux.keys("y")
    screen = tmux.wait_for("step 2")  # live, in its card, long before the end
    assert "running for" in screen and "step 10" not in screen
    assert "running shell: for i in 1 2 3" in screen and "s · esc to interrupt" in screen  # the spinner names it
    tmux.wait_for("All ten steps ran.")

    tmux.type("fix @ap")
    screen = tmux.wait_for(" app.py")  # the completion list, as typed
    tmux.keys("Tab")
    tmux.wait_for("fix @app.py")
    tmux.keys("Enter")
    tmux.wait_for("attached app.py")
    tmux.wait_for("[y] yes once")
    tmux.keys("y")
    tmux.wait_for("Fixed: add adds.")
    assert (repo / "app.py").read_text().endswith("a + b\n")

    tmux.send("!git status --short")
    tmux.wait_for("M app.py")

    tmux.keys("Escape")
    time.sleep(0.2)
    tmux.keys("Escape")
    screen = tmux.wait_for("Rewind: go back to just before a message")
    assert "1. run the steps" in screen and "2. fix @app.py" in screen
    tmux.keys("Enter")  # the latest: back to before "fix @app.py"
    screen = tmux.wait_for("1. Code and conversation")  # then what goes back
    assert "2. Conversation only" in screen and "3. Code only" in screen
    tmux.keys("Enter")
    screen = tmux.wait_for("Rewound to before message 2")
    assert (repo / "app.py").read_text().endswith("a - b\n")
    assert "Fixed: add adds." not in screen and "M app.py" not in screen
    tmux.keys("C-c")  # the editor got the message back; clear it
    tmux.send("/redo")
    screen = tmux.wait_for("Redone: back to where you were")
    assert "Fixed: add adds." in screen and (repo / "app.py").read_text().endswith("a + b\n")

    tmux.keys("C-r")
    tmux.wait_for("search the prompts you sent")  # mounted on first use: keys typed before land in the editor
    tmux.type("steps")
    tmux.wait_for("1 match")
    tmux.keys("Enter")
    tmux.wait_for("│ run the steps")
    tmux.keys("C-c")
    for mode in ("auto-edit", "plan", "ask"):
        tmux.keys("BTab")
        tmux.wait_for(f"│ {mode} │")


def test_slash_popup_cost_and_resume_picker_at_80x24(tmux: Tmux, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"app.py": "def add(a, b):\n    return a - b\n"})
    first = write_replies(tmp_path / "first.jsonl", ["The first answer.", "The second answer."])
    tmux.start(repo, first, (80, 24), target="first")
    for task in ("a first question", "a second question"):
        tmux.send(task, target="first")
    tmux.wait_for("The second answer.", target="first")
    tmux.send("/undo 2", target="first")
    tmux.wait_for("Rewound to before message 2", target="first")
    tmux.keys("C-c", target="first")
    tmux.keys("C-d", target="first")
    tmux.wait_for("EXITED 0", target="first")

    second = write_replies(tmp_path / "second.jsonl", ["Resumed."])
    tmux.start(repo, second, (80, 24))
    tmux.type("/co")
    screen = tmux.wait_for("/cost")
    assert "/commit" in screen and "/compact" in screen
    tmux.send("st")
    tmux.wait_for("Tokens per turn")
    tmux.wait_for("price_input_per_mtok")

    tmux.send("/resume")
    screen = tmux.wait_for("Resume a session of this folder")
    assert "a first question" in screen
    screen = tmux.wait_for("you: a first question")  # the preview: the conversation as resumed
    assert "a second question" not in screen  # rewound away
    tmux.keys("Enter")
    screen = tmux.wait_for("resumed session")
    assert "a first question" in screen and "The second answer." not in screen
