"""Issue 34's everyday features, driven as a user drives them (Pilot, real Agent, scripted
engine): the spinner, live shell output, !cmd, @path, rewind and redo (Esc Esc, /undo, a
resumed log), Shift+Tab, /cost, prompt history with Ctrl+R, the completion popup and the
session picker."""

from __future__ import annotations

import asyncio

from textual import events
from textual.widgets import Static

from clover_code.ui.tui.prompt_history import PromptHistory
from clover_code.ui.tui.widgets.assistant_message import AssistantMessage
from clover_code.ui.tui.widgets.completion_popup import CompletionPopup
from clover_code.ui.tui.widgets.history_search import HistorySearch
from clover_code.ui.tui.widgets.input_editor import InputEditor
from clover_code.ui.tui.widgets.live_output import LiveOutput
from clover_code.ui.tui.widgets.rewind_picker import RewindPicker
from clover_code.ui.tui.widgets.spinner import Spinner
from clover_code.ui.tui.widgets.tool_card import ToolCard
from clover_code.ui.tui.widgets.usage_view import UsageView
from clover_code.ui.tui.widgets.user_message import UserMessage
from tests.support.tui import call, converse, idle, notes, plain, ready, scripted_app, send, wait_for

SIZE = (100, 30)
READ = call("read_file", path="app.py")
FIX = call("edit_file", path="app.py", old_string="a - b", new_string="a + b")
TWICE = call("edit_file", path="app.py", old_string="a + b", new_string="(a + b) * 2")


def body(card: ToolCard) -> str:
    return plain(card.query_one(".tool-body", Static).content)


def shown_users(app) -> list[str]:
    return [m.text for m in app.query(UserMessage) if m.display]


def replies(app) -> str:
    return "\n".join(m.text for m in app.query(AssistantMessage) if m.display)


async def test_spinner_says_what_runs_for_how_long_and_how_to_stop_it(repo):
    app = scripted_app(repo, [" ".join(f"w{i}" for i in range(60))], delay=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        spinner = app.query_one(Spinner)
        assert not spinner.display
        await send(pilot, "write a little")
        await wait_for(pilot, lambda: spinner.display and "tokens" in str(spinner.render()))
        line = str(spinner.render())
        assert "Working…" in line and "esc to interrupt" in line and "0s" in line
        await idle(pilot)
        await wait_for(pilot, lambda: not spinner.display)


async def test_spinner_names_the_running_command_cut_to_fit_80_columns(repo):
    command = "sleep 3; echo " + " ".join(f"word{i}" for i in range(30))
    app = scripted_app(repo, [call("run_shell", command=command), "Done."], approval="full-auto")
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "run it")
        spinner = app.query_one(Spinner)
        await wait_for(pilot, lambda: "running shell: sleep 3; echo word0" in str(spinner.render()))
        line = spinner.render()
        assert str(line).endswith("s · esc to interrupt") and "…" in str(line)  # the command cut, not the legend
        assert line.cell_len <= spinner.content_size.width <= 78
        await idle(pilot)
        await wait_for(pilot, lambda: not spinner.display)


async def test_a_running_command_streams_into_its_card(repo):
    loop = "for i in 1 2 3 4 5 6 7 8 9; do echo line$i; sleep 0.15; done"
    app = scripted_app(repo, [call("run_shell", command=loop), "Done."], approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "count")
        live = await wait_for(pilot, lambda: app.query(LiveOutput).first() if app.query(LiveOutput) else None)
        await wait_for(pilot, lambda: "line2" in str(live.render()))
        card = app.query(ToolCard).last()
        assert card.status == "running" and "running for" in str(live.render())
        assert "line9" not in str(live.render())  # before the command ended
        await idle(pilot)
        assert not app.query(LiveOutput) and card.status == "ok"
        assert "line9" in body(card)


async def test_bang_runs_the_users_command_and_the_model_sees_its_output(repo):
    app = scripted_app(repo, ["It printed hello."])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "!echo hello from me")
        await idle(pilot)
        card = app.query(ToolCard).last()
        assert card.status == "ok" and not card.collapsed and "hello from me" in body(card)
        assert shown_users(app) == ["!echo hello from me"]
        await send(pilot, "what did it print?")
        await idle(pilot)
        engine = app.agent.engine
        users = [m["content"] for m in engine.requests[-1].messages if m["role"] == "user"]
        assert "I ran this command myself" in users[0] and "hello from me" in users[0]


async def test_at_path_completes_as_you_type_and_attaches_the_file(repo):
    app = scripted_app(repo, ["I see it."])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        popup = app.query_one(CompletionPopup)
        await pilot.press(*"explain @ap")
        await wait_for(pilot, lambda: popup.is_open)
        assert popup.items[0].value == "app.py"
        await pilot.press("tab")
        assert app.query_one(InputEditor).text == "explain @app.py " and not popup.is_open
        await pilot.press("enter")
        await idle(pilot)
        assert "attached app.py" in notes(app)
        sent = app.agent.engine.requests[0].messages[-1]["content"]
        assert sent.startswith("explain @app.py") and "return a - b" in sent


async def test_slash_popup_completes_and_runs_a_command(repo):
    app = scripted_app(repo, [])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        popup = app.query_one(CompletionPopup)
        await pilot.press(*"/co")
        await wait_for(pilot, lambda: popup.is_open)
        assert [c.value for c in popup.items] == ["/commit", "/compact", "/cost"]
        await pilot.press("down", "down", "enter")  # /cost runs at once
        await wait_for(pilot, lambda: app.query(UsageView))
        assert app.query_one(InputEditor).text == "" and not popup.is_open
        await pilot.press(*"/mode")  # typed out: it is first, /model second
        assert [c.value for c in popup.items] == ["/mode", "/model"]
        await pilot.press("escape")
        assert not popup.is_open and app.query_one(InputEditor).text == "/mode"


async def test_esc_esc_rewinds_files_and_conversation_and_redo_takes_it_back(repo):
    app = scripted_app(repo, [READ, FIX, "Fixed.", TWICE, "Doubled.", "Fresh start."], approval="full-auto")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await converse(pilot, "fix add", "double it")
        assert "(a + b) * 2" in (repo / "app.py").read_text()
        await pilot.press("escape", "escape")
        picker = await wait_for(pilot, lambda: app.screen if isinstance(app.screen, RewindPicker) else None)
        assert [t.text for t in picker.turns] == ["fix add", "double it"]
        await pilot.press("up", "enter", "enter")  # back to before "fix add": code and conversation
        await wait_for(pilot, lambda: "Rewound to before message 1" in notes(app))
        assert (repo / "app.py").read_text().endswith("a - b\n")
        assert shown_users(app) == [] and "Fixed." not in replies(app)
        assert app.query_one(InputEditor).text == "fix add"  # to edit and send again
        assert app.agent.conversation.messages == []

        app.query_one(InputEditor).clear()
        await send(pilot, "/redo")
        await wait_for(pilot, lambda: "Redone" in notes(app))
        assert "(a + b) * 2" in (repo / "app.py").read_text()
        assert shown_users(app) == ["fix add", "double it"] and "Doubled." in replies(app)
        # that note is gone with the rewind (a widget's removal lands after the Redone note)
        await wait_for(pilot, lambda: "Rewound to before" not in notes(app))

        await send(pilot, "/undo 2")  # straight to before message 2
        await wait_for(pilot, lambda: "Rewound to before message 2" in notes(app))
        assert (repo / "app.py").read_text().endswith("a + b\n")
        app.query_one(InputEditor).clear()
        await send(pilot, "something else")
        await idle(pilot)
        assert shown_users(app) == ["fix add", "something else"]
        await send(pilot, "/redo")
        await wait_for(pilot, lambda: "Nothing to redo" in notes(app))


async def test_a_resumed_session_shows_the_rewound_conversation(repo):
    first = scripted_app(repo, ["One.", "Two."])
    async with first.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await converse(pilot, "first question", "second question")
        await send(pilot, "/undo 2")
        await wait_for(pilot, lambda: "Rewound" in notes(first))
    app = scripted_app(repo, ["Three."], resume="last")
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "resumed session" in notes(app))
        assert shown_users(app) == ["first question"] and "Two." not in replies(app)
        await send(pilot, "third question")
        await idle(pilot)
        users = [m["content"] for m in app.agent.engine.requests[-1].messages if m["role"] == "user"]
        assert users == ["first question", "third question"]


async def test_shift_tab_cycles_the_approval_modes(repo):
    app = scripted_app(repo, [call("edit_file", path="app.py", old_string="a - b", new_string="a + b"),
                              "I would change the sign."])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        seen = []
        for _ in range(3):
            await pilot.press("shift+tab")
            seen.append((app.status.info.approval, app.agent.permissions.mode))
        assert seen == [("auto-edit", "auto-edit"), ("plan", "plan"), ("ask", "ask")]
        await pilot.press("shift+tab", "shift+tab")  # plan mode: the edit is refused, not asked
        assert app.agent.permissions.mode == "plan"
        await send(pilot, "fix add")
        await idle(pilot)
        assert app.query(ToolCard).last().status == "failed"
        assert (repo / "app.py").read_text().endswith("a - b\n")


async def test_cost_shows_tokens_per_turn_the_context_and_a_price(repo):
    app = scripted_app(repo, [READ, "It subtracts."])
    app.settings.price_input_per_mtok, app.settings.price_output_per_mtok = 0.5, 2.0
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "what does add do?")
        await idle(pilot)
        turn = app.ledger.turns[0]
        assert turn.requests == 2 and turn.tokens_in > 0 and turn.tokens_out > 0
        await send(pilot, "/cost")
        view = await wait_for(pilot, lambda: app.query(UsageView).first() if app.query(UsageView) else None)
        shown = plain(view.content)
        assert "what does add do?" in shown and "Estimated cost" in shown
        assert "tool descriptions" in shown and "system prompt" in shown


async def test_prompt_history_across_sessions_and_ctrl_r(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    first = scripted_app(repo, ["a", "b"])
    async with first.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await converse(pilot, "refactor the parser", "write the changelog")
    assert PromptHistory().texts()[-2:] == ["refactor the parser", "write the changelog"]
    assert not (repo / ".clover" / "history.jsonl").exists()  # never in the workspace
    app = scripted_app(repo, [])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        await pilot.press("up")
        assert editor.text == "write the changelog"  # the last session's prompt
        editor.clear()
        await pilot.press("ctrl+r")
        search = app.query_one(HistorySearch)
        assert search.is_open
        await pilot.press(*"pars")
        assert search.found == ["refactor the parser"]
        await pilot.press("enter")
        assert not search.is_open and editor.text == "refactor the parser" and app.focused is editor
        await pilot.press("ctrl+r", "escape")  # Esc leaves the editor as it was
        assert not search.is_open and editor.text == "refactor the parser"


async def test_keys_typed_right_after_ctrl_r_reach_the_search(repo, tmp_path, monkeypatch):
    """Queued at once, as a fast typist or a slow machine delivers them: the search is mounted
    on first use, and none of the keys behind Ctrl+R may land in the editor meanwhile."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    PromptHistory().add("refactor the parser")
    app = scripted_app(repo, [])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        for key in ("ctrl+r", "p", "a", "r", "s"):
            app.post_message(events.Key(key, None if key == "ctrl+r" else key))
        search = await wait_for(pilot, lambda: app.query(HistorySearch).first() if app.query(HistorySearch) else None)
        await pilot.pause()
        assert app.query_one(InputEditor).text == ""
        assert search.is_open and search.found == ["refactor the parser"]


async def test_resume_picker_lists_sessions_and_esc_keeps_this_one(repo):
    first = scripted_app(repo, ["Old answer."])
    async with first.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "an old question")
        await idle(pilot)
    app = scripted_app(repo, ["x"])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        current = app.agent.session.id
        await send(pilot, "/resume")
        await wait_for(pilot, lambda: app.screen.is_modal)
        assert all(s.id != current for s in app.screen.sessions)
        assert "an old question" in app.screen.sessions[0].line()
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.screen.is_modal)
        await asyncio.sleep(0.1)
        assert app.agent.session.id == current


async def test_keys_typed_faster_than_the_popup_follows_go_where_they_were_typed(repo):
    """`/undo 1` and Enter in one burst (a paste of keys, a fast typist): the popup opened at
    `/undo` must not take the Enter meant for the whole line."""
    app = scripted_app(repo, ["One.", "Two."])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await converse(pilot, "first", "second")
        editor = app.query_one(InputEditor)
        await pilot.press(*"/undo")
        assert app.query_one(CompletionPopup).is_open
        for key in ("space", "1", "enter"):  # queued at once: their Changed messages land behind them
            editor.post_message(events.Key(key, " " if key == "space" else key if key == "1" else None))
        await wait_for(pilot, lambda: "Rewound to before message 1" in notes(app))
        assert not isinstance(app.screen, RewindPicker)
