"""What a daily user of terminal agents expects of keys and the transcript (issue 34, rough)."""

from __future__ import annotations

from rich.console import Console
from textual.widgets import Static
from textual.widgets._toast import ToastRack

from clover_code.ui.tui.widgets.assistant_message import AssistantMessage
from clover_code.ui.tui.widgets.input_editor import InputEditor
from clover_code.ui.tui.widgets.tool_card import ToolCard
from clover_code.ui.tui.widgets.user_message import UserMessage
from tests.support.tui import call, idle, notes, ready, scripted_app, send, wait_for

LONG = " ".join(f"w{i}" for i in range(400))


def plain(renderable) -> str:
    console = Console(width=100, color_system=None)
    with console.capture() as out:
        console.print(renderable)
    return out.get()


async def test_a_message_typed_during_a_reply_waits_outside_it_and_escape_hands_it_back(repo):
    app = scripted_app(repo, [LONG, "Second."], delay=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        await send(pilot, "write a lot")
        await wait_for(pilot, lambda: app.query(AssistantMessage))
        await send(pilot, "and then this")
        assert [m.text for m in app.query(UserMessage)] == ["write a lot"]  # not mounted inside the reply
        assert "1 message queued" in str(editor.border_title)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause(0.2)
        assert editor.text == "and then this" and not editor.border_title  # handed back, not sent
        assert [m.text for m in app.query(UserMessage)] == ["write a lot"]
        assert len(app.agent.engine.requests) == 1


async def test_ctrl_c_during_a_reply_hands_queued_messages_back(repo):
    app = scripted_app(repo, [LONG, "Second."], delay=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "write a lot")
        await wait_for(pilot, lambda: app.query(AssistantMessage))
        await send(pilot, "queued one")
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: not app.busy)
        await pilot.pause(0.2)
        assert app.query_one(InputEditor).text == "queued one"
        assert len(app.agent.engine.requests) == 1 and app.is_running


async def test_ctrl_c_clears_the_editor_and_up_brings_it_back(repo):
    app = scripted_app(repo, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        await pilot.press(*"half a thought")
        await pilot.press("ctrl+c")
        assert editor.text == "" and app.is_running
        await pilot.press("up")
        assert editor.text == "half a thought"


async def test_ctrl_d_quits_on_an_empty_editor_only(repo):
    app = scripted_app(repo, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        await pilot.press(*"ab", "home", "ctrl+d")
        assert editor.text == "b" and app.is_running  # deletes, as in an editor
        await pilot.press("ctrl+a", "ctrl+k")
        await pilot.press("backspace", "delete")
        editor.clear()
        await pilot.press("ctrl+d")
        await pilot.pause(0.1)
        assert not app.is_running


async def test_page_keys_scroll_the_transcript_from_the_editor(repo):
    app = scripted_app(repo, ["\n\n".join(f"Paragraph {i}." for i in range(60))])
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "talk")
        await idle(pilot)
        view = app.view
        await pilot.pause(0.1)
        assert view.scroll_y == view.max_scroll_y > 0
        await pilot.press("pageup")
        await pilot.pause(0.05)
        assert view.scroll_y < view.max_scroll_y
        await pilot.press("home")  # the editor is empty: Home is the transcript's
        await pilot.pause(0.05)
        assert view.scroll_y == 0
        await pilot.press("pagedown", "end")
        await pilot.pause(0.05)
        assert view.scroll_y == view.max_scroll_y
        assert app.focused is app.query_one(InputEditor)


async def test_a_command_answer_shows_when_the_view_was_scrolled_up(repo):
    app = scripted_app(repo, ["\n\n".join(f"Paragraph {i}." for i in range(60))])
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "talk")
        await idle(pilot)
        await pilot.press("ctrl+home")
        await pilot.pause(0.05)
        assert app.view.scroll_y == 0
        await send(pilot, "/stats")
        await wait_for(pilot, lambda: "tokens/pass" in notes(app))
        await pilot.pause(0.2)
        assert app.view.scroll_y == app.view.max_scroll_y


async def test_keys_typed_with_a_tool_card_focused_go_to_the_editor(repo):
    app = scripted_app(repo, [call("read_file", path="app.py"), "It subtracts."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "read it")
        await idle(pilot)
        app.query(ToolCard).last().query_one("CollapsibleTitle").focus()
        await pilot.pause()
        await pilot.press(*"next")
        editor = app.query_one(InputEditor)
        assert editor.text == "next" and app.focused is editor


async def test_welcome_line_and_toasts_away_from_the_editor(repo):
    app = scripted_app(repo, [])
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await ready(pilot)
        welcome = notes(app)
        assert str(repo.name) in welcome and "scripted" in welcome and "/help" in welcome
        app.say("a toast")
        await pilot.pause(0.1)
        rack = app.screen.get_child_by_type(ToastRack)
        editor = app.query_one(InputEditor)
        assert rack.styles.dock == "top"
        assert rack.region.bottom <= editor.region.y  # above the editor, never over it


async def test_tool_cards_show_arguments_and_the_exit_code_once(repo):
    app = scripted_app(repo, [call("run_shell", command="echo out; false"), "It failed."], approval="full-auto")
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        app.settings.sandbox = app.agent.ctx.sandbox = False  # no bubblewrap needed for echo
        await send(pilot, "run it")
        await idle(pilot)
        card = app.query(ToolCard).last()
        body = plain(card.query_one(".tool-body", Static).content)
        title = str(card.title)
        assert "✗ exit 1" in title
        assert "command: echo out; false" in body and "{" not in body and "out" in body
        assert "exit code" not in body and (title + body).count("exit 1") == 1
