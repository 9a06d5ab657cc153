"""RemoteEngine against real local servers that misbehave on purpose (RawServer)."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time

import pytest

from clover_code.engine import ChatRequest, EngineError
from clover_code.engine.wire.remote import RemoteEngine
from tests.support.serving import RawServer, Reply, delta_chunk, sse_body

KEY = "sk-test-very-secret-4242"
MODELS = Reply(headers={"Content-Type": "application/json"},
               parts=[json.dumps({"object": "list", "data": [{"id": "m1", "max_model_len": 8192}]}).encode()])


def ask(text: str = "hi", **kw) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], **kw)


def engine(url: str, **kw) -> RemoteEngine:
    kw = {"model": "m1", "context_window": 8192, "backoff": 0.01, "idle_timeout": 5.0, **kw}
    return RemoteEngine(url, **kw)


async def collect(eng: RemoteEngine, request: ChatRequest | None = None, into: list | None = None) -> list:
    blocks = [] if into is None else into
    async for block in eng.stream(request or ask()):
        blocks.append(block)
    return blocks


async def test_blocks_tool_calls_usage_and_extension():
    ext = {"clover": {"block": 0, "tokens": 32, "forward_passes": 3, "ms": 1.5}}
    parts = sse_body(
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        delta_chunk("Hello", **ext),
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_a", "type": "function", "function": {"name": "read_", "arguments": ""}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "function": {"name": "file", "arguments": '{"path": '}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"a.py"}'}}]}}]},
        delta_chunk(" world"),
        delta_chunk("", "tool_calls"),
        {"choices": [], "usage": {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22,
                                  "prompt_tokens_details": {"cached_tokens": 12}}},
        "[DONE]")
    async with RawServer([MODELS, Reply(parts=parts)]) as srv:
        eng = RemoteEngine(srv.url, api_key=KEY, backoff=0.01)
        blocks = await collect(eng, ask(tools=[{"type": "function", "function": {"name": "read_file"}}]))
        await eng.aclose()
    assert eng.info.model == "m1" and eng.info.context_window == 8192
    assert [b.text for b in blocks] == ["Hello", " world", ""]
    assert blocks[0].forward_passes == 3 and blocks[0].tokens == 32 and blocks[1].forward_passes is None
    assert blocks[-1].finish == "tool_calls" and blocks[-1].prompt_tokens == 17
    assert blocks[-1].prompt_reused == 12  # the server's cached prompt tokens
    (call,) = blocks[-1].tool_calls
    assert (call.id, call.name, json.loads(call.arguments)) == ("call_a", "read_file", {"path": "a.py"})
    sent = srv.requests[1]
    assert sent["path"] == "/v1/chat/completions" and sent["headers"]["authorization"] == f"Bearer {KEY}"
    assert sent["body"]["stream"] is True and sent["body"]["tool_choice"] == "auto"
    assert KEY not in repr(eng)


async def test_429_then_success_honours_retry_after():
    busy = Reply(status=429, headers={"Retry-After": "1", "Content-Type": "application/json"},
                 parts=[b'{"error": {"message": "slow down"}}'])
    ok = Reply(parts=sse_body(delta_chunk("fine", "stop"), "[DONE]"))
    async with RawServer([busy, ok]) as srv:
        t0 = time.monotonic()
        blocks = await collect(engine(srv.url))
    assert [b.text for b in blocks] == ["fine"] and time.monotonic() - t0 >= 1.0
    assert len(srv.requests) == 2


async def test_500_is_not_retried_and_says_what_the_server_said():
    boom = Reply(status=500, headers={"Content-Type": "application/json"},
                 parts=[b'{"error": {"message": "CUDA out of memory"}}'])
    async with RawServer([boom]) as srv:
        with pytest.raises(EngineError, match=r"HTTP 500.*CUDA out of memory.*server's log"):
            await collect(engine(srv.url))


async def test_503_retries_are_bounded():
    busy = [Reply(status=503, headers={"Content-Type": "text/plain"}, parts=[b"overloaded"]) for _ in range(3)]
    async with RawServer(busy) as srv:
        with pytest.raises(EngineError, match=r"busy \(HTTP 503\) after 3 tries"):
            await collect(engine(srv.url, retries=2))
    assert len(srv.requests) == 3


async def test_401_names_the_key_settings_without_the_key():
    denied = Reply(status=401, headers={"Content-Type": "application/json"},
                   parts=[json.dumps({"error": {"message": f"bad key {KEY}"}}).encode()])
    async with RawServer([denied]) as srv:
        with pytest.raises(EngineError) as info:
            await collect(engine(srv.url, api_key=KEY))
    assert "HTTP 401" in str(info.value) and "CLOVER_API_KEY" in str(info.value)
    assert KEY not in str(info.value)


async def test_404_points_at_the_endpoint_path():
    missing = Reply(status=404, headers={"Content-Type": "text/plain"}, parts=[b"Not Found"])
    async with RawServer([missing]) as srv:
        with pytest.raises(EngineError, match=r"404.*http://host:8000/v1"):
            await collect(engine(srv.url))


async def test_invalid_json_in_the_stream_keeps_earlier_blocks():
    parts = sse_body(delta_chunk("one"), "{not json")
    got: list = []
    async with RawServer([Reply(parts=parts)]) as srv:
        with pytest.raises(EngineError, match="invalid JSON"):
            await collect(engine(srv.url), into=got)
    assert [b.text for b in got] == ["one"]


async def test_stream_cut_midway_keeps_partial_output():
    got: list = []
    async with RawServer([Reply(parts=sse_body(delta_chunk("one"), delta_chunk("two")), cut=True)]) as srv:
        with pytest.raises(EngineError, match=r"cut after 2 blocks.*partial reply was kept"):
            await collect(engine(srv.url), into=got)
    assert [b.text for b in got] == ["one", "two"]


async def test_stream_ending_without_finish_is_an_error():
    async with RawServer([Reply(parts=sse_body(delta_chunk("one")))]) as srv:
        with pytest.raises(EngineError, match="ended before the reply finished"):
            await collect(engine(srv.url))


async def test_stall_past_idle_timeout():
    got: list = []
    async with RawServer([Reply(parts=sse_body(delta_chunk("one")), stall=3)]) as srv:
        t0 = time.monotonic()
        with pytest.raises(EngineError, match=r"stalled: nothing for 0.5 s after 1 blocks"):
            await collect(engine(srv.url, idle_timeout=0.5), into=got)
    assert got[0].text == "one" and time.monotonic() - t0 < 2.5


async def test_connection_refused_is_retried_then_explained():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    eng = engine(f"http://127.0.0.1:{port}/v1", retries=2)
    with pytest.raises(EngineError, match=r"cannot connect to .*is the server running"):
        await collect(eng)


async def test_dns_failure_is_explained():
    with pytest.raises(EngineError, match=r"cannot resolve the host name 'no-such-host\.invalid'"):
        await collect(engine("http://no-such-host.invalid:8000/v1"))


async def test_tls_to_a_plain_http_server_is_explained():
    async def plain_http(reader, writer):  # answers the TLS hello the way an HTTP server would
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()
    server = await asyncio.start_server(plain_http, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    with pytest.raises(EngineError, match=r"TLS handshake with 127.0.0.1 failed"):
        await collect(engine(f"https://127.0.0.1:{port}/v1", connect_timeout=3))
    server.close()


async def test_closing_the_stream_closes_the_connection():
    parts = sse_body(*[delta_chunk(f"b{i} ") for i in range(50)], delta_chunk("", "stop"), "[DONE]")
    async with RawServer([Reply(parts=parts, pause=0.05)]) as srv:
        eng = engine(srv.url)
        stream = eng.stream(ask())
        first = await anext(stream)
        t0 = time.monotonic()
        await stream.aclose()
        closed = time.monotonic() - t0
        await asyncio.sleep(0.3)  # the server notices on its next write
        await eng.aclose()
    assert first.text == "b0 " and closed < 0.5 and srv.dropped == 1


def test_model_and_context_window_from_the_server():
    async def run():
        async with RawServer([MODELS]) as srv:
            eng = RemoteEngine(srv.url)
            return await eng.connect()
    info = asyncio.run(run())
    assert (info.model, info.context_window, info.name) == ("m1", 8192, "remote")


def test_endpoint_without_path_means_v1_and_key_stays_out_of_repr():
    eng = RemoteEngine("http://user:pw@gpu-box:8000", api_key=KEY)
    assert eng.base == "http://user:pw@gpu-box:8000/v1" and eng.url == "http://user:****@gpu-box:8000/v1"
    assert KEY not in repr(eng) and "pw" not in repr(eng)
    with pytest.raises(EngineError, match="not an http"):
        RemoteEngine("gpu-box:8000")


def test_import_does_not_load_torch():
    code = ("import sys, clover_code.engine.wire.remote; "
            "print([m for m in ('torch', 'transformers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("failures", [[Reply(parts=[])], [Reply(status=0), Reply(status=0)]],
                         ids=["empty-stream", "dropped"])
async def test_a_server_that_cannot_stream_tools_gets_whole_replies(failures):
    whole = Reply(headers={"Content-Type": "application/json"}, parts=[json.dumps({
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
                     "tool_calls": [{"id": "c1", "type": "function",
                                     "function": {"name": "read_file", "arguments": "{\"path\": \"a\"}"}}]}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}}).encode()])
    ask_tools = ask(tools=[{"type": "function", "function": {"name": "read_file"}}])
    async with RawServer([*failures, whole, whole]) as srv:
        eng = engine(srv.url)
        first = await collect(eng, ask_tools)
        second = await collect(eng, ask_tools)
    assert [r["body"]["stream"] for r in srv.requests] == [True] * len(failures) + [False, False]
    for blocks in (first, second):
        (block,) = blocks
        assert block.finish == "tool_calls" and block.prompt_tokens == 9
        assert block.tool_calls[0].name == "read_file"


async def test_a_stream_error_without_tools_is_not_retried():
    async with RawServer([Reply(parts=[]), Reply(status=0), Reply(status=0)]) as srv:
        with pytest.raises(EngineError, match="ended before the reply finished"):
            await collect(engine(srv.url))
        with pytest.raises(EngineError, match="closed the connection without answering"):
            await collect(engine(srv.url))
    assert len(srv.requests) == 3  # a dropped request is sent once more (a stale pooled connection)


async def test_a_dropped_request_is_sent_once_more_even_without_retries():
    ok = Reply(parts=sse_body(delta_chunk("fine", "stop"), "[DONE]"))
    async with RawServer([Reply(status=0), ok, Reply(status=0), Reply(status=0)]) as srv:
        assert [b.text for b in await collect(engine(srv.url, retries=0))] == ["fine"]
        with pytest.raises(EngineError, match="closed the connection without answering"):
            await collect(engine(srv.url, retries=0))
    assert len(srv.requests) == 4
