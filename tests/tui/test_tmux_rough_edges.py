"""Issue 42's TUI items 10, 13 and 14 on the real `clover-code` in tmux, where they are about
what the terminal shows: a first prompt from the command line, a long command's card heading and
a 543-line diff approved at 80x24, `/help` wrapping within its columns; a rewound message edited
with Ctrl+Home and `/redo` typed after it at 120x40."""

from __future__ import annotations

from pathlib import Path

from tests.support.tmux import Tmux, logged_events, make_repo, needs_tmux, write_replies

pytestmark = needs_tmux

LONG_COMMAND = "echo " + "a" * 60 + " && echo " + "b" * 50 + " && false"
OLD = "".join(f"value_{i} = {i}\n" for i in range(543))
NEW = "".join(f"value_{i} = {i * 2}\n" for i in range(543))


def rows_between(screen: str, first: str, last_prefix: str) -> list[str]:
    """The screen's rows after the one holding `first`, up to the first starting with `last_prefix`."""
    rows = screen.splitlines()
    start = max(i for i, row in enumerate(rows) if first in row)
    end = next(i for i in range(start, len(rows)) if rows[i].startswith(last_prefix))
    return rows[start + 1:end]


def test_a_first_prompt_a_long_command_a_long_diff_and_help_at_80x24(tmux: Tmux, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"big.py": OLD})
    replies = write_replies(tmp_path / "replies.jsonl", [
        {"content": "Checking.", "tool_calls": [{"name": "run_shell", "arguments": {"command": LONG_COMMAND}}]},
        "It fails.",
        {"content": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "big.py"}}]},
        {"content": "Doubling.",
         "tool_calls": [{"name": "write_file", "arguments": {"path": "big.py", "content": NEW}}]},
        "Doubled every value.",
    ])
    tmux.start(repo, replies, (80, 24), args=("check it",))
    tmux.wait_for("[y] yes once")  # the prompt was sent by itself, and its first call asks
    assert [e["text"] for e in logged_events(repo) if e["type"] == "UserMessage"] == ["check it"]
    tmux.keys("y")
    screen = tmux.wait_for("It fails.")
    heading = next(row for row in screen.splitlines() if "run_shell" in row and "echo" in row)
    assert "✗ exit 1" in heading and heading.rstrip().endswith("s"), heading  # the mark and time, not cut off

    tmux.send("double every value")
    tmux.wait_for("Allow write_file")
    tmux.press_until("End", "the end")  # the diff read to its end
    tmux.keys("y")
    # The reply in view, not the card's top; the spinner's last frame may lag on a loaded
    # machine, so wait for the screen without it (its label is the Pilot tests' to check).
    tmux.wait_until(lambda s: "Doubled every value." in s and "Waiting for your answer" not in s,
                    "the reply, with no approval label")
    assert (repo / "big.py").read_text() == NEW

    tmux.send("/help")
    screen = tmux.wait_for("y / a / n")
    keys = rows_between(screen, "Keys", "╭")
    assert keys and all(row.startswith("   ▎   ") for row in keys if row.strip()), keys  # never at the edge
    assert any(row.startswith("   ▎" + " " * 15) for row in keys)  # a wrapped line, in its column


def test_ctrl_home_in_a_rewound_message_and_redo_typed_after_it_at_120x40(tmux: Tmux, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    replies = write_replies(tmp_path / "replies.jsonl", ["One.", "Two."])
    tmux.start(repo, replies, (120, 40))
    tmux.type("first line")
    tmux.keys("C-j")
    tmux.send("second line")
    tmux.wait_for("One.")
    tmux.send("/undo 1")
    tmux.wait_for("Rewound to before message 1")
    tmux.keys("C-Home")
    tmux.type("X")
    tmux.wait_for("│ Xfirst line")  # typed at the editor's start: Ctrl+Home was the editor's
    tmux.keys("BSpace")  # a key of its own: a binding's key can land after an editor's key sent with it
    tmux.wait_for("│ first line")
    tmux.keys("C-End")
    tmux.send(" /redo")
    screen = tmux.wait_for("Redone")
    assert "/redo" not in screen.split("Redone")[-1] and "first line" not in screen.split("Redone")[-1]
    sent = [e["text"] for e in logged_events(repo) if e["type"] == "UserMessage"]
    assert sent == ["first line\nsecond line"]  # /redo ran; nothing was sent as text
