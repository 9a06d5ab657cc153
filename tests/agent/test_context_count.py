"""agent/context_count.py: the context as the model's tokenizer counts it, part by part, where the
engine has it loaded; elsewhere an estimate that says it is one (issue 42, item 12)."""

import asyncio
import json

from clover_code.agent.context import Conversation
from clover_code.agent.context_count import ContextCount, count_context, count_parts
from clover_code.agent.events import TextDelta, ToolCallParsed, ToolFinished, TurnFinished, UserMessage
from clover_code.engine import ChatRequest, ToolCall, make_engine
from clover_code.engine.scripted import ScriptedEngine
from clover_code.tokens import estimate_tokens
from clover_code.tools import Registry, default_registry

SYSTEM = "You are a coding assistant."
ASKED = "Read the README."


def conversation() -> Conversation:
    tools = default_registry().tools
    talk = Conversation(SYSTEM, Registry([tools[n] for n in ("read_file", "glob")]).schemas())
    call = ToolCall("call_1", "read_file", '{"path": "README.md"}')
    for event in (UserMessage(ASKED), TextDelta("Reading it."), ToolCallParsed(call),
                  ToolFinished(call, True, "hello", 0.0), TurnFinished("done", "")):
        talk.apply(event)
    return talk


def test_the_model_tokenizer_counts_the_context_and_each_part(tiny_attention_ckpt):
    engine = make_engine("embedded", model=str(tiny_attention_ckpt))
    try:
        talk = conversation()
        counted = count_parts(talk, engine)
        assert count_context(talk, engine) == ContextCount(counted.tokens, True)
    finally:
        asyncio.run(engine.aclose())
    assert counted.exact and counted.parts_exact
    assert counted.tokens == engine.count_tokens(ChatRequest(talk.request_messages(), talk.tools))
    parts = {part.name: part.tokens for part in counted.parts}
    assert sum(parts.values()) == counted.tokens  # every token is some part's
    # The tiny checkpoint's tokenizer is byte-level with <|im_start|> and <|im_end|> one token each:
    # a part is its text's bytes in the template's frame, the template's own markup the reply's opening.
    assert parts["system prompt"] == 1 + len(f"system\n{SYSTEM}") + 1 + 1
    assert parts["your messages"] == 1 + len(f"user\n{ASKED}") + 1 + 1
    assert parts["chat template"] == 1 + len("assistant\n")
    assert parts["tool descriptions"] > 1000 and parts["replies"] > 0 and parts["tool results"] > 0


def test_without_a_tokenizer_every_figure_is_an_estimate_of_its_own_text():
    engine = ScriptedEngine([])
    talk = conversation()
    counted = count_parts(talk, engine)
    assert not counted.exact and not counted.parts_exact
    assert counted.tokens == talk.tokens(engine)  # the figure the agent compacts by
    parts = {part.name: part.tokens for part in counted.parts}
    assert parts["system prompt"] == estimate_tokens(SYSTEM)  # not scaled to the total: it never moves
    assert parts["your messages"] == estimate_tokens(json.dumps(talk.messages[0], ensure_ascii=False))
    assert "chat template" not in parts
