"""Issue 34's broken flows on the real `clover-code` in tmux, at the sizes people use:
bracketed pastes with CR line breaks, a long diff to approve at 80x24, SIGTERM, two
sessions in one repository."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from tests.support.tmux import Tmux, logged_events, make_repo, needs_tmux, write_replies

pytestmark = needs_tmux

OLD = "".join(f"value_{i} = {i}\n" for i in range(200))
NEW = "".join(f"value_{i} = {i * 2}\n" for i in range(200))



def editor_lines(screen: str) -> list[str]:
    """The editor's rows: between the last rounded top and bottom border."""
    rows = screen.splitlines()
    top = max(i for i, row in enumerate(rows) if row.startswith("╭"))
    bottom = max(i for i, row in enumerate(rows) if row.startswith("╰"))
    return [row.strip("│ ") for row in rows[top + 1:bottom]]


def test_pastes_and_sigterm_at_120x40(tmux: Tmux, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "hello\n"})
    replies = write_replies(tmp_path / "replies.jsonl", ["Counted them."])
    tmux.start(repo, replies, (120, 40))
    tmux.paste("hello world")
    tmux.wait_for("hello world")
    time.sleep(0.5)  # a second copy would land at once: give it the time to show
    assert editor_lines(tmux.screen()) == ["hello world"]  # once, not twice
    tmux.keys("C-c")  # clears the editor
    tmux.wait_until(lambda screen: editor_lines(screen) == [""], "an empty editor")
    tmux.paste("\r".join(f"line {i}" for i in range(300)))
    tmux.wait_for("[pasted text #1: 300 lines]")
    tmux.keys("Enter")
    tmux.wait_for("Counted them.")
    sent = [e["text"] for e in logged_events(repo) if e["type"] == "UserMessage"]
    assert sent == ["\n".join(f"line {i}" for i in range(300))]
    assert "line 299" not in tmux.screen()  # the transcript shows the placeholder, not the wall

    assert tmux.modes()["alternate_on"] == "1"
    os.kill(tmux.program_pid(), signal.SIGTERM)
    tmux.wait_for("EXITED 143")
    modes = tmux.modes()
    assert modes == {"alternate_on": "0", "mouse_any": "0", "mouse_button": "0", "mouse_sgr": "0",
                     "cursor_visible": "1"}, modes
    assert "continue it with" in tmux.screen() and "Traceback" not in tmux.screen()


def test_a_200_line_diff_is_reviewable_at_80x24(tmux: Tmux, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"big.py": OLD})
    replies = write_replies(tmp_path / "replies.jsonl", [
        {"content": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "big.py"}}]},
        {"content": "Doubling.",
         "tool_calls": [{"name": "write_file", "arguments": {"path": "big.py", "content": NEW}}]},
        "Doubled every value.",
    ])
    tmux.start(repo, replies, (80, 24))
    tmux.send("double every value")
    screen = tmux.wait_for("more below")
    assert "[y] yes once" in screen and "[n] no" in screen
    assert "+value_199 = 398" not in screen
    screen = tmux.press_until("End", "+value_199 = 398")  # the end of the diff, however busy the machine
    assert "the end" in screen
    assert "[y] yes once" in screen and "Allow write_file" in screen
    assert (repo / "big.py").read_text() == OLD
    tmux.keys("y")
    tmux.wait_for("Doubled every value.")
    assert (repo / "big.py").read_text() == NEW
    tmux.press_until("C-d", "EXITED 0")  # an empty editor: quit


def write_file_reply(path: str, text: str, done: str) -> list:
    return [{"content": f"Writing {path}.", "tool_calls": [{"name": "write_file",
                                                            "arguments": {"path": path, "content": text}}]}, done]


def test_two_sessions_in_one_repository_at_200x60(tmux: Tmux, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"README.md": "shared repository\n"})
    first = write_replies(tmp_path / "first.jsonl", write_file_reply("mine.py", "mine = 1\n", "Made mine."))
    second = write_replies(tmp_path / "second.jsonl", write_file_reply("theirs.py", "theirs = 1\n", "Made theirs."))
    tmux.start(repo, first, (200, 60), target="first")
    tmux.send("make mine.py", target="first")
    tmux.wait_for("[y] yes once", target="first")
    tmux.keys("y", target="first")
    tmux.wait_for("Made mine.", target="first")

    tmux.start(repo, second, (200, 60), target="second")
    tmux.wait_for("Another clover-code session is at work in this folder", target="second")
    tmux.send("make theirs.py", target="second")
    tmux.wait_for("[y] yes once", target="second")
    tmux.keys("y", target="second")
    tmux.wait_for("Made theirs.", target="second")
    assert (repo / "mine.py").exists() and (repo / "theirs.py").exists()

    tmux.send("/diff", target="first")
    screen = tmux.wait_for("+mine = 1", target="first")
    assert "theirs" not in screen.split("/diff")[-1]  # the other session's file is not this one's change
    tmux.send("/undo 1", target="first")
    tmux.wait_for("Another clover-code session is at work", target="first")
    deadline = time.monotonic() + 10
    while (repo / "mine.py").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not (repo / "mine.py").exists()  # this session's own change, undone
    assert (repo / "theirs.py").read_text() == "theirs = 1\n"  # the other's, untouched
