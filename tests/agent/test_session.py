"""Session logs: every event on disk as it happens, resume, cancel mid-stream."""

import asyncio
import json

import pytest

from clover_code.agent.events import BlockCommitted, TurnFinished, from_json, to_json
from clover_code.agent.permissions import ModeApprover
from clover_code.agent.session import SessionError, SessionLog
from clover_code.engine import EngineError
from clover_code.engine.scripted import ScriptedEngine
from clover_code.settings import Settings
from clover_code.wiring.assemble import build_agent
from tests.support.agent import call, collect


def script(path, *replies) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in replies))
    return f"scripted:{path}"


def test_log_written_per_event_and_resumed(git_repo, tmp_path):
    (git_repo / "a.py").write_text("x = 1\n")
    settings = Settings(engine=script(tmp_path / "one.jsonl", call("read_file", path="a.py"),
                                      "It sets x to 1."), approval="full-auto")
    agent = build_agent(settings, git_repo, ModeApprover("yes"))
    seen = []

    async def run():
        async for event in agent.run("what is in a.py?"):
            on_disk = agent.session.path.read_text().splitlines()
            assert from_json(json.loads(on_disk[len(seen)])) == event  # logged before we see it
            seen.append(event)

    asyncio.run(run())
    log = SessionLog.open(git_repo, "last")
    assert log.path == agent.session.path and log.path.parent == git_repo / ".clover" / "sessions"
    assert log.events() == seen
    assert (log.path.parent / ".gitignore").read_text() == "*\n"

    settings.engine = script(tmp_path / "two.jsonl", "x is 1, as I said.")
    resumed = build_agent(settings, git_repo, ModeApprover("yes"), resume=log.id[:10])
    assert resumed.session.path == log.path
    assert resumed.conversation.messages == agent.conversation.messages
    events = asyncio.run(collect(resumed, "and x?"))
    assert events[-1].reason == "done"
    request = resumed.engine.requests[0].messages
    assert [m["role"] for m in request] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert request[-1]["content"] == "and x?" and "x = 1" in request[3]["content"]
    assert SessionLog.open(git_repo).events()[len(seen):] == events  # appended to the same log


def test_resume_does_not_restore_always_rules(git_repo, tmp_path):
    """The log lies in the workspace, where the shell can forge it: the user is asked again."""
    settings = Settings(engine=script(tmp_path / "s.jsonl", call("run_shell", command="echo 1"), "ok"),
                        approval="ask", sandbox=False)
    asyncio.run(collect(build_agent(settings, git_repo, ModeApprover("always")), "echo"))
    resumed = build_agent(settings, git_repo, ModeApprover("no"), resume="last")
    assert resumed.permissions.rules == []


def test_resume_errors(git_repo, tmp_path):
    settings = Settings(engine=script(tmp_path / "s.jsonl", "hi"), approval="full-auto")
    with pytest.raises(SessionError, match="no sessions to resume"):
        build_agent(settings, git_repo, ModeApprover(), resume="last")
    build_agent(settings, git_repo, ModeApprover())
    with pytest.raises(SessionError, match="no session matches 'nope'"):
        build_agent(settings, git_repo, ModeApprover(), resume="nope")


def test_a_line_cut_by_a_crash_is_skipped(git_repo):
    log = SessionLog.create(git_repo)
    log.append(TurnFinished("done", "x"))
    with open(log.path, "a") as fh:
        fh.write('{"type": "UserMe')
    assert log.events() == [TurnFinished("done", "x")]


def test_cancel_mid_stream_leaves_a_complete_log(git_repo, make_agent):
    log = SessionLog.create(git_repo)
    engine = ScriptedEngine(["word " * 200], block_size=4, delay=0.01)
    agent = make_agent(None, engine=engine, session=log)

    async def main():
        gen = agent.run("talk")
        async for event in gen:
            if isinstance(event, BlockCommitted) and event.block.index == 3:
                break
        await gen.aclose()

    asyncio.run(main())
    events = log.events()
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "cancelled"
    blocks = [e for e in events if isinstance(e, BlockCommitted)]
    assert 4 <= len(blocks) < 50  # generation stopped soon after the close
    lines = log.path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == [json.loads(json.dumps(to_json(e))) for e in events]
    assert agent.conversation.messages[-1]["role"] == "assistant"


def test_engine_selection(git_repo):
    with pytest.raises(EngineError, match="--model"):
        build_agent(Settings(), git_repo, ModeApprover())
    with pytest.raises(EngineError, match="cannot read scripted replies"):
        build_agent(Settings(engine="scripted:/nonexistent.jsonl"), git_repo, ModeApprover())
    agent = build_agent(Settings(endpoint="http://127.0.0.1:9/v1", model="m"), git_repo, ModeApprover())
    assert agent.engine.info.name == "remote"


def test_open_by_path(git_repo):
    log = SessionLog.create(git_repo)
    assert SessionLog.open(git_repo, str(log.path)).path == log.path


def test_unwritable_session_folder_is_a_clear_error(git_repo):
    (git_repo / ".clover").write_text("not a folder")
    with pytest.raises(SessionError, match="cannot write the session log"):
        SessionLog.create(git_repo)


def test_clear_is_logged_and_survives_resume(git_repo, tmp_path):
    settings = Settings(engine=script(tmp_path / "one.jsonl", "Hello."), approval="full-auto")
    agent = build_agent(settings, git_repo, ModeApprover("yes"))
    asyncio.run(collect(agent, "hi"))
    assert agent.clear().dropped_messages == 2 and agent.conversation.messages == []

    settings.engine = script(tmp_path / "two.jsonl", "Fresh start.")
    resumed = build_agent(settings, git_repo, ModeApprover("yes"), resume="last")
    assert resumed.conversation.messages == []
    asyncio.run(collect(resumed, "again"))
    assert [m["role"] for m in resumed.engine.requests[0].messages] == ["system", "user"]
