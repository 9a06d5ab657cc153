"""Messages and Responses from `clover-code serve` on real checkpoints (a tiny one, and the demo
model for tool calls under the scaffold), driven by the official `anthropic` and `openai`
clients: block by block, prefix reuse across Claude Code's turns despite its billing header,
and a tool_choice that the scaffold makes the model honour."""

from __future__ import annotations

import anthropic
import openai
import pytest

from clover_code.engine.embedded.engine import EmbeddedEngine
from clover_code.engine.wire.server import create_app
from clover_code.models import demo_model
from clover_code.tools import default_registry
from tests.support.serving import serve_app

ASK = [{"role": "user", "content": "Write hello world in Python."}]


def billing(n: int) -> dict:
    return {"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.1.197.b{n}; cc_entrypoint=sdk-cli;"}


@pytest.fixture(scope="module")
def tiny(tiny_attention_ckpt):
    engine = EmbeddedEngine(str(tiny_attention_ckpt))
    with serve_app(create_app(engine, model_name="tiny")) as url:
        yield url, engine


def messages_client(url: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="unused", max_retries=0, timeout=120)


def test_messages_and_responses_stream_block_by_block(tiny):
    url, engine = tiny
    with messages_client(url).messages.stream(model="claude-x", max_tokens=70, messages=ASK) as stream:
        deltas = [e for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    events = list(openai.OpenAI(base_url=url, api_key="unused").responses.create(
        model="gpt-x", input=ASK[0]["content"], max_output_tokens=70, stream=True))
    text_deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) >= 2 and len(text_deltas) >= 2  # a multi-block reply: one event per block
    stats = [d.model_extra["clover"] for d in deltas]
    assert all(s["forward_passes"] >= 1 and 1 <= s["tokens"] <= engine.info.block_size for s in stats)
    assert final.usage.output_tokens == sum(s["tokens"] for s in stats) <= 70
    assert "".join(d.delta for d in text_deltas) == "".join(d.delta.text for d in deltas)  # greedy: the same reply
    assert events[-1].type in ("response.completed", "response.incomplete")


def test_prefix_reuse_across_claude_code_turns_despite_the_billing_header(tiny):
    url, engine = tiny
    client = messages_client(url)
    session = {"X-Claude-Code-Session-Id": "cc-1"}
    system = [billing(1), {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}}]
    first = client.messages.create(model="claude-x", max_tokens=40, system=system, messages=ASK, extra_headers=session)
    system[0] = billing(2)  # Claude Code's header changes on every request
    follow = [*ASK, {"role": "assistant", "content": first.content[0].text if first.content else ""},
              {"role": "user", "content": "and again"}]
    second = client.messages.create(model="claude-x", max_tokens=8, system=system, messages=follow,
                                    extra_headers=session)
    assert second.usage.cache_read_input_tokens == engine.last_reuse.reused
    assert second.usage.cache_read_input_tokens >= first.usage.input_tokens  # all of the first turn's prompt
    assert second.usage.input_tokens == engine.last_reuse.encoded  # the rest: encoded this turn


def test_a_named_tool_choice_is_a_call_under_the_scaffold():
    tools = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
              "input_schema": t["function"]["parameters"]} for t in default_registry().schemas()]
    with serve_app(create_app(EmbeddedEngine(demo_model()), model_name="demo")) as url:
        reply = messages_client(url).messages.create(
            model="claude-x", max_tokens=120, system="You are Clover Code.", tools=tools,
            tool_choice={"type": "tool", "name": "git_status"},  # left alone, this model reads a file
            messages=[{"role": "user", "content": "Say hello."}])
    uses = [b for b in reply.content if b.type == "tool_use"]
    assert reply.content[0].type == "tool_use" and uses[0].name == "git_status" and uses[0].input == {}
    assert reply.stop_reason == "tool_use"
