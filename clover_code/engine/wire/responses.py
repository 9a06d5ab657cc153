"""`serve`'s OpenAI Responses (POST /v1/responses): what Codex CLI speaks.

Stateless: the whole conversation comes in `input` each time (`store: false`, as Codex sends
it); a `previous_response_id` is refused with a 400 saying so. In: `instructions`, `input`
items (`message` with role user / developer / system / assistant, `function_call`,
`function_call_output`, `custom_tool_call`, `custom_tool_call_output`; `reasoning` items are
dropped), `function` tools and freeform `custom` tools (Codex's apply_patch: the model writes
the raw input as the call's one string argument, `input`, decoded under the tool's Lark grammar
where it is simple, and it goes back as a `custom_tool_call`), `tool_choice`,
`max_output_tokens` (cut to the window), `temperature`, `top_p`, `prompt_cache_key` (the
session). Tool types a local server cannot run
(`web_search`, `namespace`, `tool_search`, `file_search`, ...) are left out of the prompt.

Out, streamed: `response.created`, `response.in_progress`, per committed block the deltas
(`response.output_text.delta`, `response.function_call_arguments.delta`,
`response.custom_tool_call_input.delta`) each with the block's stats in a "clover" extension,
the items' `added` / `done` events, then `response.completed` (or `response.incomplete` at
the token limit, `response.failed` on an engine error) with usage and
`input_tokens_details.cached_tokens`. Codex retries a stream that ends any other way.
"""

from __future__ import annotations

import json
import time
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
    tool_call_message,
)
from clover_code.engine.wire.openai import EXTENSION, WireError, block_stats
from clover_code.engine.wire.reply import End, Segment, WireCall
from clover_code.jsonsafe import JSON, JSONObject

TEXT_PARTS = {"input_text", "output_text", "text", "refusal", "summary_text"}
IGNORED_ITEMS = {"reasoning", "web_search_call", "file_search_call", "image_generation_call", "compaction"}


class ResponsesDialect:
    name = "responses"
    busy_status = 429
    strict_model = False  # agents name their own models (gpt-...); this server has one

    def parse(self, body: JSON, headers: Mapping[str, str], window: int) -> WireCall:
        return parse_responses(body, headers, window)

    def writer(self, call: WireCall, model: str, prompt_tokens: int) -> ResponsesWriter:
        return ResponsesWriter(model, call.custom_tools)

    def error(self, exc: WireError) -> JSONObject:
        return exc.body()


# --- requests in -----------------------------------------------------------------------------

def parse_responses(body: JSON, headers: Mapping[str, str], window: int) -> WireCall:
    if not isinstance(body, dict):
        raise WireError("the request body must be a JSON object")
    if body.get("previous_response_id") is not None:
        raise WireError("this server keeps no responses (as with store: false): send the whole conversation in "
                        "'input' instead of 'previous_response_id'", param="previous_response_id")
    if not isinstance(body.get("stream", False), bool):
        raise WireError("'stream' must be true or false", param="stream")
    text_format = body.get("text", {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(text_format, dict) and text_format.get("type", "text") != "text":
        raise WireError("structured output ('text.format') is not supported here", param="text.format")
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise WireError("'model' must be a string", param="model")
    messages = _instructions(body.get("instructions")) + _conversation(body.get("input"))
    tools, custom = _tools(body.get("tools"))
    tools, choice = _tool_choice(body.get("tool_choice"), tools)
    request = ChatRequest(
        messages=one_system_message(messages), tools=tools, tool_choice=choice,
        max_tokens=reply_budget(body.get("max_output_tokens"), "max_output_tokens", window, default=4096),
        temperature=number(body, "temperature", 0.0, 2.0, 0.0), top_p=number(body, "top_p", 0.0, 1.0, 1.0),
        session=session_of(headers, body.get("prompt_cache_key"), body.get("user")))
    return WireCall(request, body.get("stream", False), model, custom_tools=frozenset(custom))


def _instructions(value: JSON) -> list[JSONObject]:
    if value is None or value == "":
        return []
    if not isinstance(value, str):
        raise WireError("'instructions' must be a string", param="instructions")
    return [{"role": "system", "content": value}]


def _conversation(value: JSON) -> list[JSONObject]:
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list) or not value:
        raise WireError("'input' must be a string or a non-empty list of items", param="input")
    out: list[JSONObject] = []
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise WireError(f"{where} must be an object", param=where)
        kind = item.get("type", "message")
        if kind == "message":
            out.append(_message(item, where))
        elif kind in ("function_call", "custom_tool_call"):
            _add_call(out, item, where)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            out.append({"role": "tool", "tool_call_id": str(item.get("call_id", "")),
                        "content": _text(item.get("output", ""), f"{where}.output")})
        elif kind not in IGNORED_ITEMS:
            raise WireError(f"{where}: an item of type {kind!r} is not supported here", param=where)
    return out


def _message(item: JSONObject, where: str) -> JSONObject:
    role = item.get("role")
    if role not in ("user", "assistant", "system", "developer"):
        raise WireError(f"{where}: a message needs a role, one of user, assistant, system, developer", param=where)
    return {"role": "system" if role == "developer" else role, "content": _text(item.get("content"), where)}


def _text(content: JSON, where: str) -> str:
    """A string, or content parts: text kept, images and files noted as left out."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise WireError(f"{where}: content must be a string or a list of parts", param=where)
    out = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in TEXT_PARTS and isinstance(part, dict) and isinstance(part.get("text"), str):
            out.append(part["text"])
        elif kind in ("input_image", "input_file"):
            out.append(IMAGE_STANDIN if kind == "input_image" else DOCUMENT_STANDIN)
        else:
            raise WireError(f"{where}[{j}]: a content part of type {kind!r} is not supported", param=f"{where}[{j}]")
    return "".join(out)


def _add_call(out: list[JSONObject], item: JSONObject, where: str) -> None:
    """A call the model made, joined to the assistant turn it belongs to."""
    name, custom_input = item.get("name"), item.get("input")
    arguments = item.get("arguments") if item["type"] == "function_call" else (
        json.dumps({"input": custom_input}) if isinstance(custom_input, str) else None)
    if not isinstance(name, str) or not isinstance(arguments, str):
        raise WireError(f"{where}: a call needs a 'name' and its 'arguments' (or 'input') as a string", param=where)
    (call,) = tool_call_message([(str(item.get("call_id", "")), name, arguments)])
    if not out or out[-1]["role"] != "assistant":
        out.append({"role": "assistant", "content": ""})
    calls = out[-1].setdefault("tool_calls", [])
    assert isinstance(calls, list)
    calls.append(call)


def _tools(value: JSON) -> tuple[list[JSONObject], list[str]]:
    """(function schemas, the names of freeform tools among them); tools nothing here runs are left out."""
    if value is None:
        return [], []
    if not isinstance(value, list):
        raise WireError("'tools' must be a list", param="tools")
    tools, custom = [], []
    for i, t in enumerate(value):
        kind = t.get("type") if isinstance(t, dict) else None
        if kind not in ("function", "custom"):
            continue
        assert isinstance(t, dict)
        if not isinstance(t.get("name"), str):
            raise WireError(f"tools[{i}] needs a 'name'", param=f"tools[{i}]")
        if kind == "function":
            tools.append(function_tool(t["name"], t.get("description"), t.get("parameters")))
        else:
            tools.append(_freeform(t))
            custom.append(t["name"])
    return tools, custom


def _freeform(tool: JSONObject) -> JSONObject:
    """A freeform tool as a function of one string, `input`. A Lark grammar for it goes with the
    string (`x-lark`): the model reads it there, and the scaffold decodes the input under it
    where it is simple enough (engine/markup/lark_subset.py), else as plain text."""
    text: JSONObject = {"type": "string", "description": "the tool's raw input, as its description says"}
    fmt = tool.get("format")
    grammar = fmt.get("definition") if isinstance(fmt, dict) and fmt.get("type") == "grammar" else None
    if isinstance(grammar, str) and isinstance(fmt, dict):
        if fmt.get("syntax") == "lark":
            text["x-lark"] = grammar
        else:
            text["description"] = f"the tool's raw input, in this {fmt.get('syntax')} syntax: {grammar}"
    description = f"{tool.get('description') or ''}\n\nPut the raw input in `input`.".strip()
    schema = {"type": "object", "properties": {"input": text}, "required": ["input"], "additionalProperties": False}
    return function_tool(str(tool["name"]), description, schema)


def _tool_choice(choice: JSON, tools: list[JSONObject]) -> tuple[list[JSONObject], str]:
    if choice in (None, "auto"):
        return tools, "auto"
    if choice == "none":
        return [], "auto"
    if choice == "required":
        return tools, "required"
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        names = {t.get("name") for t in choice.get("tools") or [] if isinstance(t, dict)}
        mode = "required" if choice.get("mode") == "required" else "auto"
        return [t for t in tools if t["function"]["name"] in names], mode
    named = [t for t in tools if isinstance(choice, dict) and t["function"]["name"] == choice.get("name")]
    if not named:
        raise WireError("'tool_choice' must be auto, none, required or {'type': 'function', 'name': NAME} "
                        "naming one of the tools", param="tool_choice")
    return named, "required"


# --- replies out -----------------------------------------------------------------------------

def _usage(end: End) -> JSONObject:
    u = end.usage
    return {"input_tokens": u.prompt, "input_tokens_details": {"cached_tokens": u.cached or 0},
            "output_tokens": u.completion, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": u.prompt + u.completion}


def _custom_input(call: ToolCall) -> str:
    """The raw input of a freeform call: its `input` argument (the model's own text, else)."""
    try:
        arguments = jsonsafe.loads(call.arguments)
    except ValueError:
        return call.arguments
    value = arguments.get("input") if isinstance(arguments, dict) else None
    return value if isinstance(value, str) else call.arguments


class ResponsesWriter:
    def __init__(self, model: str, custom_tools: frozenset[str]):
        self.id, self.model, self.custom = f"resp_{uuid.uuid4().hex[:24]}", model, custom_tools
        self.created = int(time.time())
        self.sequence = 0
        self.output: list[JSONObject] = []  # items done
        self.text: list[str] | None = None  # the open message item's text so far
        self.item_id = ""

    def _event(self, kind: str, **fields: JSON) -> bytes:
        self.sequence += 1
        return sse_event(kind, {"type": kind, "sequence_number": self.sequence, **fields})

    def response(self, status: str, end: End | None = None) -> JSONObject:
        out: JSONObject = {
            "id": self.id, "object": "response", "created_at": self.created, "status": status, "model": self.model,
            "output": list(self.output), "error": None, "incomplete_details": None, "instructions": None,
            "metadata": {}, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "store": False,
            "previous_response_id": None, "truncation": "disabled", "usage": _usage(end) if end else None}
        if status == "incomplete":
            out["incomplete_details"] = {"reason": "max_output_tokens"}
        return out

    def start(self) -> Iterable[bytes]:
        yield self._event("response.created", response=self.response("in_progress"))
        yield self._event("response.in_progress", response=self.response("in_progress"))

    def block(self, segments: list[Segment], block: Block, end: End | None) -> Iterable[bytes]:
        stats = block_stats(block)
        for segment in segments:
            yield from self._text(segment, stats) if isinstance(segment, str) else self._call(segment, stats)
        if end:
            yield from self._close_text()
            status = "incomplete" if end.reason == "length" else "completed"
            yield self._event(f"response.{status}", response=self.response(status, end))

    def _text(self, text: str, stats: JSONObject) -> Iterable[bytes]:
        at = len(self.output)
        if self.text is None:
            self.text, self.item_id = [], f"msg_{uuid.uuid4().hex[:24]}"
            item = {"type": "message", "id": self.item_id, "status": "in_progress", "role": "assistant", "content": []}
            yield self._event("response.output_item.added", output_index=at, item=item)
            yield self._event("response.content_part.added", item_id=self.item_id, output_index=at, content_index=0,
                              part={"type": "output_text", "text": "", "annotations": []})
        self.text.append(text)
        yield self._event("response.output_text.delta", item_id=self.item_id, output_index=at, content_index=0,
                          delta=text, logprobs=[], **{EXTENSION: stats})

    def _close_text(self) -> Iterable[bytes]:
        if self.text is None:
            return
        text, at, self.text = "".join(self.text), len(self.output), None
        part = {"type": "output_text", "text": text, "annotations": []}
        yield self._event("response.output_text.done", item_id=self.item_id, output_index=at, content_index=0,
                          text=text, logprobs=[])
        yield self._event("response.content_part.done", item_id=self.item_id, output_index=at, content_index=0,
                          part=part)
        yield from self._done(message_item(self.item_id, text))

    def _call(self, call: ToolCall, stats: JSONObject) -> Iterable[bytes]:
        yield from self._close_text()
        item, at = call_item(call, self.custom), len(self.output)
        value_key, kind = ("input", "custom_tool_call_input") if item["type"] == "custom_tool_call" else (
            "arguments", "function_call_arguments")
        yield self._event("response.output_item.added", output_index=at,
                          item={**item, value_key: "", "status": "in_progress"})
        yield self._event(f"response.{kind}.delta", item_id=item["id"], output_index=at, delta=item[value_key],
                          **{EXTENSION: stats})
        yield self._event(f"response.{kind}.done", item_id=item["id"], output_index=at, **{value_key: item[value_key]})
        yield from self._done(item)

    def _done(self, item: JSONObject) -> Iterable[bytes]:
        yield self._event("response.output_item.done", output_index=len(self.output), item=item)
        self.output.append(item)

    def ping(self) -> bytes:
        return b": ping\n\n"  # Responses has no keep-alive event; an SSE comment reaches the client all the same

    def fail(self, message: str) -> bytes:
        failed = {**self.response("failed"), "error": {"code": "server_error", "message": message}}
        return self._event("response.failed", response=failed)

    def whole(self, segments: list[Segment], blocks: list[Block], end: End) -> JSONObject:
        self.output = [message_item(f"msg_{uuid.uuid4().hex[:24]}", s) if isinstance(s, str)
                       else call_item(s, self.custom) for s in segments]
        out = self.response("incomplete" if end.reason == "length" else "completed", end)
        out[EXTENSION] = {"blocks": [block_stats(b) for b in blocks]}
        return out


def message_item(item_id: str, text: str) -> JSONObject:
    return {"type": "message", "id": item_id, "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def call_item(call: ToolCall, custom: frozenset[str]) -> JSONObject:
    if call.name in custom:
        return {"type": "custom_tool_call", "id": f"ctc_{uuid.uuid4().hex[:24]}", "call_id": call.id,
                "name": call.name, "input": _custom_input(call), "status": "completed"}
    return {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}", "call_id": call.id, "name": call.name,
            "arguments": call.arguments, "status": "completed"}
