"""/compact in the TUI: it says that it runs while the model writes the summary, and a summary
that would not make the context smaller is discarded with a note, the context as it was."""

from __future__ import annotations

from tests.support.tui import converse, notes, ready, scripted_app, send, wait_for

LONG_SUMMARY = {"content": "A summary that says more than the talk it replaces did. " * 20, "delay": 0.05}


async def test_a_compact_that_does_not_shrink_is_discarded_and_shown_while_it_runs(repo):
    app = scripted_app(repo, ["One.", "Two.", LONG_SUMMARY, "Three."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await converse(pilot, "first", "second")
        messages, context = list(app.agent.conversation.messages), app.ledger.context
        await send(pilot, "/compact")
        await wait_for(pilot, lambda: "Compacting the conversation" in notes(app))
        assert "Compaction discarded" not in notes(app)  # said while the model writes the summary
        assert app.status.info.state == "working"
        await wait_for(pilot, lambda: "Compaction discarded" in notes(app))
        await wait_for(pilot, lambda: app.status.info.state == "ready")
        assert app.agent.conversation.messages == messages and app.agent.conversation.compactions == []
        assert app.ledger.context == context and "compacted:" not in notes(app)
        await converse(pilot, "third")
        sent = [m["content"] for m in app.agent.engine.requests[-1].messages[1:]]
        assert sent == ["first", "One.", "second", "Two.", "third"]
