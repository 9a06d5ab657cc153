"""The task tool: a sub-agent's final answer reaches the parent, its context is its own, and
its tool calls stay inside the parent's permissions (judged from the work tree and git)."""

import asyncio
import subprocess
from pathlib import Path

import pytest

from clover_code.agent.agent_defs import load_agent_defs, parse_agent_def
from clover_code.agent.events import ApprovalNeeded, ToolFinished
from clover_code.engine.scripted import ScriptedEngine
from clover_code.settings import Settings
from clover_code.wiring.assemble import build_agent
from tests.support.agent import RecordingApprover, call, collect

SECRET_LINE = "the median lives in stats.py, line 42"


@pytest.fixture(autouse=True)
def own_config(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "config" / "clover-code"


class OneAtATime(ScriptedEngine):
    """A scripted engine that records how many requests ever streamed at once."""

    def __init__(self, replies):
        super().__init__(replies, block_size=4)  # a call completes blocks before its reply ends
        self.active = self.most = 0

    async def stream(self, request):
        self.active += 1
        self.most = max(self.most, self.active)
        try:
            async for block in super().stream(request):
                await asyncio.sleep(0)  # let a sub-agent that does not wait start meanwhile
                yield block
        finally:
            self.active -= 1


def agent_on(repo: Path, replies, approval="full-auto", approver=None):
    engine = OneAtATime(replies)
    settings = Settings(engine="scripted", approval=approval, sandbox=False)
    agent = build_agent(settings, repo, approver or RecordingApprover(), engine=engine)
    return agent, engine


def task_result(events) -> ToolFinished:
    (finished,) = [e for e in events if isinstance(e, ToolFinished) and e.call.name == "task"]
    return finished


def git_status(repo: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout


def test_the_answer_reaches_the_parent_and_nothing_else_does(git_repo):
    (git_repo / "stats.py").write_text(f"# {SECRET_LINE}\n")
    replies = [
        call("task", description="find the median", prompt="Where is the median computed?")
        + " While it works I wait for its answer, which comes after this reply has ended.",
        call("read_file", path="stats.py"),  # the sub-agent's own request
        "It is computed in stats.py.",
        "The sub-agent says stats.py.",
    ]
    agent, engine = agent_on(git_repo, replies)
    events = asyncio.run(collect(agent, "where is the median?"))
    finished = task_result(events)
    assert finished.ok
    assert finished.output.startswith("It is computed in stats.py.")
    assert "tokens]" in finished.output and isinstance(finished.data["tokens"], int)
    assert "read_file stats.py" in str(finished.data["transcript"])
    # a fresh context: the sub-agent's first request saw the sub-task, not the parent's conversation
    child_first = engine.requests[1].messages
    assert [m["role"] for m in child_first] == ["system", "user"]
    assert child_first[1]["content"] == "Where is the median computed?"
    assert "task" not in {t["function"]["name"] for t in engine.requests[1].tools}
    # only the answer came back: the file the sub-agent read is in no request of the parent's
    assert SECRET_LINE in str(engine.requests[2].messages)
    assert SECRET_LINE not in str(engine.requests[3].messages)
    assert "It is computed in stats.py." in str(engine.requests[3].messages)
    assert engine.most == 1  # the embedded engine serves one request at a time


def test_in_plan_mode_the_subagent_changes_nothing(git_repo):
    replies = [
        call("task", description="fix it", prompt="Fix the readme."),
        call("write_file", path="notes.md", content="new\n") + call("run_shell", command="touch marker"),
        "I could not change anything.",
        "Plan: 1. rewrite README.md",
    ]
    agent, _ = agent_on(git_repo, replies, approval="plan")
    events = asyncio.run(collect(agent, "fix the readme"))
    finished = task_result(events)
    assert "Not allowed" in str(finished.data["transcript"])
    assert not (git_repo / "notes.md").exists() and not (git_repo / "marker").exists()
    assert git_status(git_repo) == ""


def test_in_ask_mode_the_subagent_asks_the_parents_approver(git_repo):
    approver = RecordingApprover("no")
    replies = [
        call("task", description="fix it", prompt="Fix the readme."),
        call("write_file", path="notes.md", content="new\n"),
        "The user declined.",
        "Done.",
    ]
    agent, _ = agent_on(git_repo, replies, approval="ask", approver=approver)
    asyncio.run(collect(agent, "fix the readme"))
    assert [type(q) for q in approver.asked] == [ApprovalNeeded]
    assert approver.asked[0].call.name == "write_file"
    assert not (git_repo / "notes.md").exists() and git_status(git_repo) == ""


def test_a_definition_narrows_the_tools_and_a_missing_one_is_an_error(git_repo, own_config):
    folder = git_repo / ".clover" / "agents"
    folder.mkdir(parents=True)
    (folder / "reader.md").write_text("---\nname: reader\ndescription: reads files\ntools: [read_file, grep]\n"
                                      "---\nYou only read.\n")
    replies = [
        call("task", description="read", prompt="Read README.md.", agent="reader"),
        "It says hello.",
        call("task", description="x", prompt="x", agent="nobody"),
        "Done.",
    ]
    agent, engine = agent_on(git_repo, replies)
    assert "- reader: reads files" in agent.conversation.system
    events = asyncio.run(collect(agent, "go"))
    first, second = [e for e in events if isinstance(e, ToolFinished)]
    assert first.ok and first.data["agent"] == "reader"
    assert {t["function"]["name"] for t in engine.requests[1].tools} == {"read_file", "grep"}
    assert "You only read." in engine.requests[1].messages[0]["content"]
    assert not second.ok and "no sub-agent 'nobody'" in second.output


def test_definitions_from_both_folders_the_repositorys_win(tmp_path, own_config):
    user, repo = own_config / "agents", tmp_path / "repo" / ".clover" / "agents"
    for folder, text in ((user, "mine"), (repo, "the project's")):
        folder.mkdir(parents=True)
        (folder / "helper.md").write_text(f"---\nname: helper\ndescription: {text}\n---\nbody\n")
    (user / "broken.md").write_text("no front matter\n")
    defs, problems = load_agent_defs([user, repo])
    assert defs["helper"].description == "the project's"
    assert "general" in defs and len(problems) == 1 and "broken.md" in problems[0]
    with pytest.raises(ValueError, match="description"):
        (user / "bare.md").write_text("---\nname: bare\n---\n")
        parse_agent_def(user / "bare.md")


def test_a_subagents_changes_are_the_parent_turns_to_undo(git_repo):
    replies = [
        call("task", description="add notes", prompt="Write notes.md."),
        call("write_file", path="notes.md", content="new\n"),
        "Wrote notes.md.",
        "Done.",
    ]
    agent, _ = agent_on(git_repo, replies, approval="auto-edit")
    asyncio.run(collect(agent, "add notes"))
    assert (git_repo / "notes.md").read_text() == "new\n"

    async def undo():
        await agent.rewind(0)
        await agent.aclose()

    asyncio.run(undo())
    assert not (git_repo / "notes.md").exists() and git_status(git_repo) == ""
