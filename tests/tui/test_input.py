"""The editor, keys, the denoise view, background loading and errors."""

from __future__ import annotations

import threading

from textual import events

from clover_code.engine import DenoiseStep, EngineError
from clover_code.settings import Settings
from clover_code.ui.tui.app import make_app
from clover_code.ui.tui.widgets.completion_popup import CompletionPopup
from clover_code.ui.tui.widgets.denoise_view import DenoiseView
from clover_code.ui.tui.widgets.input_editor import InputEditor
from clover_code.ui.tui.widgets.user_message import UserMessage
from tests.support.tui import idle, notes, ready, scripted_app, send, wait_for


async def test_history_newline_and_paste(repo):
    app = scripted_app(repo, ["one", "two", "three"])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        for text in ("first task", "second task"):
            await send(pilot, text)
            await idle(pilot)
        await pilot.press("up")
        assert editor.text == "second task"
        await pilot.press("up")
        assert editor.text == "first task"
        await pilot.press("down", "down")
        assert editor.text == ""
        await pilot.press(*"line1", "ctrl+j", *"line2")
        assert editor.text == "line1\nline2"
        big = "\n".join(f"pasted line {i}" for i in range(50))
        editor.post_message(events.Paste(big))
        await pilot.pause(0.05)
        assert "[pasted text #1: 50 lines]" in editor.text and len(editor.text) < 100
        await pilot.press("enter")
        await idle(pilot)
        sent = app.query(UserMessage).last().text
        assert sent.startswith("line1\nline2") and "pasted line 49" in sent


async def test_at_path_completion(repo):
    (repo / "src").mkdir()
    (repo / "src" / "parser.py").write_text("")
    (repo / "src" / "printer.py").write_text("")
    app = scripted_app(repo, [])
    async with app.run_test(size=(100, 30)) as pilot:
        editor = app.query_one(InputEditor)
        # Mounted after the first frame (the first paint waits for no helper).
        popup = await wait_for(pilot, lambda: next(iter(app.query(CompletionPopup)), None))
        await pilot.press(*"look at @ap", "tab")
        assert editor.text == "look at @app.py "
        await pilot.press(*"and @src/p")
        assert [c.value for c in popup.items] == ["src/parser.py", "src/printer.py"]  # as you type
        await pilot.press("down", "tab")
        assert editor.text.endswith("@src/printer.py ") and not popup.is_open
        await pilot.press(*"@nothing-like-this", "tab")
        assert not popup.is_open and "no file matches" in str(editor.border_subtitle)


async def test_denoise_view_draws_steps(repo):
    app = scripted_app(repo, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        view = app.query_one(DenoiseView)
        await pilot.press("f2")
        assert view.is_open
        resolved = tuple(i < 20 for i in range(32))
        app.driver.on_step(DenoiseStep(block_index=3, step=2, resolved=resolved, newly=(16, 17, 18, 19)))
        await pilot.pause(0.05)
        shown = str(view.render())
        assert shown.count("█") == 20 and shown.count("░") == 12
        assert "block 3  pass 2  20/32 resolved  (+4)" in shown
        await pilot.press("f2")
        assert not view.is_open


async def test_usable_while_the_model_loads(repo):
    release = threading.Event()

    def slow_factory(approver, resume):
        release.wait(10)
        return scripted_app(repo, ["Loaded answer."]).driver.factory(approver, resume)

    app = make_app(Settings(engine="scripted"), repo, agent_factory=slow_factory)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause(0.1)
        assert app.agent is None and app.status.info.state == "loading"
        assert app.status.has_class("-loading")  # the progress bar shows
        await send(pilot, "/help")
        await wait_for(pilot, lambda: "/undo" in notes(app))
        await send(pilot, "queued task")
        await wait_for(pilot, lambda: "1 message queued" in str(app.query_one(InputEditor).border_title))
        assert not app.query(UserMessage)  # shown when it is sent, not before
        release.set()
        await wait_for(pilot, lambda: app.agent is not None)
        await idle(pilot)
        from clover_code.ui.tui.widgets.assistant_message import AssistantMessage

        await wait_for(pilot, lambda: "Loaded answer." in "".join(m.text for m in app.query(AssistantMessage)))
        assert [m.text for m in app.query(UserMessage)] == ["queued task"]
        assert not app.status.has_class("-loading") and not app.query_one(InputEditor).border_title


async def test_engine_errors_are_notifications_not_tracebacks(repo):
    def failing(approver, resume):
        raise EngineError("no model to run: pass --model DIR")

    app = make_app(Settings(), repo, agent_factory=failing)
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_for(pilot, lambda: app.status.info.state == "error")
        assert "pass --model DIR" in notes(app)
        assert any("pass --model DIR" in str(n.message) for n in app._notifications)
        await send(pilot, "/help")  # still usable
        await wait_for(pilot, lambda: "/undo" in notes(app))


async def test_a_failing_engine_mid_turn_is_reported(repo):
    app = scripted_app(repo, [])  # no replies: the engine fails on the first request
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await idle(pilot)
        assert "no more replies" in notes(app)
