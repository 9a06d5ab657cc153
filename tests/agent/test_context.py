"""Conversation building, token accounting and compaction."""

import asyncio

from clover_code.agent.context import SUMMARY_HEADER, Conversation, digest
from clover_code.agent.events import (
    BlockCommitted,
    Compacted,
    Notice,
    TextDelta,
    ToolCallParsed,
    ToolFinished,
    UserMessage,
)
from clover_code.agent.session import SessionLog
from clover_code.engine import Block, ToolCall
from clover_code.engine.scripted import ScriptedEngine
from clover_code.tools import Registry, default_registry
from tests.support.agent import call, collect


def small_registry() -> Registry:
    return Registry([default_registry().tools["read_file"]])


def test_compaction_when_the_window_would_overflow(git_repo, make_agent):
    (git_repo / "big.txt").write_text("".join(f"line {i}: some words to fill the context\n" for i in range(110)))
    engine = ScriptedEngine([
        call("read_file", path="big.txt"),
        call("read_file", path="big.txt", offset=50),
        "SUMMARY: the user asked to read big.txt twice; it holds numbered lines.",
        "Done reading.",
    ], context_window=3000)
    agent = make_agent(None, engine=engine, registry=small_registry(), max_tokens=200)
    events = asyncio.run(collect(agent, "read big.txt"))
    assert events[-1].reason == "done", events[-1]
    (compacted,) = [e for e in events if isinstance(e, Compacted)]
    assert compacted.dropped_messages == 3  # the task, the first reply and its result
    assert compacted.tokens_after < compacted.tokens_before <= 3000
    assert compacted.summary.startswith("SUMMARY: the user asked")
    summary_request, last_request = engine.requests[2], engine.requests[3]
    assert "Summarise this session" in summary_request.messages[-1]["content"]
    assert "read big.txt" in summary_request.messages[-1]["content"]
    roles = [m["role"] for m in last_request.messages]
    assert roles == ["system", "user", "assistant", "tool"]
    assert last_request.messages[1]["content"].startswith(SUMMARY_HEADER.format(n=3))
    assert agent.conversation.dropped[0] == {"role": "user", "content": "read big.txt"}
    assert engine.count_tokens(last_request) + 200 <= 3000


def test_manual_compact_keeps_the_last_exchange(make_agent):
    engine = ScriptedEngine([call("read_file", path="README.md"), "It says hello.", "A summary."])
    agent = make_agent(None, engine=engine)
    asyncio.run(collect(agent, "read the readme"))
    assert len(agent.conversation.messages) == 4
    compacted = asyncio.run(agent.compact())
    assert compacted.dropped_messages == 3 and compacted.summary == "A summary."
    assert [m["role"] for m in agent.conversation.messages] == ["user", "assistant"]


async def compaction_events(agent) -> tuple[list, list]:
    """The events of /compact, and what the conversation had compacted as each one arrived."""
    events, compactions_seen = [], []
    async for event in agent.compaction():
        events.append(event)
        compactions_seen.append(len(agent.conversation.compactions))
    return events, compactions_seen


def test_a_compaction_that_does_not_shrink_is_discarded_with_a_note(make_agent, tmp_path):
    long_summary = {"content": "A summary that says more than the talk did. " * 40, "delay": 0.01}
    session = SessionLog(tmp_path / "session.jsonl")
    agent = make_agent(["One.", "Two.", long_summary, "Three."], session=session)
    asyncio.run(collect(agent, "first"))
    asyncio.run(collect(agent, "second"))
    messages, tokens = list(agent.conversation.messages), agent.conversation.tokens(agent.engine)
    events, compactions_seen = asyncio.run(compaction_events(agent))
    assert [type(e) for e in events] == [Notice, Notice]
    assert events[0].text.startswith("Compacting the conversation: summarising 3 earlier messages")
    assert compactions_seen[0] == 0  # the note came while the model wrote the summary
    assert "Compaction discarded" in events[1].text and "the conversation stays as it was" in events[1].text
    assert agent.conversation.messages == messages and agent.conversation.compactions == []
    assert agent.conversation.tokens(agent.engine) == tokens
    assert not [e for e in session.events() if isinstance(e, Compacted)]
    asyncio.run(collect(agent, "third"))  # the model still reads the whole talk
    assert [m["content"] for m in agent.engine.requests[-1].messages[1:]][:4] == ["first", "One.", "second", "Two."]


def test_a_compaction_that_shrinks_is_kept_and_said_to_run_first(make_agent):
    agent = make_agent(["One. " * 200, "Two.", {"content": "The user asked twice.", "delay": 0.01}])
    asyncio.run(collect(agent, "first"))
    asyncio.run(collect(agent, "second"))
    events, compactions_seen = asyncio.run(compaction_events(agent))
    assert [type(e) for e in events] == [Notice, Compacted] and compactions_seen == [0, 1]
    assert events[1].tokens_after < events[1].tokens_before
    assert agent.conversation.messages[0]["content"].endswith("The user asked twice.")


def test_nothing_to_compact_says_so(make_agent):
    agent = make_agent([])
    events, _ = asyncio.run(compaction_events(agent))
    assert [type(e) for e in events] == [Notice] and "Nothing to compact" in events[0].text
    assert agent.engine.requests == []  # no summary was asked for


def test_summary_falls_back_to_a_digest_when_the_model_fails(make_agent):
    engine = ScriptedEngine(["Hello there."])  # no reply left for the summary
    agent = make_agent(None, engine=engine)
    asyncio.run(collect(agent, "say hello " * 100))  # the digest keeps its first 300 characters
    compacted = asyncio.run(agent.compact())
    assert compacted.dropped_messages == 1 and "- say hello" in compacted.summary


def test_token_accounting_uses_server_usage_when_larger():
    conv = Conversation("sys", [])
    conv.apply(UserMessage("hi"))
    conv.apply(BlockCommitted(Block("Hello", 1, 1, 0.0, index=0, prompt_tokens=5000)))
    assert conv.tokens() >= 5001
    conv.apply(UserMessage("more " * 100))
    assert conv.tokens() > 5001 + 100


def test_draft_becomes_messages_in_call_order_with_missing_results_marked():
    conv = Conversation("sys")
    conv.apply(UserMessage("go"))
    a, b = ToolCall("1", "read_file", '{"path": "a"}'), ToolCall("2", "glob", '{"pattern": "*"}')
    markup = '<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call>'
    conv.apply(BlockCommitted(Block("ok " + markup, 5, 1, 0.0)))
    conv.apply(TextDelta("ok "))
    conv.apply(ToolCallParsed(a, markup=markup))
    conv.apply(BlockCommitted(Block(" then", 1, 1, 0.0, index=1, tool_calls=(b,))))
    conv.apply(TextDelta(" then"))
    conv.apply(ToolCallParsed(b))
    conv.apply(ToolFinished(b, True, "b.md", 0.0))
    messages = conv.request_messages()
    assert messages[2] == {"role": "assistant", "content": "ok  then", "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
        {"id": "2", "type": "function", "function": {"name": "glob", "arguments": '{"pattern": "*"}'}}]}
    assert [(m["tool_call_id"], m["content"][:7]) for m in messages[3:]] == [("1", "(not ru"), ("2", "b.md")]


def test_reply_content_drops_well_formed_markup_and_keeps_malformed(make_agent):
    agent = make_agent(['a <tool_call>{"name": "x", "arguments": {}}</tool_call> b <tool_call>{bad', "ok"])
    asyncio.run(collect(agent, "go"))
    assert agent.conversation.messages[1]["content"] == "a  b <tool_call>{bad"


def test_digest():
    text = digest([{"role": "user", "content": "fix it"},
                   {"role": "assistant", "content": "", "tool_calls": [
                       {"id": "1", "function": {"name": "read_file", "arguments": "{}"}}]}])
    assert "- fix it" in text and "read_file({})" in text


def test_transcript_keeps_user_requests_and_cuts_tool_output():
    from clover_code.agent.context import transcript

    messages = [{"role": "user", "content": "please fix the parser"},
                {"role": "tool", "tool_call_id": "1", "content": "x" * 50_000},
                {"role": "user", "content": "and add a test"}]
    text = transcript(messages, 2000)
    assert "please fix the parser" in text and "and add a test" in text and "[... cut ...]" in text
    assert len(text) <= 2000 * 3


def test_reading_messages_mid_reply_does_not_close_it():
    conv = Conversation("sys")
    conv.apply(UserMessage("go"))
    call_a = ToolCall("1", "glob", '{"pattern": "*"}')
    conv.apply(BlockCommitted(Block("looking", 1, 1, 0.0)))
    conv.apply(TextDelta("looking"))
    conv.apply(ToolCallParsed(call_a))
    assert conv.messages[-1]["content"].startswith("(not run")  # a UI peeking while the tool runs
    conv.apply(ToolFinished(call_a, True, "a.py", 0.0))
    assert [m["role"] for m in conv.messages] == ["user", "assistant", "tool"]
    assert conv.messages[-1]["content"] == "a.py"
