"""The embedded engine on a tiny random checkpoint drives the real loop: whatever the
model writes (noise, broken markup, nothing), every task ends with a TurnFinished."""

import asyncio

import pytest

from clover_code.agent.context import Conversation
from clover_code.agent.events import (
    BlockCommitted,
    ErrorEvent,
    ToolCallParsed,
    ToolFinished,
    TurnFinished,
    UserMessage,
)
from clover_code.agent.loop import Agent, AgentSettings
from clover_code.agent.permissions import Permissions
from clover_code.engine import ChatRequest, ToolCall, make_engine
from clover_code.tools import Registry, ToolContext, default_registry
from clover_code.tools.workspace import Workspace
from tests.support.agent import RecordingApprover, collect


@pytest.mark.parametrize("ckpt", ["tiny_attention_ckpt", "tiny_hybrid_ckpt"])
def test_tiny_checkpoint_drives_the_loop(ckpt, request, git_repo):
    engine = make_engine("embedded", model=str(request.getfixturevalue(ckpt)))
    tools = default_registry().tools
    registry = Registry([tools[n] for n in ("read_file", "glob", "run_shell")])
    conversation = Conversation("You are a coding assistant.", registry.schemas())
    # A finished earlier exchange, so the chat template renders tool calls and results too.
    earlier = ToolCall("call_1", "read_file", '{"path": "README.md"}')
    for event in (UserMessage("Read the README."), ToolCallParsed(earlier), ToolFinished(earlier, True, "hello", 0.0),
                  TurnFinished("done", "")):
        conversation.apply(event)
    approver = RecordingApprover(*["no"] * 20)
    agent = Agent(engine, registry, ToolContext(Workspace(git_repo)), approver,
                  AgentSettings(max_turns=2, max_tokens=48, approval="ask"),
                  permissions=Permissions("ask"), conversation=conversation)

    async def main():
        try:
            return [await collect(agent, task) for task in ("What does README.md say?", "List the files.")]
        finally:
            await engine.aclose()

    runs = asyncio.run(main())
    for events in runs:
        finished = events[-1]
        assert isinstance(finished, TurnFinished) and finished.reason in ("done", "max_turns", "gave_up")
        assert not [e for e in events if isinstance(e, ErrorEvent)]
        blocks = [e.block for e in events if isinstance(e, BlockCommitted)]
        assert blocks and all(b.forward_passes and b.forward_passes >= 1 for b in blocks)
        assert finished.stats["forward_passes"] == sum(b.forward_passes for b in blocks)
        assert finished.stats["tokens"] == sum(b.tokens for b in blocks) <= 48 * finished.stats["turns"]
    roles = [m["role"] for m in agent.conversation.messages]
    assert roles[:3] == ["user", "assistant", "tool"] and roles.count("user") == 3


def test_build_agent_on_the_embedded_engine(tiny_attention_ckpt, git_repo, tmp_path):
    from clover_code.agent.permissions import ModeApprover
    from clover_code.engine import EngineError
    from clover_code.settings import Settings
    from clover_code.wiring.assemble import build_agent

    agent = build_agent(Settings(model=str(tiny_attention_ckpt), block_size=16), git_repo, ModeApprover())
    assert agent.engine.info.name == "embedded" and agent.engine.info.block_size == 16
    request = ChatRequest(agent.conversation.request_messages(), agent.conversation.tools)
    assert agent.conversation.tokens(agent.engine) == agent.engine.count_tokens(request)  # exact, from the tokenizer
    with pytest.raises(EngineError, match="model folder not found"):
        build_agent(Settings(model=str(tmp_path / "nope")), git_repo, ModeApprover())
