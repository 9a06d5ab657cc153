"""A bug inside a turn (issue 34): one line on screen, its traceback kept in the user's state
folder and the line saying where; the app goes on."""

from __future__ import annotations

from clover_code.agent.bug_log import errors_log
from tests.support.tui import idle, notes, ready, scripted_app, send, session_events


async def test_an_internal_error_keeps_its_traceback(repo, monkeypatch):
    app = scripted_app(repo, ["Fine again."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)

        def broken() -> list:
            raise RuntimeError("boom in the conversation")

        monkeypatch.setattr(app.agent.conversation, "request_messages", broken)
        await send(pilot, "hello")
        await idle(pilot)
        shown = notes(app)
        assert "internal error: RuntimeError: boom in the conversation (traceback in" in shown
        log = errors_log().read_text()
        assert "Traceback (most recent call last)" in log and "def broken" not in shown
        assert "boom in the conversation" in log and "request_messages" in log
        monkeypatch.undo()
        await send(pilot, "again")
        await idle(pilot)
        assert app.ledger.finished == 2


async def test_a_degenerate_reply_stops_with_a_note(repo):
    """A reply that turns into one pattern repeated is cut off: a note says why, the turn ends
    `gave_up`, and the app takes the next message."""
    app = scripted_app(repo, ["I will think about it. " + "kkkk " * 2000, "Back to normal."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "commit")
        await idle(pilot)
        assert "Stopped: the reply degenerated into one short pattern repeated" in notes(app)
        finished = [e for e in session_events(repo) if e["type"] == "TurnFinished"]
        assert [e["reason"] for e in finished] == ["gave_up"]
        assert sum(e["type"] == "BlockCommitted" for e in session_events(repo)) < 30  # of 250
        await send(pilot, "again")
        await idle(pilot)
        assert [e["reason"] for e in session_events(repo) if e["type"] == "TurnFinished"] == ["gave_up", "done"]
