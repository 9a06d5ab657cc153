"""Rewind as a user drives it (Pilot, real Agent and checkpoints, scripted engine): across the
runs of a resumed session, what to rewind (code and conversation, either alone), a session
whose early turns kept no file checkpoint, and /redo taking the rewound message out of the
editor again."""

from __future__ import annotations

import subprocess

from clover_code.ui.tui.widgets.input_editor import InputEditor
from clover_code.ui.tui.widgets.rewind_picker import RewindPicker
from clover_code.ui.tui.widgets.user_message import UserMessage
from tests.support.tui import call, converse, notes, ready, scripted_app, send, wait_for

SIZE = (80, 24)
READ = call("read_file", path="app.py")
FIX = call("edit_file", path="app.py", old_string="a - b", new_string="a + b")
TWICE = call("edit_file", path="app.py", old_string="a + b", new_string="(a + b) * 2")
TWO_EDITS = [READ, FIX, "Fixed.", TWICE, "Doubled."]


def shown_users(app) -> list[str]:
    return [m.text for m in app.query(UserMessage) if m.display]


def source(repo) -> str:
    return (repo / "app.py").read_text()


async def two_edits(repo) -> None:
    """A first run of the session: two turns, each editing app.py."""
    app = scripted_app(repo, TWO_EDITS, approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await converse(pilot, "fix add", "double it")
    assert "(a + b) * 2" in source(repo)


async def open_picker(pilot) -> RewindPicker:
    app = pilot.app
    await pilot.press("escape", "escape")
    return await wait_for(pilot, lambda: app.screen if isinstance(app.screen, RewindPicker) else None)


async def test_a_resumed_session_rewinds_the_files_of_an_earlier_run(repo):
    await two_edits(repo)
    app = scripted_app(repo, [], resume="last", approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "resumed session" in notes(app))
        picker = await open_picker(pilot)
        assert [(t.text, t.files_kept) for t in picker.turns] == [("fix add", True), ("double it", True)]
        await pilot.press("up", "enter")  # message 1; then what goes back
        await wait_for(pilot, lambda: picker.chosen is not None)
        await pilot.press("enter")  # the default: code and conversation
        await wait_for(pilot, lambda: "Rewound to before message 1" in notes(app))
        assert source(repo).endswith("a - b\n")  # the earlier run's edits are undone
        assert shown_users(app) == [] and app.agent.conversation.messages == []
        assert app.query_one(InputEditor).text == "fix add"

        await pilot.press("ctrl+c")  # the message out of the way, then /redo
        await send(pilot, "/redo")
        await wait_for(pilot, lambda: "Redone" in notes(app))
        assert "(a + b) * 2" in source(repo)
        assert shown_users(app) == ["fix add", "double it"]


async def test_redo_after_resume_puts_the_files_back(repo):
    await two_edits(repo)
    app = scripted_app(repo, [], resume="last", approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "/undo 2")
        await wait_for(pilot, lambda: "Rewound to before message 2" in notes(app))
        assert source(repo).endswith("a + b\n")
    again = scripted_app(repo, [], resume="last", approval="full-auto")  # quit, resume, redo
    async with again.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "resumed session" in notes(again))
        await send(pilot, "/redo")
        await wait_for(pilot, lambda: "Redone" in notes(again))
        assert "(a + b) * 2" in source(repo) and "restored: app.py" in notes(again)


async def test_a_turn_whose_checkpoint_was_never_kept_says_so_and_rewinds_the_conversation_only(repo):
    await two_edits(repo)
    # A log from before checkpoints were kept across runs: no refs of its session.
    refs = subprocess.run(["git", "for-each-ref", "--format=delete %(refname)", "refs/clover"], cwd=repo,
                          check=True, capture_output=True, text=True).stdout
    subprocess.run(["git", "update-ref", "--stdin"], input=refs, cwd=repo, check=True, text=True)
    app = scripted_app(repo, [], resume="last", approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "resumed session" in notes(app))
        picker = await open_picker(pilot)
        assert [t.files_kept for t in picker.turns] == [False, False]
        label = picker.query_one("#messages").get_option_at_index(0).prompt
        assert "files not kept" in str(label) and label.cell_len <= 72  # one line at 80
        await pilot.press("up", "enter")
        await wait_for(pilot, lambda: picker.chosen is not None)
        await pilot.press("1")  # code and conversation: disabled, nothing happens
        assert app.screen is picker
        await pilot.press("enter")  # the one offered: the conversation
        await wait_for(pilot, lambda: "Rewound the conversation only" in notes(app))
        assert "(a + b) * 2" in source(repo)  # the files are not touched
        assert shown_users(app) == []


async def test_conversation_only_and_code_only(repo):
    app = scripted_app(repo, TWO_EDITS, approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await converse(pilot, "fix add", "double it")
        picker = await open_picker(pilot)
        await pilot.press("enter", "3")  # the latest message, code only
        await wait_for(pilot, lambda: "Rewound the code only to before message 2" in notes(app))
        assert source(repo).endswith("a + b\n")
        assert shown_users(app) == ["fix add", "double it"]  # the conversation stays
        assert len(app.agent.conversation.turns()) == 2 and app.query_one(InputEditor).text == ""
        await send(pilot, "/redo")
        await wait_for(pilot, lambda: "Redone" in notes(app))
        assert "(a + b) * 2" in source(repo)

        picker = await open_picker(pilot)
        await pilot.press("up", "enter", "down", "enter")  # message 1, conversation only
        await wait_for(pilot, lambda: "Rewound the conversation only to before message 1" in notes(app))
        assert picker.chosen is not None and "(a + b) * 2" in source(repo)  # the files stay
        assert shown_users(app) == [] and app.agent.conversation.messages == []
        assert app.query_one(InputEditor).text == "fix add"


async def test_redo_takes_the_rewound_message_out_of_the_editor_unless_edited(repo):
    app = scripted_app(repo, TWO_EDITS, approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await converse(pilot, "fix add", "double it")
        editor = app.query_one(InputEditor)
        for edit, left in (("", ""), (" twice", "double it twice")):
            await open_picker(pilot)
            await pilot.press("enter", "enter")
            await wait_for(pilot, lambda: editor.text == "double it")
            await pilot.press(*["space" if c == " " else c for c in edit])
            await pilot.press("home", *"/redo")  # typed before the message, run from the popup
            await pilot.press("enter")
            await wait_for(pilot, lambda: "Redone" in notes(app) and shown_users(app) == ["fix add", "double it"])
            assert editor.text == left
            editor.clear()
            for note in app.query(".note"):
                note.remove()


async def test_after_model_switches_a_rewind_still_restores_the_files(repo):
    """/model builds a new agent on the same session: the turns before it keep their files."""
    app = scripted_app(repo, TWO_EDITS, approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await converse(pilot, "fix add", "double it")
        first = app.agent
        await send(pilot, "/model another")
        await wait_for(pilot, lambda: app.agent is not first and app.status.info.state == "ready")
        await send(pilot, "/undo 1")
        await wait_for(pilot, lambda: "Rewound to before message 1" in notes(app))
        assert source(repo).endswith("a - b\n") and "restored: app.py" in notes(app)
