"""The OpenAI-compatible wire format, both directions: chunk and completion shapes, error
bodies, the client's request body and an incremental SSE reader (`serve`'s side of Chat
Completions requests is chat.py).

`clover-code serve` adds one extension object to every stream chunk,
    "clover": {"block": i, "tokens": n, "forward_passes": s, "ms": m}
carrying the stats of the committed block the chunk holds. Other servers never send it.
Standard library only: the remote path must stay cheap to import.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable

from clover_code.engine import Block, ChatRequest, ToolCall
from clover_code.jsonsafe import JSONObject

EXTENSION = "clover"


class WireError(Exception):
    """A request the server refuses: an HTTP status, and an error body in the shape of the
    client's wire format (OpenAI's here; messages.py renders Anthropic's)."""

    def __init__(self, message: str, *, status: int = 400, type: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.message, self.status, self.type, self.param, self.code = message, status, type, param, code
        self.headers = headers

    def body(self) -> JSONObject:
        return error_body(self.message, self.type, self.param, self.code)


class PromptTooLong(WireError):
    """A prompt that leaves no room for a reply in the context window."""

    def __init__(self, tokens: int, window: int):
        # Worded as OpenAI does, so clients (RemoteEngine too) read both numbers.
        super().__init__(f"This model's maximum context length is {window} tokens (prompt plus reply); this "
                         f"request has {tokens} input tokens, which leaves no room for a reply: shorten the "
                         "conversation", param="messages", code="context_length_exceeded")
        self.tokens, self.window = tokens, window


def error_body(message: str, type: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> JSONObject:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


# --- server side: responses out -------------------------------------------------------

def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def tool_call_json(call: ToolCall, index: int) -> JSONObject:
    return {"index": index, "id": call.id, "type": "function",
            "function": {"name": call.name, "arguments": call.arguments}}


def usage_json(prompt_tokens: int, completion_tokens: int, cached_tokens: int | None = None) -> JSONObject:
    """OpenAI usage; `cached_tokens`: of the prompt, those served from the engine's prefix cache."""
    usage: JSONObject = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                             "total_tokens": prompt_tokens + completion_tokens}
    if cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    return usage


def block_stats(block: Block) -> JSONObject:
    ms = None if block.ms is None else round(block.ms, 3)
    return {"block": block.index, "tokens": block.tokens, "forward_passes": block.forward_passes, "ms": ms}


def chunk_json(cid: str, model: str, created: int, *, text: str, calls: list[JSONObject],
               finish: str | None, block: Block, first: bool, usage: JSONObject | None) -> JSONObject:
    delta: JSONObject = {"role": "assistant"} if first else {}
    delta["content"] = text
    if calls:
        delta["tool_calls"] = calls
    out: JSONObject = {
        "id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        EXTENSION: block_stats(block)}
    if usage is not None:
        out["usage"] = usage
    return out


def completion_json(cid: str, model: str, *, text: str, calls: list[JSONObject], finish: str,
                    usage: JSONObject, blocks: list[Block]) -> JSONObject:
    message: JSONObject = {"role": "assistant", "content": text or (None if calls else "")}
    if calls:
        message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
    return {
        "id": cid, "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": usage,
        EXTENSION: {"blocks": [block_stats(b) for b in blocks]}}


def sse(data: JSONObject | str) -> bytes:
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"data: {payload}\n\n".encode()


# --- client side ----------------------------------------------------------------------

def wire_messages(messages: Iterable[JSONObject]) -> list[JSONObject]:
    """Messages as JSON, a null content as "" (strict servers such as llama-cpp-python reject
    null, and their templates need the key). Assistant tool_calls are OpenAI dicts already."""
    return [{**m, "content": ""} if m.get("content", "") is None else m for m in messages]


def request_json(request: ChatRequest, model: str, *, stream: bool = True) -> JSONObject:
    body: JSONObject = {
        "model": model, "messages": wire_messages(request.messages), "stream": stream,
        "max_tokens": request.max_tokens, "temperature": request.temperature, "top_p": request.top_p}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if request.stop:
        body["stop"] = list(request.stop)
    if request.seed is not None:
        body["seed"] = request.seed
    if request.threshold is not None:
        body["threshold"] = request.threshold
    if request.policy is not None:
        body["policy"] = request.policy
    if request.tools:
        body["tools"] = request.tools
        body["tool_choice"] = request.tool_choice
    if request.session is not None:
        body["user"] = request.session  # session affinity for routers that key on it
    return body


class SSEReader:
    """Server-sent events, line by line: `feed(line)` returns an event's data when one completes."""

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        line = line.rstrip("\r\n")
        if not line:  # a blank line ends the event
            data, self._data = "\n".join(self._data), []
            return data if data else None
        if line.startswith(":"):  # comment / keep-alive
            return None
        field, _, value = line.partition(":")
        if field == "data":
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None
