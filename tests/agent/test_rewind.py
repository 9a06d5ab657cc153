"""Rewind and redo (files and conversation together), `!cmd`, `@path` and live shell output,
on a real temp git repo with the real tools."""

import asyncio
import json
import threading

from clover_code.agent.context import Conversation
from clover_code.agent.events import Redone, Rewound, ToolFinished, ToolOutput, UserMessage, UserShell
from clover_code.agent.loop import Agent, AgentSettings
from clover_code.agent.session import SessionLog
from clover_code.engine.scripted import ScriptedEngine
from clover_code.tools import ToolContext, default_registry
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoints import Checkpoints
from tests.support.agent import RecordingApprover, call, collect


def edit(old: str, new: str) -> str:
    return call("edit_file", path="calc.py", old_string=old, new_string=new)


async def three_turns(agent) -> None:
    await collect(agent, "read it")  # turn 0 changes nothing
    await collect(agent, "make it add")  # turn 1: a - b -> a + b
    await collect(agent, "make it multiply")  # turn 2: a + b -> a * b


def turn_replies() -> list[str]:
    return [call("read_file", path="calc.py"), "Read.",
            edit("a - b", "a + b"), "Adds now.",
            edit("a + b", "a * b"), "Multiplies now."]


def test_rewind_restores_files_and_conversation_and_redo_takes_it_back(git_repo, make_agent):
    (git_repo / "calc.py").write_text("a - b\n")
    agent = make_agent(turn_replies() + ["After the rewind."])
    asyncio.run(three_turns(agent))
    assert [t.text for t in agent.conversation.turns()] == ["read it", "make it add", "make it multiply"]
    before = list(agent.conversation.messages)

    event = asyncio.run(agent.rewind(1))
    assert isinstance(event, Rewound) and event.turn == 1 and "calc.py" in event.files
    assert (git_repo / "calc.py").read_text() == "a - b\n"  # as before turn 1
    assert [m["content"] for m in agent.conversation.messages if m["role"] == "user"] == ["read it"]
    assert agent.conversation.can_redo

    redone = asyncio.run(agent.redo())
    assert isinstance(redone, Redone) and "calc.py" in redone.files
    assert (git_repo / "calc.py").read_text() == "a * b\n"
    assert agent.conversation.messages == before

    asyncio.run(agent.rewind(2))
    assert (git_repo / "calc.py").read_text() == "a + b\n"
    asyncio.run(collect(agent, "say something"))  # a new turn: the rewound one is gone for good
    assert not agent.conversation.can_redo and asyncio.run(agent.redo()) is None
    users = [m["content"] for m in agent.engine.requests[-1].messages if m["role"] == "user"]
    assert users == ["read it", "make it add", "say something"]


def test_a_rewound_session_resumes_as_rewound(git_repo, make_agent):
    (git_repo / "calc.py").write_text("a - b\n")
    log = SessionLog.create(git_repo)
    agent = make_agent(turn_replies(), session=log)
    asyncio.run(three_turns(agent))
    asyncio.run(agent.rewind(1))
    log.close()
    replayed = Conversation("You are a test agent.")
    for event in SessionLog.open(git_repo, log.id).events():
        replayed.apply(event)
    assert replayed.messages == agent.conversation.messages
    assert [t.text for t in replayed.turns()] == ["read it"]
    assert sum(line["type"] == "Rewound" for line in map(json.loads, log.path.read_text().splitlines())) == 1


def test_rewinding_to_a_turn_that_changed_nothing_keeps_the_files(git_repo, make_agent):
    (git_repo / "calc.py").write_text("a - b\n")
    agent = make_agent(turn_replies())
    asyncio.run(three_turns(agent))
    (git_repo / "notes.txt").write_text("mine\n")  # the user's own file, made after the last turn
    event = asyncio.run(agent.rewind(0))
    assert (git_repo / "calc.py").read_text() == "a - b\n" and "restored: calc.py" in event.files
    # Not this session's file: a rewind puts back only what the session changed (issue 34).
    assert (git_repo / "notes.txt").read_text() == "mine\n"
    asyncio.run(agent.redo())
    assert (git_repo / "notes.txt").read_text() == "mine\n"


def test_user_shell_output_joins_the_conversation_and_streams(git_repo, make_agent):
    agent = make_agent(["Seen it."])
    events = asyncio.run(collect_shell(agent, "printf 'one\\n'; sleep 0.3; printf 'two\\n'"))
    live = [e for e in events if isinstance(e, ToolOutput)]
    assert live and live[0].text.startswith("one")  # before the command ended
    done = events[-1]
    assert isinstance(done, UserShell) and done.ok and "one\ntwo" in done.output
    asyncio.run(collect(agent, "what did it print?"))
    users = [m["content"] for m in agent.engine.requests[-1].messages if m["role"] == "user"]
    assert "I ran this command myself" in users[0] and "two" in users[0]


def test_live_output_of_the_models_command_is_never_logged(git_repo, make_agent):
    log = SessionLog.create(git_repo)
    agent = make_agent([call("run_shell", command="for i in 1 2 3; do echo line$i; sleep 0.1; done"), "Done."],
                       session=log)
    events = asyncio.run(collect(agent, "count"))
    live = "".join(e.text for e in events if isinstance(e, ToolOutput))
    assert "line1" in live
    logged = [json.loads(line)["type"] for line in log.path.read_text().splitlines()]
    assert "ToolOutput" not in logged and "ToolFinished" in logged
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert "line3" in finished.output


def test_at_path_attaches_the_file(git_repo, make_agent):
    (git_repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (git_repo / "pkg").mkdir()
    (git_repo / "pkg" / "mod.py").write_text("x = 1\n")
    agent = make_agent(["Got it."])
    events = asyncio.run(collect(agent, "look at @calc.py, and @pkg/ but not me@example.com or @missing.py"))
    message = next(e for e in events if isinstance(e, UserMessage))
    assert [a.path for a in message.attachments] == ["calc.py", "pkg/"]
    sent = agent.engine.requests[0].messages[1]["content"]
    assert sent.startswith("look at @calc.py")
    assert '<file path="calc.py">' in sent and "return a - b" in sent and "mod.py" in sent
    # a mention counts as a read: the model may edit it at once
    agent.engine.replies = [edit("a - b", "a + b"), "Done."]
    asyncio.run(collect(agent, "fix it"))
    assert "a + b" in (git_repo / "calc.py").read_text()


async def collect_shell(agent, command: str) -> list:
    return [event async for event in agent.user_shell(command)]


def test_rewinding_the_first_turn_empties_the_conversation(make_agent):
    agent = make_agent(["one", "two"])
    asyncio.run(collect(agent, "hi"))
    asyncio.run(agent.rewind(0))
    assert agent.conversation.messages == [] and agent.conversation.turn_count == 0
    asyncio.run(collect(agent, "again"))
    assert [m["role"] for m in agent.engine.requests[-1].messages] == ["system", "user"]


def test_a_code_only_rewind_keeps_the_conversation_and_a_conversation_only_one_the_files(git_repo, make_agent):
    (git_repo / "calc.py").write_text("a - b\n")
    log = SessionLog.create(git_repo)
    agent = make_agent(turn_replies(), session=log)
    asyncio.run(three_turns(agent))
    before = list(agent.conversation.messages)
    event = asyncio.run(agent.rewind(1, "code"))
    assert event.scope == "code" and event.files_kept and (git_repo / "calc.py").read_text() == "a - b\n"
    assert agent.conversation.messages == before and agent.conversation.pending_redo() == [(3, 3)]
    replayed = Conversation("You are a test agent.")
    for logged in SessionLog.open(git_repo, log.id).events():
        replayed.apply(logged)
    assert replayed.messages == before and replayed.pending_redo() == [(3, 3)]
    asyncio.run(agent.redo())
    assert (git_repo / "calc.py").read_text() == "a * b\n"

    event = asyncio.run(agent.rewind(1, "conversation"))
    assert event.files == "" and (git_repo / "calc.py").read_text() == "a * b\n"
    assert [t.text for t in agent.conversation.turns()] == ["read it"]
    asyncio.run(agent.redo())
    assert agent.conversation.messages == before and (git_repo / "calc.py").read_text() == "a * b\n"


class AskedFirst(Checkpoints):
    """Checkpoints whose turn bookkeeping waits until the model has been asked: it must run
    beside the first request, not before it (issue 42, item 15)."""

    def __init__(self, root, **kwargs):
        super().__init__(root, **kwargs)
        self.asked = threading.Event()

    def begin_turn(self, turn=None):
        if not self.asked.wait(timeout=60):
            raise AssertionError("the first request waited for the checkpoints' bookkeeping")
        super().begin_turn(turn)


class Asking(ScriptedEngine):
    def __init__(self, replies, asked: threading.Event):
        super().__init__(replies)
        self.asked = asked

    async def stream(self, request):
        self.asked.set()
        async for block in super().stream(request):
            yield block


def test_the_turn_bookkeeping_runs_beside_the_first_request_and_the_first_checkpoint_waits(git_repo, tmp_path):
    (git_repo / "calc.py").write_text("a - b\n")
    checkpoints = AskedFirst(git_repo, cache_dir=tmp_path / "cache")
    ctx = ToolContext(Workspace(git_repo), sandbox=True, shell_timeout=30, checkpoints=checkpoints)
    engine = Asking([call("read_file", path="calc.py"), edit("a - b", "a + b"), "Adds now."], checkpoints.asked)
    agent = Agent(engine, default_registry(), ctx, RecordingApprover(), AgentSettings(approval="full-auto"),
                  system_prompt="You are a test agent.")
    events = asyncio.run(collect(agent, "make it add"))
    assert [e.ok for e in events if isinstance(e, ToolFinished)] == [True, True]
    assert checkpoints.kept_since() == 0  # the checkpoint is turn 0's: taken after the bookkeeping
    event = asyncio.run(agent.rewind(0))
    assert (git_repo / "calc.py").read_text() == "a - b\n" and "restored: calc.py" in event.files
