"""`serve`'s Anthropic Messages (POST /v1/messages, /v1/messages/count_tokens): what Claude
Code and the `anthropic` SDK speak.

In: `system` (a string or text blocks, less Claude Code's billing header), `messages` with
text, `tool_use`, `tool_result` (a tool message each) and mid-conversation `system` turns,
client `tools` (server tools such as web search are left out: nothing here runs them),
`tool_choice`, `stop_sequences`, `max_tokens` (cut to the window), `temperature`, `top_p`.
What a local model has no use for is accepted and ignored: `thinking`, `cache_control`,
`context_management`, `output_config`, `metadata`, `anthropic-beta`. Images and documents
become a short note saying they were left out.

Out, streamed: `message_start`, `ping`, per committed block `content_block_delta` events
(`text_delta`, or a `tool_use` block with its `input_json_delta`) each with the block's stats
in a "clover" extension, then `message_delta` (stop_reason, usage with
`cache_read_input_tokens`: prompt tokens reused from the prefix cache) and `message_stop`.
Errors have Anthropic's shape, `{"type": "error", "error": {"type", "message"}}`.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping

from clover_code import jsonsafe
from clover_code.engine import Block, ChatRequest, ToolCall
from clover_code.engine.wire.convert import (
    DOCUMENT_STANDIN,
    IMAGE_STANDIN,
    function_tool,
    number,
    one_system_message,
    reply_budget,
    session_of,
    sse_event,
    stop_strings,
    tool_call_message,
)
from clover_code.engine.wire.openai import EXTENSION, PromptTooLong, WireError, block_stats
from clover_code.engine.wire.reply import End, Segment, WireCall
from clover_code.jsonsafe import JSON, JSONObject

BILLING_HEADER = "x-anthropic-billing-header:"  # Claude Code's first system block, new on every request
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 408: "timeout_error", 413: "request_too_large", 429: "rate_limit_error",
               500: "api_error", 529: "overloaded_error"}
STOP_REASONS = {"length": "max_tokens", "tool_calls": "tool_use"}
# What a local model neither wrote nor can use: its thinking, server tools' traffic, and
# Claude Code's tool search answers (the tools themselves come in `tools`).
IGNORED_BLOCKS = {"thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result",
                  "web_fetch_tool_result", "code_execution_tool_result", "tool_reference"}


class MessagesDialect:
    name = "messages"
    busy_status = 529  # Anthropic's "overloaded": Claude Code backs off and retries
    strict_model = False  # agents name their own models (claude-...); this server has one

    def parse(self, body: JSON, headers: Mapping[str, str], window: int) -> WireCall:
        return parse_messages(body, headers, window)

    def writer(self, call: WireCall, model: str, prompt_tokens: int) -> MessagesWriter:
        return MessagesWriter(model, prompt_tokens)

    def error(self, exc: WireError) -> JSONObject:
        message = exc.message
        if isinstance(exc, PromptTooLong):  # Claude Code compacts the conversation on these words
            message = f"prompt is too long: {exc.tokens} tokens > {exc.window} maximum"
        kind = ERROR_TYPES.get(exc.status, "api_error" if exc.status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}


# --- requests in -----------------------------------------------------------------------------

def parse_messages(body: JSON, headers: Mapping[str, str], window: int) -> WireCall:
    call = parse_count(body, headers)
    assert isinstance(body, dict)  # parse_count checked
    if not isinstance(body.get("stream", False), bool):
        raise WireError("'stream' must be true or false", param="stream")
    request = call.request
    request.max_tokens = reply_budget(body.get("max_tokens"), "max_tokens", window, default=4096)
    request.temperature = number(body, "temperature", 0.0, 1.0, 0.0)
    request.top_p = number(body, "top_p", 0.0, 1.0, 1.0)
    request.stop = stop_strings(body.get("stop_sequences"), "stop_sequences")
    return WireCall(request, body.get("stream", False), call.model)


def parse_count(body: JSON, headers: Mapping[str, str]) -> WireCall:
    """The prompt part of a request (all count_tokens takes): system, messages, tools."""
    if not isinstance(body, dict):
        raise WireError("the request body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise WireError("'messages' must be a non-empty list", param="messages")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise WireError("'model' must be a string", param="model")
    chat = [*_system(body.get("system")), *(out for i, m in enumerate(messages) for out in _message(m, i))]
    tools, choice = _tool_choice(body.get("tool_choice"), _tools(body.get("tools")))
    metadata = body.get("metadata")
    user = metadata.get("user_id") if isinstance(metadata, dict) else None
    request = ChatRequest(messages=one_system_message(chat), tools=tools, tool_choice=choice,
                          session=session_of(headers, user))
    return WireCall(request, False, model)


def _texts(content: JSON, where: str) -> list[JSONObject]:
    """Content as a list of blocks (a string is one text block)."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list) and all(isinstance(b, dict) and isinstance(b.get("type"), str) for b in content):
        return content
    raise WireError(f"{where} must be a string or a list of content blocks, each with a 'type'", param=where)


def _plain(blocks: list[JSONObject], where: str) -> str:
    """The text of text, image and document blocks (the last two as a note)."""
    out = []
    for j, b in enumerate(blocks):
        if b["type"] == "text" and isinstance(b.get("text"), str):
            out.append(b["text"])
        elif b["type"] in ("image", "document"):
            out.append(IMAGE_STANDIN if b["type"] == "image" else DOCUMENT_STANDIN)
        elif b["type"] not in IGNORED_BLOCKS:
            raise WireError(f"{where}[{j}]: a {b['type']!r} block is not supported here", param=f"{where}[{j}]")
    return "".join(out)


def _system(value: JSON) -> list[JSONObject]:
    if value is None:
        return []
    blocks = [b for b in _texts(value, "system") if not str(b.get("text", "")).startswith(BILLING_HEADER)]
    text = "\n".join(b["text"] for b in blocks if b["type"] == "text" and isinstance(b.get("text"), str))
    return [{"role": "system", "content": text}] if text else []


def _message(m: JSON, i: int) -> list[JSONObject]:
    """One Messages turn -> chat messages (a user turn's tool results: one tool message each)."""
    where = f"messages[{i}]"
    if not isinstance(m, dict) or m.get("role") not in ("user", "assistant", "system"):
        raise WireError(f"{where}: each message needs a role, user or assistant", param=where)
    blocks = _texts(m.get("content"), f"{where}.content")
    if m["role"] == "assistant":
        return [_assistant(blocks, f"{where}.content")]
    out = [_tool_result(b, f"{where}.content[{j}]") for j, b in enumerate(blocks) if b["type"] == "tool_result"]
    text = _plain([b for b in blocks if b["type"] != "tool_result"], f"{where}.content")
    if text or not out:
        out.append({"role": m["role"], "content": text})
    return out


def _assistant(blocks: list[JSONObject], where: str) -> JSONObject:
    uses = [b for b in blocks if b["type"] == "tool_use"]
    for b in uses:
        if not isinstance(b.get("name"), str) or not isinstance(b.get("input", {}), dict):
            raise WireError(f"{where}: a tool_use block needs a 'name' and an 'input' object", param=where)
    out: JSONObject = {"role": "assistant", "content": _plain([b for b in blocks if b["type"] != "tool_use"], where)}
    if uses:
        out["tool_calls"] = tool_call_message((str(b.get("id", "")), str(b["name"]), json.dumps(b.get("input", {})))
                                              for b in uses)
    return out


def _tool_result(block: JSONObject, where: str) -> JSONObject:
    content = block.get("content", "")
    text = _plain(_texts(content, f"{where}.content"), f"{where}.content") if content else ""
    if block.get("is_error") is True:
        text = f"Error: {text}"
    return {"role": "tool", "tool_call_id": str(block.get("tool_use_id", "")), "content": text}


def _tools(value: JSON) -> list[JSONObject]:
    """Client tools as function schemas; server tools (typed: web_search_..., bash_...) left out."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise WireError("'tools' must be a list", param="tools")
    out = []
    for i, t in enumerate(value):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise WireError(f"tools[{i}] needs a 'name'", param=f"tools[{i}]")
        if t.get("type", "custom") == "custom":
            out.append(function_tool(t["name"], t.get("description"), t.get("input_schema")))
    return out


def _tool_choice(choice: JSON, tools: list[JSONObject]) -> tuple[list[JSONObject], str]:
    kind = choice.get("type") if isinstance(choice, dict) else "auto" if choice is None else None
    if kind == "auto":
        return tools, "auto"
    if kind == "none":
        return [], "auto"
    if kind == "any" and tools:
        return tools, "required"
    named = [t for t in tools if isinstance(choice, dict) and t["function"]["name"] == choice.get("name")]
    if kind == "tool" and named:
        return named, "required"
    raise WireError("'tool_choice' must be {'type': 'auto' | 'any' | 'none'} or {'type': 'tool', 'name': NAME} "
                    "naming one of the tools", param="tool_choice")


# --- replies out -----------------------------------------------------------------------------

def _usage(end: End) -> JSONObject:
    cached = end.usage.cached or 0
    return {"input_tokens": end.usage.prompt - cached, "output_tokens": end.usage.completion,
            "cache_read_input_tokens": cached, "cache_creation_input_tokens": 0}


def _stop_reason(end: End) -> str:
    if end.reason == "stop" and end.stop_sequence is not None:
        return "stop_sequence"
    return STOP_REASONS.get(end.reason, "end_turn")


def _tool_use(call: ToolCall) -> JSONObject:
    try:
        arguments = jsonsafe.loads(call.arguments)
    except ValueError:
        arguments = None
    return {"type": "tool_use", "id": call.id, "name": call.name,
            "input": arguments if isinstance(arguments, dict) else {}}


class MessagesWriter:
    def __init__(self, model: str, prompt_tokens: int):
        self.id, self.model, self.prompt_tokens = f"msg_{uuid.uuid4().hex[:24]}", model, prompt_tokens
        self.index = -1  # of the last content block started
        self.text_open = False  # whether that block is a text block still open

    def message(self, content: list[JSONObject], stop_reason: str | None, usage: JSONObject) -> JSONObject:
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model, "content": content,
                "stop_reason": stop_reason, "stop_sequence": None, "usage": usage}

    def start(self) -> Iterable[bytes]:
        usage = {"input_tokens": self.prompt_tokens, "output_tokens": 0}
        yield sse_event("message_start", {"type": "message_start", "message": self.message([], None, usage)})
        yield self.ping()

    def block(self, segments: list[Segment], block: Block, end: End | None) -> Iterable[bytes]:
        stats = block_stats(block)
        for segment in segments:
            yield from self._text(segment, stats) if isinstance(segment, str) else self._call(segment, stats)
        if end:
            yield from self._close()
            delta = {"stop_reason": _stop_reason(end), "stop_sequence": end.stop_sequence}
            yield sse_event("message_delta", {"type": "message_delta", "delta": delta, "usage": _usage(end)})
            yield sse_event("message_stop", {"type": "message_stop"})

    def _text(self, text: str, stats: JSONObject) -> Iterable[bytes]:
        if not self.text_open:
            yield from self._open({"type": "text", "text": ""})
            self.text_open = True
        yield self._delta({"type": "text_delta", "text": text}, stats)

    def _call(self, call: ToolCall, stats: JSONObject) -> Iterable[bytes]:
        yield from self._close()
        use = _tool_use(call)
        yield from self._open({**use, "input": {}})
        yield self._delta({"type": "input_json_delta", "partial_json": json.dumps(use["input"])}, stats)
        yield from self._close(force=True)

    def _open(self, content_block: JSONObject) -> Iterable[bytes]:
        self.index += 1
        yield sse_event("content_block_start",
                        {"type": "content_block_start", "index": self.index, "content_block": content_block})

    def _delta(self, delta: JSONObject, stats: JSONObject) -> bytes:
        return sse_event("content_block_delta",
                         {"type": "content_block_delta", "index": self.index, "delta": delta, EXTENSION: stats})

    def _close(self, force: bool = False) -> Iterable[bytes]:
        if self.text_open or force:
            self.text_open = False
            yield sse_event("content_block_stop", {"type": "content_block_stop", "index": self.index})

    def ping(self) -> bytes:
        return sse_event("ping", {"type": "ping"})

    def fail(self, message: str) -> bytes:
        return sse_event("error", {"type": "error", "error": {"type": "api_error", "message": message}})

    def whole(self, segments: list[Segment], blocks: list[Block], end: End) -> JSONObject:
        content = [{"type": "text", "text": s} if isinstance(s, str) else _tool_use(s) for s in segments]
        out = self.message(content, _stop_reason(end), _usage(end))
        out["stop_sequence"] = end.stop_sequence
        out[EXTENSION] = {"blocks": [block_stats(b) for b in blocks]}
        return out
