"""The OpenAI-compatible wire format, both directions: request validation, chunk and
completion shapes, error bodies, and an incremental SSE reader.

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
from dataclasses import dataclass

from clover_code.engine import Block, ChatRequest, ToolCall
from clover_code.jsonsafe import JSON, JSONObject

EXTENSION = "clover"
ROLES = {"system", "developer", "user", "assistant", "tool"}


class WireError(Exception):
    """A request the server refuses; becomes an OpenAI-style error body."""

    def __init__(self, message: str, *, status: int = 400, type: str = "invalid_request_error",
                 param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.message, self.status, self.type, self.param, self.code = message, status, type, param, code

    def body(self) -> JSONObject:
        return error_body(self.message, self.type, self.param, self.code)


def error_body(message: str, type: str = "invalid_request_error", param: str | None = None,
               code: str | None = None) -> JSONObject:
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


# --- server side: requests in ---------------------------------------------------------

@dataclass
class ChatCall:
    """A validated /v1/chat/completions request."""

    request: ChatRequest
    stream: bool
    model: str | None


def _number(body: JSONObject, name: str, lo: float, hi: float, default: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise WireError(f"'{name}' must be a number from {lo} to {hi}", param=name)
    return float(value)


def _text_content(content: JSON, where: str) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise WireError(f"{where}: only text content parts are supported", param=where)
            parts.append(part["text"])
        return "".join(parts)
    raise WireError(f"{where}: content must be a string or a list of text parts", param=where)


def _message(m: JSON, i: int) -> JSONObject:
    where = f"messages[{i}]"
    if not isinstance(m, dict) or m.get("role") not in ROLES:
        raise WireError(f"{where}: each message needs a role, one of {', '.join(sorted(ROLES))}", param=where)
    role = "system" if m["role"] == "developer" else m["role"]
    out: JSONObject = {"role": role, "content": _text_content(m.get("content"), f"{where}.content")}
    if role == "tool":
        if not isinstance(m.get("tool_call_id", ""), str):
            raise WireError(f"{where}.tool_call_id must be a string", param=f"{where}.tool_call_id")
        out["tool_call_id"] = m.get("tool_call_id", "")
    if m.get("tool_calls"):
        calls = m["tool_calls"]
        if not isinstance(calls, list) or not all(
                isinstance(c, dict) and isinstance(c.get("function"), dict)
                and isinstance(c["function"].get("name"), str) for c in calls):
            raise WireError(f"{where}.tool_calls must be a list of function calls", param=f"{where}.tool_calls")
        out["tool_calls"] = calls
    if isinstance(m.get("name"), str):
        out["name"] = m["name"]
    return out


def _tools(tools: JSON) -> list[JSONObject]:
    if tools is None:
        return []
    if not isinstance(tools, list):
        raise WireError("'tools' must be a list", param="tools")
    for i, t in enumerate(tools):
        fn = t.get("function") if isinstance(t, dict) else None
        if t.get("type", "function") != "function" or not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            raise WireError(f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}",
                            param=f"tools[{i}]")
    return tools


def _stop(stop: JSON) -> tuple[str, ...]:
    if stop is None:
        return ()
    if isinstance(stop, str):
        return (stop,)
    if isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        return tuple(stop)
    raise WireError("'stop' must be a string or a list of strings", param="stop")


def parse_chat(body: JSON, *, max_tokens_limit: int) -> ChatCall:
    """Validate a request body; raise WireError (400) saying which field is wrong."""
    if not isinstance(body, dict):
        raise WireError("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise WireError("'messages' must be a non-empty list", param="messages")
    max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is None:
        max_tokens = min(4096, max_tokens_limit)
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 1 <= max_tokens <= max_tokens_limit:
        raise WireError(f"'max_tokens' must be an integer from 1 to {max_tokens_limit}", param="max_tokens")
    if body.get("n", 1) != 1:
        raise WireError("only n=1 is supported", param="n")
    if not isinstance(body.get("stream", False), bool):
        raise WireError("'stream' must be true or false", param="stream")
    seed = body.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise WireError("'seed' must be an integer", param="seed")
    threshold = body.get("threshold")
    if threshold is not None:
        threshold = _number(body, "threshold", 0.0, 1.0, 0.0)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise WireError("'model' must be a string", param="model")
    tools = _tools(body.get("tools"))
    if body.get("tool_choice") == "none":
        tools = []
    request = ChatRequest(
        messages=[_message(m, i) for i, m in enumerate(messages)], tools=tools, max_tokens=max_tokens,
        temperature=_number(body, "temperature", 0.0, 2.0, 0.0), top_p=_number(body, "top_p", 0.0, 1.0, 1.0),
        stop=_stop(body.get("stop")), threshold=threshold, seed=seed)
    return ChatCall(request, body.get("stream", False), model)


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
