"""`clover-code serve` (create_app) behind a real uvicorn on 127.0.0.1, driven by the
official openai client, httpx and RemoteEngine; ScriptedEngine supplies the words."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import openai
import pytest

from clover_code.engine import Block, ChatRequest
from clover_code.engine.scripted import ScriptedEngine
from clover_code.engine.wire.remote import RemoteEngine
from clover_code.engine.wire.server import create_app
from clover_code.engine.wire.window import ContextOverflow
from tests.support.serving import serve_app

WORDS = " ".join(f"w{i}" for i in range(20))  # 3 blocks of 8 words
CALL = '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>'
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}}]
USER = [{"role": "user", "content": "hi"}]


def scripted(*replies, **kw) -> ScriptedEngine:
    return ScriptedEngine(list(replies), model="tiny", block_size=8, **kw)


def wait_for_queue(url: str, queued: int) -> None:
    deadline = time.monotonic() + 10
    while httpx.get(url.removesuffix("/v1") + "/health").json()["queued"] != queued:
        assert time.monotonic() < deadline, "the queue never filled"
        time.sleep(0.02)


class Watched:
    """An engine that records how far each generation got and when it was closed."""

    def __init__(self, inner: ScriptedEngine):
        self.inner, self.info = inner, inner.info
        self.produced = 0
        self.closed: list[float] = []  # when each generation ended

    def count_tokens(self, request):
        return self.inner.count_tokens(request)

    async def aclose(self):
        pass

    async def stream(self, request):
        try:
            async for block in self.inner.stream(request):
                self.produced += 1
                yield block
        finally:
            self.closed.append(time.monotonic())


def test_openai_client_non_streaming():
    with serve_app(create_app(scripted(WORDS))) as url:
        reply = openai.OpenAI(base_url=url, api_key="unused").chat.completions.create(
            model="tiny", messages=USER)
    assert reply.choices[0].message.content == WORDS and reply.choices[0].finish_reason == "stop"
    assert reply.usage.completion_tokens == 20 and reply.usage.prompt_tokens > 0
    assert [b["tokens"] for b in reply.model_extra["clover"]["blocks"]] == [8, 8, 4]


def test_openai_client_streaming_one_chunk_per_block():
    with serve_app(create_app(scripted(WORDS))) as url:
        chunks = list(openai.OpenAI(base_url=url, api_key="unused").chat.completions.create(
            model="tiny", messages=USER, stream=True))
    assert len(chunks) == 3
    assert "".join(c.choices[0].delta.content for c in chunks) == WORDS
    assert [c.model_extra["clover"]["block"] for c in chunks] == [0, 1, 2]
    assert all(c.model_extra["clover"]["forward_passes"] == 1 for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop" and chunks[-1].usage.completion_tokens == 20
    assert chunks[0].usage is None


@pytest.mark.parametrize("stream", [False, True])
def test_openai_client_gets_tool_calls_parsed_from_model_text(stream):
    engine = scripted("Let me look. " + CALL + ' "}}</tool_call>')  # markup debris is no content
    with serve_app(create_app(engine)) as url:
        out = openai.OpenAI(base_url=url, api_key="unused").chat.completions.create(
            model="tiny", messages=USER, tools=TOOLS, stream=stream)
        if stream:
            chunks = list(out)
            text = "".join(c.choices[0].delta.content or "" for c in chunks)
            calls = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
            finish = chunks[-1].choices[0].finish_reason
        else:
            text, calls, finish = out.choices[0].message.content, out.choices[0].message.tool_calls, \
                out.choices[0].finish_reason
    assert text.strip() == "Let me look." and finish == "tool_calls"
    (call,) = calls
    assert call.function.name == "read_file" and json.loads(call.function.arguments) == {"path": "a.py"}
    assert engine.requests[0].tools == TOOLS


async def test_remote_engine_gets_the_same_blocks_as_in_process():
    request = ChatRequest(messages=USER, max_tokens=100)
    local = [b async for b in scripted(WORDS).stream(request)]
    with serve_app(create_app(scripted(WORDS))) as url:
        remote_engine = RemoteEngine(url)
        remote = [b async for b in remote_engine.stream(request)]
        await remote_engine.aclose()
    assert remote_engine.info.context_window == 131_072 and remote_engine.info.block_size == 8

    def key(b: Block):
        return b.index, b.text, b.tokens, b.forward_passes, b.finish, b.tool_calls, b.prompt_tokens
    assert [key(b) for b in remote] == [key(b) for b in local]


def test_bearer_token_required_when_a_key_is_set():
    with serve_app(create_app(scripted(WORDS), api_key="k-123")) as url:
        denied = httpx.post(f"{url}/chat/completions", json={"messages": USER})
        wrong = httpx.get(f"{url}/models", headers={"Authorization": "Bearer nope"})
        health = httpx.get(url.removesuffix("/v1") + "/health")
        ok = openai.OpenAI(base_url=url, api_key="k-123").chat.completions.create(model="tiny", messages=USER)
    assert denied.status_code == 401 and denied.json()["error"]["code"] == "invalid_api_key"
    assert wrong.status_code == 401 and health.status_code == 200
    assert ok.choices[0].message.content == WORDS


def test_invalid_requests_get_openai_style_400s():
    app = create_app(scripted(), max_body_bytes=10_000)
    with serve_app(app) as url:
        post = lambda **kw: httpx.post(f"{url}/chat/completions", **kw)  # noqa: E731
        bad_json = post(content=b"{nope", headers={"Content-Type": "application/json"})
        no_messages = post(json={"model": "tiny", "messages": []})
        bad_temp = post(json={"messages": USER, "temperature": "hot"})
        huge = post(json={"messages": [{"role": "user", "content": "x" * 20_000}]})
        unknown_model = post(json={"model": "gpt-9", "messages": USER})
        form = post(content=json.dumps({"messages": USER}), headers={"Content-Type": "text/plain"})
        rebound = post(json={"messages": USER}, headers={"Host": "evil.example:80"})
        wrong_path = httpx.get(f"{url}/completions")
        models = httpx.get(f"{url}/models").json()
    assert bad_json.status_code == 400 and "not valid JSON" in bad_json.json()["error"]["message"]
    assert no_messages.status_code == 400 and no_messages.json()["error"]["param"] == "messages"
    assert bad_temp.status_code == 400 and bad_temp.json()["error"]["param"] == "temperature"
    assert huge.status_code == 413
    assert unknown_model.status_code == 404 and unknown_model.json()["error"]["code"] == "model_not_found"
    assert form.status_code == 415 and "application/json" in form.json()["error"]["message"]
    assert rebound.status_code == 403 and wrong_path.status_code == 404
    assert "POST /v1/chat/completions" in wrong_path.json()["error"]["message"]
    assert models["data"][0]["id"] == "tiny" and models["data"][0]["context_window"] == 131_072


def post_raw(url: str, body: dict) -> httpx.Response:
    """POST `body` as json.dumps writes it: a lone surrogate as its `\\udXXX` escape."""
    return httpx.post(f"{url}/chat/completions", content=json.dumps(body).encode(),
                      headers={"Content-Type": "application/json"}, timeout=10)


@pytest.mark.parametrize(("body", "where"), [
    ({"messages": [{"role": "user", "content": "hi \ud800"}]}, "messages[0].content"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": "\udfff"}]}]},
     "messages[0].content[0].text"),
    ({"messages": USER, "tools": [{"type": "function", "function": {"name": "f\udc00", "parameters": {}}}]},
     "tools[0].function.name"),
    ({"messages": USER, "stop": ["\ud83d"]}, "stop[0]"),
    ({"messages": USER, "metadata": {"k\ud800": 1}}, "metadata.k\\ud800"),
])
def test_a_lone_surrogate_anywhere_in_a_request_is_a_400_that_says_where(body, where):
    engine = scripted(WORDS)
    with serve_app(create_app(engine)) as url:
        refused = post_raw(url, body)
        paired = post_raw(url, {"messages": [{"role": "user", "content": "\ud83d\ude00"}]})  # one character
    assert refused.status_code == 400 and refused.headers["content-type"] == "application/json"
    error = refused.json()["error"]
    assert error["type"] == "invalid_request_error" and error["param"] == where
    assert "lone surrogate" in error["message"] and "Traceback" not in refused.text
    assert paired.status_code == 200 and engine.requests[0].messages[0]["content"] == "\U0001f600"


@pytest.mark.parametrize("stream", [False, True])
def test_a_prompt_longer_than_the_context_window_is_a_400_before_the_engine(stream):
    engine = scripted(WORDS, context_window=64)
    long = [{"role": "user", "content": "word " * 400}]
    with serve_app(create_app(engine)) as url:
        refused = httpx.post(f"{url}/chat/completions", json={"messages": long, "stream": stream}, timeout=10)

        async def remote():
            client = RemoteEngine(url)
            try:
                return [b async for b in client.stream(ChatRequest(messages=long, max_tokens=8))]
            finally:
                await client.aclose()
        with pytest.raises(ContextOverflow, match="as the server counted it"):  # it read both numbers
            asyncio.run(remote())
        fits = httpx.post(f"{url}/chat/completions", json={"messages": USER, "stream": stream}, timeout=10)
    assert refused.status_code == 400 and refused.headers["content-type"] == "application/json"
    error = refused.json()["error"]
    assert error["code"] == "context_length_exceeded" and error["param"] == "messages"
    assert "maximum context length is 64 tokens" in error["message"]
    assert fits.status_code == 200 and len(engine.requests) == 1  # the long ones never reached it


class Broken(ScriptedEngine):
    """An engine with a bug: counting a prompt raises what no handler expects."""

    def count_tokens(self, request):
        raise RuntimeError("a bug, with secret internals in its message")


def test_a_bug_inside_the_server_is_a_json_500_without_the_traceback():
    with serve_app(create_app(Broken([WORDS], model="tiny"))) as url:
        failed = httpx.post(f"{url}/chat/completions", json={"messages": USER}, timeout=10)
        health = httpx.get(url.removesuffix("/v1") + "/health", timeout=5)
    assert failed.status_code == 500 and failed.json()["error"]["type"] == "server_error"
    assert "secret internals" not in failed.text and "Traceback" not in failed.text
    assert health.status_code == 200


def test_full_queue_answers_429_with_retry_after():
    slow = scripted(*[WORDS] * 3, delay=0.3)
    with serve_app(create_app(slow, max_queue=1)) as url:
        results: list = []

        def ask():
            results.append(httpx.post(f"{url}/chat/completions", json={"messages": USER}, timeout=30))
        threads = [threading.Thread(target=ask) for _ in range(2)]
        for t in threads:
            t.start()
        wait_for_queue(url, queued=1)  # one generating, one waiting
        third = httpx.post(f"{url}/chat/completions", json={"messages": USER})
        for t in threads:
            t.join()
    assert third.status_code == 429 and int(third.headers["retry-after"]) >= 1
    assert third.json()["error"]["type"] == "rate_limit_error"
    assert [r.status_code for r in results] == [200, 200]
    assert [r.json()["choices"][0]["message"]["content"] for r in results] == [WORDS, WORDS]


def test_client_disconnect_cancels_generation_and_server_stays_up():
    long = " ".join(f"w{i}" for i in range(400))  # 50 blocks at 0.1 s each
    engine = Watched(scripted(long, WORDS, delay=0.1))
    with serve_app(create_app(engine)) as url:
        with httpx.stream("POST", f"{url}/chat/completions", json={"messages": USER, "stream": True}) as r:
            next(r.iter_lines())
            gone = time.monotonic()
        deadline = time.monotonic() + 5
        while not engine.closed and time.monotonic() < deadline:
            time.sleep(0.02)
        after = httpx.post(f"{url}/chat/completions", json={"messages": USER}).json()
    assert engine.closed and engine.closed[0] - gone < 1.0
    assert engine.produced < 15
    assert after["choices"][0]["message"]["content"] == WORDS


def test_serve_refuses_a_public_bind_without_a_key_before_loading(cli):
    t0 = time.monotonic()
    done = cli("serve", "--host", "0.0.0.0", "--model", "/nonexistent", env={"CLOVER_SERVE_API_KEY": ""})
    assert done.returncode == 2 and "without an API key" in done.stderr and "--api-key" in done.stderr
    assert "Traceback" not in done.stderr and time.monotonic() - t0 < 20
    missing = cli("serve", env={"CLOVER_MODEL": ""})
    assert missing.returncode == 2 and "--model DIR" in missing.stderr
    not_there = cli("serve", "--model", "/nonexistent/ckpt")
    assert not_there.returncode == 3 and "model folder not found" in not_there.stderr
    assert "Traceback" not in not_there.stderr


@pytest.mark.parametrize("client_var", ["CLOVER_API_KEY", "OPENAI_API_KEY"])
def test_serve_never_takes_the_client_key_as_its_own(cli, client_var):
    no_serve_key = {"CLOVER_SERVE_API_KEY": "", "CLOVER_API_KEY": "", "OPENAI_API_KEY": "", client_var: "k-client"}
    public = cli("serve", "--host", "0.0.0.0", "--model", "/nonexistent", env=no_serve_key)
    local = cli("serve", "--model", "/nonexistent/ckpt", env=no_serve_key)
    keyed = cli("serve", "--host", "0.0.0.0", "--model", "/nonexistent/ckpt",
                env={**no_serve_key, "CLOVER_SERVE_API_KEY": "k-server"})
    flagged = cli("serve", "--host", "0.0.0.0", "--api-key", "k-server", "--model", "/nonexistent/ckpt",
                  env=no_serve_key)
    assert public.returncode == 2 and "without an API key" in public.stderr
    assert f"{client_var} is set, but that is the key clover-code sends to other servers" in public.stderr
    assert "CLOVER_SERVE_API_KEY" in public.stderr
    # on loopback it serves without a key, and says so before loading anything
    assert local.returncode == 3 and "this server requires no API key" in local.stderr
    assert client_var in local.stderr and "CLOVER_SERVE_API_KEY" in local.stderr
    for run in (keyed, flagged):  # a server key gets past the check, to the missing model
        assert run.returncode == 3 and "model folder not found" in run.stderr and "requires no" not in run.stderr
    assert not any("k-client" in r.stderr or "k-server" in r.stderr for r in (public, local, keyed, flagged))


@pytest.mark.parametrize(("flags", "said"), [
    (["--max-connections", "0"], "--max-connections must be 1 or more"),
    (["--header-timeout", "0"], "--header-timeout and --body-timeout must be"),
    (["--body-timeout", "nan"], "--header-timeout and --body-timeout must be"),
    (["--max-connections", "100000000000"], "file descriptors"),
])
def test_serve_refuses_impossible_connection_limits_before_loading(cli, flags, said):
    done = cli("serve", "--model", "/nonexistent/ckpt", *flags)
    assert done.returncode == 2 and said in done.stderr and "Traceback" not in done.stderr


def test_engine_error_midstream_reaches_the_client_as_an_error():
    async def run(url):
        eng = RemoteEngine(url)
        got = []
        with pytest.raises(Exception, match="no more replies"):
            async for b in eng.stream(ChatRequest(messages=USER)):
                got.append(b)
        await eng.aclose()
        return got
    with serve_app(create_app(scripted())) as url:  # no replies scripted: the engine fails
        assert asyncio.run(run(url)) == []
        assert httpx.get(url.removesuffix("/v1") + "/health").json()["status"] == "ok"


def test_a_queued_client_that_leaves_gives_up_its_place():
    long = " ".join(f"w{i}" for i in range(80))  # 10 blocks at 0.1 s each
    engine = Watched(scripted(long, WORDS, delay=0.1))
    with serve_app(create_app(engine, max_queue=1)) as url:
        with httpx.stream("POST", f"{url}/chat/completions", json={"messages": USER, "stream": True}) as first:
            lines = first.iter_lines()
            next(lines)
            with pytest.raises(httpx.ReadTimeout):  # queued behind the first, then gone
                httpx.post(f"{url}/chat/completions", json={"messages": USER}, timeout=0.3)
            wait_for_queue(url, queued=0)
            health = httpx.get(url.removesuffix("/v1") + "/health").json()
            rest = "".join(lines)
        after = httpx.post(f"{url}/chat/completions", json={"messages": USER}, timeout=10)
    assert health == {"status": "ok", "model": "tiny", "busy": True, "queued": 0}
    assert "[DONE]" in rest and after.status_code == 200
    assert after.json()["choices"][0]["message"]["content"] == WORDS
    assert len(engine.closed) == 2  # the one that left never reached the engine


def test_disconnect_cancels_a_non_streaming_generation():
    long = " ".join(f"w{i}" for i in range(400))  # 50 blocks at 0.1 s each
    engine = Watched(scripted(long, delay=0.1))
    with serve_app(create_app(engine)) as url:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/chat/completions", json={"messages": USER}, timeout=0.35)
        gone = time.monotonic()
        deadline = gone + 5
        while not engine.closed and time.monotonic() < deadline:
            time.sleep(0.02)
    assert engine.closed and engine.closed[0] - gone < 1.0 and engine.produced < 15


def test_chat_tool_choice_and_user_reach_the_engine():
    engine = scripted(WORDS, WORDS)
    edit = {"type": "function", "function": {"name": "edit_file", "parameters": {"type": "object"}}}
    with serve_app(create_app(engine)) as url:
        client = openai.OpenAI(base_url=url, api_key="unused", max_retries=0)
        client.chat.completions.create(model="tiny", messages=USER, tools=[*TOOLS, edit], user="person-1",
                                       tool_choice={"type": "function", "function": {"name": "read_file"}})
        client.chat.completions.create(model="tiny", messages=USER, tools=TOOLS, tool_choice="required")
        with pytest.raises(openai.BadRequestError, match="tool_choice"):
            client.chat.completions.create(model="tiny", messages=USER, tools=TOOLS,
                                           tool_choice={"type": "function", "function": {"name": "nope"}})
    named, required = engine.requests
    assert named.tools == TOOLS and named.tool_choice == "required" and named.session == "person-1"
    assert required.tools == TOOLS and required.tool_choice == "required" and required.session is None
