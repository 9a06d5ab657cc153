"""The real `clover-code serve` process with `--engine`: scripted replies (the wire formats end
to end without a model) and a remote server it translates for (Messages and Responses in front
of a Chat Completions server); engines that cannot run are refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import httpx
import openai
import pytest
from test_server import CALL, TOOLS, scripted

from clover_code.engine.wire.server import create_app
from tests.support.serving import free_port, serve_app, serve_process

USER = [{"role": "user", "content": "hi"}]


def replies_file(tmp_path: Path, *replies) -> str:
    path = tmp_path / "replies.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in replies))
    return str(path)


def test_scripted_replies_one_per_request_in_every_format(tmp_path):
    replies = replies_file(tmp_path, "From Messages.", {"content": "", "tool_calls": [
        {"id": "call_x", "name": "exec_command", "arguments": {"cmd": "ls"}}]}, "From Chat.")
    with serve_process("--engine", f"scripted:{replies}", "--api-key", "k-9") as url:
        message = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="k-9", max_retries=0).messages.create(
            model="claude-x", max_tokens=100, messages=USER)
        oa = openai.OpenAI(base_url=url, api_key="k-9", max_retries=0)
        response = oa.responses.create(model="gpt-x", input="run ls", tools=[
            {"type": "function", "name": "exec_command", "parameters": {"type": "object", "properties": {
                "cmd": {"type": "string"}}}}])
        chat = oa.chat.completions.create(model="scripted", messages=USER)
        root = httpx.head(url.removesuffix("/v1") + "/")  # Claude Code's first request
    assert message.content[0].text == "From Messages."
    assert response.output[0].type == "function_call" and json.loads(response.output[0].arguments) == {"cmd": "ls"}
    assert chat.choices[0].message.content == "From Chat." and root.status_code == 200


def test_translating_for_a_remote_server(tmp_path):
    upstream = scripted("Let me look. " + CALL, "Plain words.")
    tools = [{"name": "read_file", "input_schema": TOOLS[0]["function"]["parameters"]}]
    with serve_app(create_app(upstream, model_name="upstream-model")) as up, \
            serve_process("--engine", "remote", "--endpoint", up) as url:
        client = anthropic.Anthropic(base_url=url.removesuffix("/v1"), api_key="x", max_retries=0)
        with client.messages.stream(model="claude-x", max_tokens=100, messages=USER, tools=tools,
                                    extra_headers={"X-Claude-Code-Session-Id": "s-1"}) as stream:
            first = stream.get_final_message()
        second = openai.OpenAI(base_url=url, api_key="x", max_retries=0).responses.create(
            model="gpt-x", input="hi", prompt_cache_key="s-2")
    assert [b.type for b in first.content] == ["text", "tool_use"] and first.content[1].input == {"path": "a.py"}
    assert second.output_text == "Plain words."
    assert upstream.requests[0].tools == TOOLS and upstream.requests[0].session == "s-1"
    assert upstream.requests[1].session == "s-2"


@pytest.mark.parametrize(("flags", "says"), [
    (["--engine", "remote"], "--endpoint URL"),
    (["--engine", "scripted:/no/such/file.jsonl"], "no such file"),
    (["--engine", "cloud"], "unknown engine 'cloud'"),
])
def test_an_engine_that_cannot_run_is_refused_in_one_line(cli, flags, says, monkeypatch):
    monkeypatch.delenv("CLOVER_ENDPOINT", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    result = cli("serve", *flags, "--port", str(free_port()))
    assert result.returncode == 2 and says in result.stderr and "Traceback" not in result.stderr
