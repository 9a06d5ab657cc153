"""`clover-code serve` speaks Anthropic Messages: the official `anthropic` client against a real
uvicorn on 127.0.0.1, ScriptedEngine supplying the words (what the engine was asked is read
back from it)."""

from __future__ import annotations

import anthropic
import httpx
import pytest
from test_server import CALL, WORDS, scripted

from clover_code.engine.wire.server import create_app
from tests.support.serving import serve_app

USER = [{"role": "user", "content": "hi"}]
WRITE = {"name": "Write", "description": "Write a file", "input_schema": {
    "type": "object", "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["file_path", "content"]}}
READ = {"name": "read_file", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}


def client(url: str, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="unused", max_retries=0, timeout=30, **kw)


def sse_events(url: str, body: dict, headers: dict | None = None) -> list[tuple[str, dict]]:
    """(event name, data) of a streamed reply, read raw."""
    import json

    events, name = [], ""
    with httpx.stream("POST", f"{url}/messages", json=body, headers=headers, timeout=30) as r:
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
    return events


def test_non_streamed_reply_with_usage_and_block_stats():
    with serve_app(create_app(scripted(WORDS))) as url:
        reply = client(url).messages.create(model="claude-opus-4-8", max_tokens=64000, messages=USER)
    assert [b.type for b in reply.content] == ["text"] and reply.content[0].text == WORDS
    assert reply.stop_reason == "end_turn" and reply.role == "assistant"
    assert reply.usage.output_tokens == 20 and reply.usage.input_tokens > 0
    assert [b["tokens"] for b in reply.model_extra["clover"]["blocks"]] == [8, 8, 4]


def test_stream_has_one_delta_per_block_in_the_messages_event_order():
    with serve_app(create_app(scripted(WORDS))) as url, \
            client(url).messages.stream(model="claude-x", max_tokens=100, messages=USER) as stream:
        events = list(stream)
        final = stream.get_final_message()
    kinds = [e.type for e in events]
    assert kinds[:2] == ["message_start", "content_block_start"] and kinds[-2:] == ["message_delta", "message_stop"]
    deltas = [e for e in events if e.type == "content_block_delta"]
    assert len(deltas) == 3 and "".join(d.delta.text for d in deltas) == WORDS  # one per committed block
    assert [d.model_extra["clover"]["block"] for d in deltas] == [0, 1, 2]
    assert final.content[0].text == WORDS and final.stop_reason == "end_turn" and final.usage.output_tokens == 20


@pytest.mark.parametrize("stream", [False, True])
def test_tool_use_parsed_from_the_models_markup(stream):
    engine = scripted("Let me look. " + CALL)
    with serve_app(create_app(engine)) as url:
        kwargs = {"model": "claude-x", "max_tokens": 100, "messages": USER, "tools": [READ]}
        if stream:
            with client(url).messages.stream(**kwargs) as s:
                reply = s.get_final_message()
        else:
            reply = client(url).messages.create(**kwargs)
    assert [b.type for b in reply.content] == ["text", "tool_use"] and reply.content[0].text.strip() == "Let me look."
    assert reply.content[1].name == "read_file" and reply.content[1].input == {"path": "a.py"}
    assert reply.stop_reason == "tool_use"
    assert engine.requests[0].tools == [{"type": "function", "function": {
        "name": "read_file", "parameters": READ["input_schema"]}}]


def test_tool_result_round_trip_and_what_is_left_out():
    engine = scripted({"content": "", "tool_calls": [{"id": "toolu_9", "name": "Write",
                                                      "arguments": {"file_path": "a.txt", "content": "x"}}]}, "Done.")
    system = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197.b27; cc_entrypoint=sdk-cli;"},
              {"type": "text", "text": "You are an agent.", "cache_control": {"type": "ephemeral"}}]
    web_search = {"type": "web_search_20250305", "name": "web_search", "max_uses": 3}
    with serve_app(create_app(engine)) as url:
        c = client(url, default_headers={"X-Claude-Code-Session-Id": "sess-1"})
        first = c.messages.create(model="claude-x", max_tokens=64000, system=system, messages=USER,
                                  tools=[WRITE, web_search], thinking={"type": "adaptive"},
                                  metadata={"user_id": "someone"})
        use = first.content[0]
        history = [*USER, {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"},
                                                            use.model_dump()]},
                   {"role": "user", "content": [
                       {"type": "tool_result", "tool_use_id": use.id, "is_error": True,
                        "content": [{"type": "text", "text": "disk full"}], "cache_control": {"type": "ephemeral"}},
                       {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                       {"type": "text", "text": "go on"}]},
                   {"role": "system", "content": "a note mid-conversation"}]
        second = c.messages.create(model="claude-x", max_tokens=100, system=system, messages=history,
                                   tools=[WRITE], extra_body={"context_management": {"edits": []},
                                                              "output_config": {"effort": "high"}})
    assert use.type == "tool_use" and use.id == "toolu_9" and first.stop_reason == "tool_use"
    asked = engine.requests[1]
    assert [t["function"]["name"] for t in engine.requests[0].tools] == ["Write"]  # the server tool left out
    assert asked.messages[0] == {"role": "system", "content": "You are an agent."}  # no billing header
    assert asked.messages[2]["tool_calls"][0]["id"] == "toolu_9" and asked.messages[2]["content"] == ""
    assert asked.messages[3] == {"role": "tool", "tool_call_id": "toolu_9", "content": "Error: disk full"}
    assert asked.messages[4]["role"] == "user" and "go on" in asked.messages[4]["content"]
    assert "text only" in asked.messages[4]["content"]  # the image, as a note
    assert asked.messages[5] == {"role": "user", "content": "a note mid-conversation"}
    assert asked.session == "sess-1" and second.content[0].text == "Done."


def test_stop_sequences_and_tool_choice():
    engine = scripted("one two STOP three", "x")
    with serve_app(create_app(engine)) as url:
        c = client(url)
        stopped = c.messages.create(model="m", max_tokens=100, messages=USER, stop_sequences=["STOP"])
        c.messages.create(model="m", max_tokens=100, messages=USER, tools=[WRITE, READ],
                          tool_choice={"type": "tool", "name": "read_file"})
    assert stopped.stop_reason == "stop_sequence" and stopped.stop_sequence == "STOP"
    assert stopped.content[0].text == "one two "
    forced = engine.requests[1]
    assert [t["function"]["name"] for t in forced.tools] == ["read_file"] and forced.tool_choice == "required"


def test_count_tokens_matches_what_generation_counts():
    engine = scripted(WORDS)
    with serve_app(create_app(engine)) as url:
        c = client(url)
        counted = c.messages.count_tokens(model="m", messages=USER, tools=[WRITE], system="be brief")
        reply = c.messages.create(model="m", max_tokens=50, messages=USER, tools=[WRITE], system="be brief")
    assert counted.input_tokens == reply.usage.input_tokens > 0


def test_errors_have_the_messages_shape():
    with serve_app(create_app(scripted(WORDS), api_key="k-1", max_queue=0)) as url:
        with pytest.raises(anthropic.AuthenticationError) as denied:
            client(url).messages.create(model="m", max_tokens=10, messages=USER)
        c = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="k-1", max_retries=0)  # sent as x-api-key
        with pytest.raises(anthropic.BadRequestError) as bad:
            c.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": [{"type": "video"}]}])
        raw = httpx.post(f"{url}/messages", json={"messages": "hi"}, headers={"x-api-key": "k-1"})
    assert denied.value.body == {"type": "error", "error": {"type": "authentication_error",
                                                            "message": denied.value.body["error"]["message"]}}
    assert bad.value.body["error"]["type"] == "invalid_request_error" and "'video'" in bad.value.message
    assert raw.status_code == 400 and raw.json()["type"] == "error" and "messages" in raw.json()["error"]["message"]


def test_a_prompt_past_the_window_is_worded_as_claude_code_reads_it():
    engine = scripted(WORDS)
    engine.info = type(engine.info)("scripted", "tiny", context_window=50, block_size=8)
    long = [{"role": "user", "content": "x " * 400}]
    with serve_app(create_app(engine)) as url:
        counted = client(url).messages.count_tokens(model="m", messages=long)  # counting is not generating
        with pytest.raises(anthropic.BadRequestError) as exc:
            client(url).messages.create(model="m", max_tokens=64000, messages=long)
    assert f"prompt is too long: {counted.input_tokens} tokens > 50 maximum" in exc.value.message


def test_a_full_queue_is_overloaded_529():
    long = " ".join(f"w{i}" for i in range(80))  # 10 blocks at 0.1 s each
    body = {"model": "m", "max_tokens": 100, "stream": True, "messages": USER}
    with serve_app(create_app(scripted(long, delay=0.1), max_queue=0)) as url, \
            httpx.stream("POST", f"{url}/messages", json=body) as first:
        lines = first.iter_lines()  # held: a dropped iterator closes the response
        next(lines)  # generating: the one place is taken
        with pytest.raises(anthropic.APIStatusError) as exc:
            client(url).messages.create(model="m", max_tokens=10, messages=USER)
    assert exc.value.status_code == 529 and exc.value.body["error"]["type"] == "overloaded_error"
    assert int(exc.value.response.headers["retry-after"]) >= 1


def test_pings_while_the_engine_is_silent():
    with serve_app(create_app(scripted({"content": WORDS, "delay": 0.3}), ping_seconds=0.05)) as url:
        events = sse_events(url, {"model": "m", "max_tokens": 100, "stream": True, "messages": USER})
    names = [n for n, _ in events]
    first_delta = names.index("content_block_delta")
    assert names.count("ping") >= 2 and "ping" in names[1:first_delta]
    assert all(data["type"] == name for name, data in events)
