"""Pilot tests of the TUI's flows, driving the real Agent with a ScriptedEngine."""

from __future__ import annotations

import subprocess

from clover_code.ui.tui.widgets.approval_prompt import ApprovalPrompt
from clover_code.ui.tui.widgets.assistant_message import AssistantMessage
from clover_code.ui.tui.widgets.markdown_block import MarkdownBlock
from clover_code.ui.tui.widgets.tool_card import ToolCard
from clover_code.ui.tui.widgets.user_message import UserMessage
from tests.support.tui import call, converse, idle, notes, ready, scripted_app, send, session_events, wait_for

READ = call("read_file", path="app.py")
FIX = call("edit_file", path="app.py", old_string="a - b", new_string="a + b")


def replies_text(app) -> str:
    return "\n".join(m.text for m in app.query(AssistantMessage))


async def test_send_and_stream(repo):
    reply = "Hello **there**. " + " ".join(f"word{i}" for i in range(40))
    app = scripted_app(repo, [reply], delay=0.1)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "say hello")
        # Grows block by block: seen partially before it is finished.
        partial = await wait_for(pilot, lambda: 0 < len(replies_text(app)) < len(reply) and replies_text(app))
        assert reply.startswith(partial)
        fresh = await wait_for(pilot, lambda: [b for b in app.query(MarkdownBlock) if b._fresh_from is not None])
        assert fresh  # the newest block is highlighted
        await idle(pilot)
        assert [m.text for m in app.query(UserMessage)] == ["say hello"]
        message = app.query_one(AssistantMessage)
        assert message.frozen and message.text == reply
        assert not message.live and not message.children  # one widget, no tree
        info = app.status.info
        assert info.engine == "scripted" and info.block_tokens and info.context_used > 0
        assert info.session_tokens == 42  # the scripted engine counts words


async def test_tool_card_for_a_read(repo):
    app = scripted_app(repo, [call("read_file", path="app.py"), "It subtracts."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "what does add do?")
        await idle(pilot)
        card = app.query(ToolCard).last()
        assert card.call.name == "read_file" and card.status == "ok" and card.seconds is not None
        assert "read_file  app.py" in str(card.title) and "✓" in str(card.title)
        assert "It subtracts." in replies_text(app)


async def test_approve_yes_edits_after_showing_the_diff(repo):
    app = scripted_app(repo, [READ, FIX, "Fixed."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: prompt.request is not None)
        assert "-    return a - b" in prompt.request.preview
        assert (repo / "app.py").read_text().endswith("a - b\n")  # not before the answer
        assert app.query(ToolCard).last().status == "approval"
        await pilot.press("y")
        await idle(pilot)
        assert (repo / "app.py").read_text().endswith("a + b\n")
        card = app.query(ToolCard).last()
        assert card.status == "ok" and not card.collapsed  # the diff shows
        assert app.focused is app.query_one("#input")


async def test_approve_always_stops_asking(repo):
    echo = call("run_shell", command="echo hi")
    app = scripted_app(repo, [echo, echo, "Done."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "say hi twice")
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: prompt.request is not None)
        await pilot.press("a")
        await idle(pilot)
        cards = list(app.query(ToolCard))
        assert [c.status for c in cards] == ["ok", "ok"]
        assert "shell:echo hi*" in app.agent.permissions.rules
        answers = [e["answer"] for e in session_events(repo) if e["type"] == "ApprovalAnswered"]
        assert answers == ["always"]


async def test_approve_no_tells_the_model(repo):
    app = scripted_app(repo, [READ, FIX, "OK, I will not."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        await wait_for(pilot, lambda: app.query_one(ApprovalPrompt).request is not None)
        await pilot.press("n")
        await idle(pilot)
        assert (repo / "app.py").read_text().endswith("a - b\n")
        assert app.query(ToolCard).last().status == "denied"
        tool_messages = [m for m in app.agent.conversation.messages if m["role"] == "tool"]
        assert "declined" in tool_messages[-1]["content"]


async def test_escape_cancels_mid_block_and_the_next_task_runs(repo):
    long = " ".join(f"w{i}" for i in range(400))
    app = scripted_app(repo, [long, "Second answer."], delay=0.05)
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "write a lot")
        await wait_for(pilot, lambda: replies_text(app))
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy)
        shown = replies_text(app)
        assert 0 < len(shown) < len(long) // 2
        assert app.query_one(AssistantMessage).frozen
        await wait_for(pilot, lambda: any(e["type"] == "TurnFinished" and e["reason"] == "cancelled"
                                          for e in session_events(repo)))
        await pilot.pause(0.3)
        assert replies_text(app) == shown  # nothing arrives after the cancel
        await send(pilot, "again")
        await idle(pilot)
        assert "Second answer." in replies_text(app)


async def test_escape_during_approval_cancels_the_call(repo):
    app = scripted_app(repo, [READ, FIX])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        await wait_for(pilot, lambda: app.query_one(ApprovalPrompt).request is not None)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy)
        assert app.query_one(ApprovalPrompt).request is None
        assert app.query(ToolCard).last().status == "cancelled"
        assert (repo / "app.py").read_text().endswith("a - b\n")


async def test_undo_and_diff_restore_the_files(repo):
    app = scripted_app(repo, [READ, FIX, "Fixed."], approval="full-auto")
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        await idle(pilot)
        assert (repo / "app.py").read_text().endswith("a + b\n")
        await send(pilot, "/diff")
        await wait_for(pilot, lambda: app.query(".-diff"))
        await send(pilot, "/undo")  # the rewind picker, the latest message chosen
        await wait_for(pilot, lambda: app.screen.is_modal)
        await pilot.press("enter", "enter")  # that message; code and conversation, the default
        await wait_for(pilot, lambda: "Rewound to before message 1" in notes(app))
        assert (repo / "app.py").read_text().endswith("a - b\n")


async def test_commit_command(repo):
    app = scripted_app(repo, [READ, FIX, "Fixed."], approval="full-auto")
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        await idle(pilot)
        await send(pilot, "/commit Fix add")
        await wait_for(pilot, lambda: "Committed" in notes(app))
    log = subprocess.run(["git", "log", "--format=%s"], cwd=repo, capture_output=True, text=True).stdout
    assert log.splitlines()[0] == "Fix add"


async def test_info_commands(repo):
    app = scripted_app(repo, ["Hi."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "hi")
        await idle(pilot)
        for line, expected in [("/help", "/undo"), ("/model", "engine scripted"),
                               ("/stats", "tokens 1"), ("/mode", "approval mode: ask"),
                               ("/nonsense", "unknown command /nonsense")]:
            await send(pilot, line)
            await wait_for(pilot, lambda expected=expected: expected in notes(app))
        await send(pilot, "/mode auto-edit")
        await wait_for(pilot, lambda: app.agent.permissions.mode == "auto-edit")
        assert app.status.info.approval == "auto-edit"
        app.settings.sandbox = app.agent.ctx.sandbox = False  # as with --no-sandbox in ask mode
        await send(pilot, "/mode full-auto")
        await wait_for(pilot, lambda: app.agent.permissions.mode == "full-auto")
        assert app.agent.ctx.sandbox is True
        await send(pilot, "/mode sideways")
        await wait_for(pilot, lambda: "unknown mode" in notes(app))
        await send(pilot, "/denoise")
        await wait_for(pilot, lambda: app.query_one("#denoise").is_open)


async def test_clear_compact_and_init(repo):
    app = scripted_app(repo, ["One.", "Two.", "A summary of the talk.", "Three."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await converse(pilot, "first", "second")
        await send(pilot, "/compact")
        await wait_for(pilot, lambda: "Compaction discarded" in notes(app))  # its summary is no shorter
        await send(pilot, "/clear")
        await wait_for(pilot, lambda: not app.query(UserMessage))
        assert app.agent.conversation.messages == []
        await send(pilot, "/init")
        await wait_for(pilot, lambda: (repo / "AGENTS.md").exists())
        assert "python -m pytest" not in (repo / "AGENTS.md").read_text() or True
        await send(pilot, "/init")
        await wait_for(pilot, lambda: "already exists" in notes(app))


async def test_resume_shows_the_earlier_session(repo):
    first = scripted_app(repo, [call("read_file", path="app.py"), "It subtracts."])
    async with first.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "what does add do?")
        await idle(pilot)
    again = scripted_app(repo, ["Still subtracts."], resume="last")
    async with again.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: again.query(UserMessage))
        assert [m.text for m in again.query(UserMessage)] == ["what does add do?"]
        assert "It subtracts." in replies_text(again)
        assert [c.status for c in again.query(ToolCard)] == ["ok"]
        await send(pilot, "and now?")
        await idle(pilot)
        assert "Still subtracts." in replies_text(again)
        # The model saw the earlier turn.
        assert any("what does add do?" in str(m) for m in again.agent.engine.requests[-1].messages)


async def test_resume_command(repo):
    first = scripted_app(repo, ["Earlier answer."])
    async with first.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "earlier question")
        await idle(pilot)
    app = scripted_app(repo, ["x"])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "/resume")  # the picker: the earlier session, previewed
        await wait_for(pilot, lambda: app.screen.is_modal)
        preview = app.screen.query_one("#preview")
        await wait_for(pilot, lambda: "Earlier answer." in str(preview.render()))
        assert "earlier question" in str(preview.render())
        await pilot.press("enter")
        await wait_for(pilot, lambda: "Earlier answer." in replies_text(app))


async def test_quit_command_and_ctrl_c_twice(repo):
    app = scripted_app(repo, [])
    async with app.run_test() as pilot:
        await ready(pilot)
        await send(pilot, "/quit")
        await pilot.pause(0.1)
        assert not app.is_running
    app = scripted_app(repo, [])
    async with app.run_test() as pilot:
        await ready(pilot)
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)
        assert app.is_running
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)
        assert not app.is_running
