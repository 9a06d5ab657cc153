"""`clover-code serve` speaks OpenAI Responses: the official `openai` client against a real
uvicorn on 127.0.0.1, ScriptedEngine supplying the words (what the engine was asked is read
back from it)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from test_server import CALL, WORDS, scripted

from clover_code.engine.wire.server import create_app
from tests.support.serving import serve_app

EXEC = {"type": "function", "name": "exec_command", "description": "Run a command", "strict": False,
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}
READ = {"type": "function", "name": "read_file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
PATCH_GRAMMAR = 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF\n'
APPLY_PATCH = {"type": "custom", "name": "apply_patch", "description": "Edit files. FREEFORM.",
               "format": {"type": "grammar", "syntax": "lark", "definition": PATCH_GRAMMAR}}
PATCH = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** End Patch\n"
NOT_HERE = [{"type": "web_search", "external_web_access": True},
            {"type": "namespace", "name": "multi_agent_v1", "description": "agents", "tools": [EXEC]}]


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=url, api_key="unused", max_retries=0)


def test_non_streamed_reply_with_usage_and_block_stats():
    with serve_app(create_app(scripted(WORDS))) as url:
        reply = client(url).responses.create(model="gpt-5.5", input="hi", store=False)
    assert reply.status == "completed" and reply.output_text == WORDS
    assert reply.usage.output_tokens == 20 and reply.usage.input_tokens > 0
    assert reply.usage.input_tokens_details.cached_tokens == 0
    assert [b["tokens"] for b in reply.model_extra["clover"]["blocks"]] == [8, 8, 4]


def test_stream_has_one_delta_per_block_and_ends_completed():
    with serve_app(create_app(scripted(WORDS))) as url:
        events = list(client(url).responses.create(model="m", input="hi", stream=True))
    kinds = [e.type for e in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert len(deltas) == 3 and "".join(d.delta for d in deltas) == WORDS  # one per committed block
    assert [d.model_extra["clover"]["block"] for d in deltas] == [0, 1, 2]
    assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
    done = events[-1].response
    assert done.output_text == WORDS and done.usage.output_tokens == 20


@pytest.mark.parametrize("stream", [False, True])
def test_function_call_from_the_models_markup(stream):
    engine = scripted("Let me look. " + CALL)
    with serve_app(create_app(engine)) as url:
        out = client(url).responses.create(model="m", input="hi", tools=[READ, *NOT_HERE], stream=stream)
        if stream:
            events = list(out)
            out = events[-1].response
            args = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
            assert args == [out.output[1].arguments]
    assert [item.type for item in out.output] == ["message", "function_call"]
    assert out.output[0].content[0].text.strip() == "Let me look."
    call = out.output[1]
    assert call.name == "read_file" and call.arguments == '{"path": "a.py"}' and call.call_id
    assert [t["function"]["name"] for t in engine.requests[0].tools] == ["read_file"]  # web_search, namespace: out


@pytest.mark.parametrize("stream", [False, True])
def test_a_freeform_tool_gets_a_custom_tool_call_with_the_raw_text(stream):
    engine = scripted({"content": "", "tool_calls": [{"id": "call_p", "name": "apply_patch",
                                                      "arguments": {"input": PATCH}}]})
    with serve_app(create_app(engine)) as url:
        out = client(url).responses.create(model="m", input="edit", tools=[EXEC, APPLY_PATCH], stream=stream)
        if stream:
            events = list(out)
            out = events[-1].response
            assert [e.delta for e in events if e.type == "response.custom_tool_call_input.delta"] == [PATCH]
    (call,) = out.output
    assert call.type == "custom_tool_call" and call.input == PATCH and call.call_id == "call_p"
    declared = engine.requests[0].tools[1]["function"]
    assert declared["parameters"]["required"] == ["input"]
    assert declared["parameters"]["properties"]["input"]["x-lark"] == PATCH_GRAMMAR  # the scaffold's grammar


def test_a_conversation_with_calls_and_their_outputs():
    engine = scripted("Done.")
    items = [
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be careful."}]},
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"},
                                                        {"type": "input_image", "image_url": "data:,"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
        {"type": "function_call", "call_id": "c1", "name": "exec_command", "arguments": '{"cmd": "ls"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "a.txt"},
        {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "c2", "output": "Success."},
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "a later note"}]}]
    with serve_app(create_app(engine)) as url:
        reply = client(url).responses.create(
            model="m", instructions="You are Codex.", input=items, tools=[EXEC, APPLY_PATCH], store=False,
            prompt_cache_key="thread-7", reasoning={"summary": "auto"}, include=["reasoning.encrypted_content"],
            parallel_tool_calls=True, extra_body={"client_metadata": {"x": "y"}})
    asked = engine.requests[0]
    roles = [m["role"] for m in asked.messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "user"]
    assert asked.messages[0]["content"] == "You are Codex.\n\nBe careful."
    assert "fix it" in asked.messages[1]["content"] and "text only" in asked.messages[1]["content"]
    assert asked.messages[2]["tool_calls"][0]["function"] == {"name": "exec_command", "arguments": '{"cmd": "ls"}'}
    assert json.loads(asked.messages[4]["tool_calls"][0]["function"]["arguments"]) == {"input": PATCH}
    assert asked.messages[5] == {"role": "tool", "tool_call_id": "c2", "content": "Success."}
    assert asked.session == "thread-7" and reply.output_text == "Done."


def test_the_token_limit_ends_incomplete():
    with serve_app(create_app(scripted(WORDS))) as url:
        events = list(client(url).responses.create(model="m", input="hi", max_output_tokens=16, stream=True))
    assert events[-1].type == "response.incomplete"
    assert events[-1].response.incomplete_details.reason == "max_output_tokens"


def test_refusals_are_openai_errors():
    long = " ".join(f"w{i}" for i in range(80))  # 10 blocks at 0.1 s each
    with serve_app(create_app(scripted(long, delay=0.1), max_queue=0)) as url:
        c = client(url)
        with pytest.raises(openai.BadRequestError, match="previous_response_id"):
            c.responses.create(model="m", input="hi", previous_response_id="resp_1")
        with pytest.raises(openai.BadRequestError, match="'input'"):
            c.responses.create(model="m", input=[])
        with pytest.raises(openai.BadRequestError, match="item_reference"):
            c.responses.create(model="m", input=[{"type": "item_reference", "id": "x"}])
        body = {"model": "m", "input": "hi", "stream": True}
        with httpx.stream("POST", f"{url}/responses", json=body) as first:
            lines = first.iter_lines()  # held: a dropped iterator closes the response
            next(lines)
            with pytest.raises(openai.RateLimitError) as busy:
                c.responses.create(model="m", input="hi")
    assert busy.value.status_code == 429 and busy.value.body["type"] == "rate_limit_error"
