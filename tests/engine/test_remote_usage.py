"""A reply that is not streamed counts its tokens from the server's `usage` (issue 37: they
were 0 for a reply holding only tool calls), and estimates them when the server says nothing."""

from __future__ import annotations

import json

from clover_code.engine import ChatRequest
from clover_code.engine.wire.remote import RemoteEngine
from tests.support.serving import RawServer, Reply

TOOLS = [{"type": "function", "function": {"name": "read_file"}}]


def whole(usage: dict | None) -> Reply:
    body = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "read_file", "arguments": "{\"path\": \"numkit/stats.py\"}"}}]}}]}
    if usage is not None:
        body["usage"] = usage
    return Reply(headers={"Content-Type": "application/json"}, parts=[json.dumps(body).encode()])


async def blocks_of(reply: Reply) -> list:
    async with RawServer([reply]) as srv:
        engine = RemoteEngine(srv.url, model="m1", context_window=8192, stream=False, backoff=0.01)
        request = ChatRequest(messages=[{"role": "user", "content": "fix it"}], tools=TOOLS)
        blocks = [b async for b in engine.stream(request)]
        await engine.aclose()
    assert srv.requests[0]["body"]["stream"] is False
    return blocks


async def test_a_whole_reply_takes_its_token_count_from_usage():
    (block,) = await blocks_of(whole({"prompt_tokens": 120, "completion_tokens": 17, "total_tokens": 137}))
    assert block.tokens == 17 and block.prompt_tokens == 120
    assert block.tool_calls[0].name == "read_file"


async def test_a_whole_reply_without_usage_estimates_its_tool_calls_too():
    (block,) = await blocks_of(whole(None))
    assert block.tokens > 0 and block.prompt_tokens is None
