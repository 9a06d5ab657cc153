"""The context window of a server: where each kind states it, what its refusals say, and
RemoteEngine learning it, sizing replies to it and asking once more after a refusal."""

from __future__ import annotations

import asyncio
import socket

import pytest

from clover_code.engine import ChatRequest, EngineError
from clover_code.engine.wire.remote import RemoteEngine, probe_context_window
from clover_code.engine.wire.window import (
    ASSUMED,
    ContextOverflow,
    field_window,
    ollama_window,
    props_window,
    rejection_limits,
    suggested_window,
)
from tests.support.window_servers import WindowServer, serve_app

TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def ask(words: int, max_tokens: int = 4096) -> ChatRequest:
    """A request with tools (the fake servers answer those with the next scripted reply)."""
    return ChatRequest([{"role": "user", "content": "word " * words}], TOOLS, max_tokens=max_tokens)


async def collect(engine: RemoteEngine, request: ChatRequest) -> str:
    return "".join([b.text async for b in engine.stream(request)])


# --- what servers say ---------------------------------------------------------------------

@pytest.mark.parametrize("message, error, expected", [
    ("request (2277 tokens) exceeds the available context size (2048 tokens), try increasing it",
     {"type": "exceed_context_size_error", "n_prompt_tokens": 2277, "n_ctx": 2048}, (2048, 2277)),  # llama.cpp
    ("the request exceeds the available context size, try increasing it", {}, (None, None)),  # older llama.cpp
    ("This model's maximum context length is 2048 tokens. However, you requested 6373 tokens (2277 in the "
     "messages, 4096 in the completion). Please reduce the length of the messages or completion.",
     {"code": "context_length_exceeded"}, (2048, 2277)),  # OpenAI, llama-cpp-python's server, older vLLM
    ("'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is 2,048 "
     "tokens and your request has 1000 input tokens (4096 > 2048 - 1000).", {}, (2048, 1000)),  # vLLM
    ("Requested token count exceeds the model's maximum context length of 2048 tokens. You requested a total of "
     "6373 tokens: 2277 tokens from the input messages and 4096 tokens for the completion.", {}, (2048, 2277)),
    ("Requested tokens (2277) exceed context window of 2048", {}, (2048, 2277)),  # llama-cpp-python itself
    ("'temperature' must be a number from 0 to 2", {}, None),  # not about the window
])
def test_refusals_are_read_for_both_numbers(message, error, expected):
    assert rejection_limits(message, error) == expected


def test_where_servers_state_their_window():
    assert field_window({"id": "m", "max_model_len": 32768}) == (32768, "max_model_len")
    assert field_window({"id": "m", "meta": {"n_ctx_train": 131072}}) is None  # trained length, not the window
    assert props_window({"default_generation_settings": {"n_ctx": 4096}}) == 4096
    assert props_window({"n_ctx": 8192}) == 8192 and props_window({"total_slots": 1}) is None
    assert ollama_window({"parameters": "stop \"<|im_end|>\"\nnum_ctx    16384",
                          "model_info": {"qwen3.context_length": 40960}}) == (16384, "POST /api/show num_ctx")
    tokens, source = ollama_window({"parameters": "", "model_info": {"qwen3.context_length": 40960}})
    assert tokens == 4096 and "default" in source and "40,960" in source
    assert suggested_window(2277) == 8192 and suggested_window(5000) == 16384


# --- probing, for doctor ------------------------------------------------------------------

@pytest.mark.parametrize("style, source", [("llama.cpp", "GET /props n_ctx"),
                                           ("vllm", "GET /v1/models max_model_len"),
                                           ("sglang", "GET /get_model_info context_length"),
                                           ("ollama", "POST /api/show num_ctx")])
def test_probe_says_the_window_and_where_it_came_from(style, source):
    with serve_app(WindowServer(style, 3072).app()) as url:
        assert probe_context_window(url) == (3072, source)


def test_probe_of_a_silent_server_and_of_no_server():
    with serve_app(WindowServer("silent", 3072).app()) as url:
        tokens, why = probe_context_window(url)
    assert tokens is None and "refusal" in why
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(EngineError, match="cannot connect"):
        probe_context_window(f"http://127.0.0.1:{port}/v1")


# --- sizing requests ----------------------------------------------------------------------

def test_max_tokens_is_capped_to_the_room_the_prompt_leaves():
    server = WindowServer("vllm", 3000, replies=["a", "b", "c"])

    async def run():
        engine = RemoteEngine(url, backoff=0.01)
        for request in (ask(1500), ask(1500), ask(2000, max_tokens=100)):
            await collect(engine, request)
        await engine.aclose()
        return engine
    with serve_app(server.app()) as url:
        engine = asyncio.run(run())
    first, second, third = server.seen
    assert not any(s.refused for s in server.seen)
    assert first.prompt_tokens + first.max_tokens <= 3000  # a bare estimate, erring high
    # Once the server has counted a prompt, estimates follow its tokenizer: the cap is close to exact.
    room = 3000 - second.prompt_tokens
    assert first.max_tokens < second.max_tokens <= room and second.max_tokens >= room - 0.06 * second.prompt_tokens
    assert third.max_tokens == 100  # room enough: asked as it is
    assert third.prompt_tokens <= engine.count_tokens(ask(2000)) <= third.prompt_tokens * 1.1


def test_a_refusal_teaches_the_window_and_the_request_is_asked_once_more():
    server = WindowServer("silent", 3000, replies=["fits now"])

    async def run():
        engine = RemoteEngine(url, backoff=0.01)
        text = await collect(engine, ask(1500))
        await engine.aclose()
        return engine, text
    with serve_app(server.app()) as url:
        engine, text = asyncio.run(run())
    refused, retried = server.seen
    assert refused.refused and refused.max_tokens == 4096
    assert not retried.refused and retried.max_tokens == 3000 - refused.prompt_tokens
    assert text == "fits now"
    assert (engine.info.context_window, engine.info.context_source) == (3000, "the server's HTTP 400 answer")


def test_a_prompt_with_no_room_left_is_one_error_with_both_numbers_and_the_flags():
    server = WindowServer("llama.cpp", 2048, replies=["never"])

    async def run():
        engine = RemoteEngine(url, backoff=0.01)
        assert engine.info.context_source == ASSUMED
        with pytest.raises(ContextOverflow) as caught:
            await collect(engine, ask(2500))
        with pytest.raises(ContextOverflow):  # the server's count is known now: not sent again
            await collect(engine, ask(2500))
        await engine.aclose()
        return caught.value
    with serve_app(server.app()) as url:
        error = asyncio.run(run())
    (seen,) = server.seen
    assert (error.prompt_tokens, error.window) == (seen.prompt_tokens, 2048)
    message = str(error)
    assert f"{seen.prompt_tokens:,} tokens" in message and "2,048 tokens (GET /props n_ctx)" in message
    for flag in ("-c/--ctx-size", "--n_ctx", "--max-model-len", "--context-length", "num_ctx"):
        assert flag in message
