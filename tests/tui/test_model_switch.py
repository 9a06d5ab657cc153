"""`/model NAME` (issue 34): the working model stays until the new one is ready, and stays on
when the new one cannot load; messages sent meanwhile are answered, not queued forever."""

from __future__ import annotations

from clover_code.engine import EngineError
from clover_code.engine.scripted import ScriptedEngine
from clover_code.settings import Settings
from clover_code.ui.tui.app import make_app
from clover_code.ui.tui.widgets.assistant_message import AssistantMessage
from clover_code.wiring.assemble import build_agent
from tests.support.tui import idle, notes, ready, send, wait_for


def switching_app(repo, replies: dict[str, list[str]]):
    """An app whose factory builds a scripted engine named by settings.model, as the embedded
    engine loads the checkpoint folder it names; an unknown name fails to load."""
    settings = Settings(engine="scripted", model="good", approval="ask", sandbox=False)

    def factory(approver, resume_id):
        name = settings.model or ""
        if name not in replies:
            raise EngineError(f"no checkpoint at {name!r}: config.json not found")
        engine = ScriptedEngine(list(replies[name]), model=name)
        return build_agent(settings, repo, approver, resume=resume_id, engine=engine)

    return make_app(settings, repo, agent_factory=factory)


def replies_text(app) -> str:
    return "\n".join(m.text for m in app.query(AssistantMessage))


async def test_a_bad_model_keeps_the_old_one(repo):
    app = switching_app(repo, {"good": ["First answer.", "Still here."]})
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await idle(pilot)
        working = app.agent
        await send(pilot, "/model /no/such/checkpoint")
        await wait_for(pilot, lambda: "could not load" in notes(app))
        assert app.agent is working and app.settings.model == "good"
        assert app.status.info.state == "ready" and app.status.info.model == "good"
        assert "config.json not found" in notes(app) and "still on good" in notes(app)
        await send(pilot, "are you there?")
        await idle(pilot)
        assert "Still here." in replies_text(app)
        await send(pilot, "/model")
        await wait_for(pilot, lambda: "model good" in notes(app))  # not "still loading"


async def test_a_good_model_takes_over_the_conversation(repo):
    app = switching_app(repo, {"good": ["First answer."], "better": ["Better answer."]})
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "hello")
        await idle(pilot)
        first = app.agent
        await send(pilot, "/model better")
        await wait_for(pilot, lambda: app.agent is not first and app.status.info.state == "ready")
        assert app.status.info.model == "better" and "now on better" in notes(app)
        assert replies_text(app).count("First answer.") == 1  # the transcript is not drawn twice
        await send(pilot, "and now?")
        await idle(pilot)
        assert "Better answer." in replies_text(app)
        sent = app.agent.engine.requests[-1].messages
        assert any(m.get("content") == "hello" for m in sent)  # the conversation went on
