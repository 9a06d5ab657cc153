"""`clover-code serve` on a tiny real checkpoint: the openai client, RemoteEngine against
the in-process EmbeddedEngine, and the real `clover-code serve` process."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import httpx
import openai
import pytest

from clover_code.engine import ChatRequest, EngineError
from clover_code.engine.embedded.engine import EmbeddedEngine
from clover_code.engine.wire.remote import RemoteEngine
from clover_code.engine.wire.server import create_app
from tests.support.serving import open_half_requests, serve_app, wait_closed

USER = [{"role": "user", "content": "Write hello world in Python."}]
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]


def block_key(b):
    return b.index, b.text, b.tokens, b.forward_passes, b.finish, b.tool_calls, b.prompt_tokens, b.prompt_reused


@pytest.fixture(scope="module")
def tiny_served(tiny_attention_ckpt):
    engine = EmbeddedEngine(str(tiny_attention_ckpt))
    with serve_app(create_app(engine, model_name="tiny")) as url:
        yield url, engine


def test_openai_client_non_streaming_and_streaming(tiny_served):
    url, engine = tiny_served
    client = openai.OpenAI(base_url=url, api_key="unused")
    whole = client.chat.completions.create(model="tiny", messages=USER, max_tokens=70)
    chunks = list(client.chat.completions.create(model="tiny", messages=USER, max_tokens=70, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert streamed == whole.choices[0].message.content  # greedy: the same reply both ways
    stats = [c.model_extra["clover"] for c in chunks]
    assert [s["block"] for s in stats] == list(range(len(chunks))) and len(chunks) >= 2
    assert all(s["forward_passes"] >= 1 and 1 <= s["tokens"] <= engine.info.block_size for s in stats)
    assert chunks[-1].usage.completion_tokens == sum(s["tokens"] for s in stats) <= 70
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")
    assert whole.usage.prompt_tokens == engine.count_tokens(ChatRequest(messages=USER))


def test_openai_client_with_tools(tiny_served):
    url, engine = tiny_served
    client = openai.OpenAI(base_url=url, api_key="unused")
    chunks = list(client.chat.completions.create(model="tiny", messages=USER, tools=TOOLS, max_tokens=40,
                                                 stream=True))
    assert chunks and chunks[-1].choices[0].finish_reason in ("stop", "length", "tool_calls")
    assert chunks[-1].usage.prompt_tokens > engine.count_tokens(ChatRequest(messages=USER))  # schemas rendered


def test_usage_says_how_much_of_the_prompt_the_prefix_cache_served(tiny_served):
    url, engine = tiny_served
    client = openai.OpenAI(base_url=url, api_key="unused")
    first = client.chat.completions.create(model="tiny", messages=USER, max_tokens=40)
    follow = USER + [{"role": "assistant", "content": first.choices[0].message.content},
                     {"role": "user", "content": "and again"}]
    chunks = list(client.chat.completions.create(model="tiny", messages=follow, max_tokens=8, stream=True))
    usage = chunks[-1].usage
    assert usage.prompt_tokens_details.cached_tokens == engine.last_reuse.reused
    assert engine.count_tokens(ChatRequest(messages=USER)) <= usage.prompt_tokens_details.cached_tokens \
        < usage.prompt_tokens


def test_what_the_checkpoint_cannot_read_is_a_400_not_a_500(tiny_served):
    url, engine = tiny_served
    post = lambda body: httpx.post(f"{url}/chat/completions", content=body,  # noqa: E731
                                   headers={"Content-Type": "application/json"}, timeout=60)
    surrogate = post(b'{"messages": [{"role": "user", "content": "hi \\ud800"}]}')  # its tokenizer raises
    over = engine.info.context_window  # "hello " is a token or two: past the window
    too_long = post(json.dumps({"messages": [{"role": "user", "content": "hello " * over}]}).encode())
    after = post(json.dumps({"messages": USER, "max_tokens": 4}).encode())
    assert surrogate.status_code == 400 and surrogate.json()["error"]["param"] == "messages[0].content"
    assert too_long.status_code == 400 and too_long.json()["error"]["code"] == "context_length_exceeded"
    assert f"maximum context length is {over} tokens" in too_long.json()["error"]["message"]
    assert after.status_code == 200


@pytest.mark.parametrize("ckpt", ["tiny_attention_ckpt", "tiny_hybrid_ckpt"])
async def test_remote_engine_gives_the_embedded_blocks_in_order(ckpt, request):
    folder = str(request.getfixturevalue(ckpt))
    ask = ChatRequest(messages=USER, max_tokens=80)
    local_engine = EmbeddedEngine(folder)
    local = [b async for b in local_engine.stream(ask)]
    await local_engine.aclose()
    with serve_app(create_app(EmbeddedEngine(folder))) as url:
        remote_engine = RemoteEngine(url)
        remote = [b async for b in remote_engine.stream(ask)]
        await remote_engine.aclose()
    assert [block_key(b) for b in remote] == [block_key(b) for b in local]
    assert remote_engine.info.context_window == local_engine.info.context_window


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_real_serve_process_with_an_api_key(tiny_attention_ckpt):
    port, key, client_key = _free_port(), "k-embedded-77", "k-client-12"
    proc = subprocess.Popen([sys.executable, "-m", "clover_code.cli", "serve", "--model", str(tiny_attention_ckpt),
                             "--port", str(port), "--max-queue", "2", "--header-timeout", "1"],
                            env={**os.environ, "CLOVER_SERVE_API_KEY": key, "CLOVER_API_KEY": client_key},
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline
            try:
                httpx.get(url.removesuffix("/v1") + "/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        for wrong in ("", client_key):  # the client key in its environment is not this server's
            with pytest.raises(EngineError, match="HTTP 401"):
                [b async for b in RemoteEngine(url, api_key=wrong).stream(ChatRequest(messages=USER))]
        t0 = time.monotonic()
        wait_closed(open_half_requests(url, 1), 1)  # --header-timeout 1 reached the server
        late = time.monotonic() - t0
        engine = RemoteEngine(url, api_key=key)
        blocks = [b async for b in engine.stream(ChatRequest(messages=USER, max_tokens=40))]
        await engine.aclose()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert engine.info.model == tiny_attention_ckpt.name
    assert blocks and blocks[-1].finish in ("stop", "length") and all(b.forward_passes for b in blocks)
    assert key not in err and client_key not in err
    assert 0.9 <= late < 10


class StepCounter:
    """EmbeddedEngine, counting denoising steps and noting the count when a stream closes."""

    def __init__(self, engine: EmbeddedEngine):
        self.engine, self.info = engine, engine.info
        self.steps = 0
        self.steps_at_close: int | None = None

    def count_tokens(self, request):
        return self.engine.count_tokens(request)

    async def aclose(self):
        await self.engine.aclose()

    def _step(self, _):
        self.steps += 1

    async def stream(self, request):
        request.on_step = self._step
        try:
            async for block in self.engine.stream(request):
                yield block
        finally:
            self.steps_at_close = self.steps


def test_disconnect_stops_decoding_within_a_step(tiny_attention_ckpt):
    # threshold 1.0 commits one token per forward pass: 2,000 tokens would take minutes.
    counter = StepCounter(EmbeddedEngine(str(tiny_attention_ckpt), threshold=1.0))
    body = {"messages": USER, "stream": True, "max_tokens": 2000}
    with serve_app(create_app(counter)) as url:
        with httpx.stream("POST", f"{url}/chat/completions", json=body) as response:
            next(response.iter_lines())
        t0 = time.monotonic()
        after = httpx.post(f"{url}/chat/completions", json={"messages": USER, "max_tokens": 4}, timeout=30)
        waited = time.monotonic() - t0
    assert counter.steps_at_close is not None and counter.steps_at_close < 200
    assert after.status_code == 200 and waited < 3  # the engine was free again at once
