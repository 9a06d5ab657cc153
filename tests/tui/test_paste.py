"""Bracketed pastes as the terminal delivers them (issue 34): once, and with their lines.

The app gets a Paste event from the driver and hands it to the focused editor; the tests
post it to the app the same way. Terminals put CR (not LF) between pasted lines.
"""

from __future__ import annotations

from textual import events

from clover_code.ui.tui.widgets.input_editor import InputEditor
from clover_code.ui.tui.widgets.user_message import UserMessage
from tests.support.tui import idle, ready, scripted_app

LINES_300 = "\r".join(f"pasted line {i}" for i in range(300))


def last_user_content(app) -> str:
    """What the model was sent as the latest user message."""
    messages = app.agent.engine.requests[-1].messages
    return [m for m in messages if m["role"] == "user"][-1]["content"]


async def paste(pilot, text: str) -> None:
    pilot.app.post_message(events.Paste(text))  # as the driver does with a bracketed paste
    await pilot.pause(0.05)


async def test_a_small_paste_is_inserted_once(repo):
    app = scripted_app(repo, ["Got it."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        await paste(pilot, "hello world")
        assert editor.text == "hello world"
        await pilot.press(*" and", "space")
        await paste(pilot, "two\r\nlines\r")
        assert editor.text == "hello world and two\nlines\n"


async def test_a_one_line_paste_ending_in_cr_is_one_line(repo):
    app = scripted_app(repo, ["Got it."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await paste(pilot, "git status\r")
        assert app.query_one(InputEditor).text == "git status\n"


async def test_300_pasted_lines_with_cr_reach_the_model_as_300_lines(repo):
    app = scripted_app(repo, ["Read them all."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        await pilot.press(*"count these:", "ctrl+j")
        await paste(pilot, LINES_300)
        assert editor.text == "count these:\n[pasted text #1: 300 lines]"
        await pilot.press("enter")
        await idle(pilot)
        sent = last_user_content(app)
        assert "\r" not in sent and sent.splitlines() == ["count these:", *(f"pasted line {i}" for i in range(300))]
        shown = app.query(UserMessage).last()
        assert str(shown.render()) == "count these:\n[pasted text #1: 300 lines]"  # not the wall
        assert shown.text == sent
        await pilot.press("up")  # the history keeps the placeholder, and what it stands for
        assert editor.text == "count these:\n[pasted text #1: 300 lines]"
        assert editor.expanded_text() == sent
