"""`serve`'s Chat Completions (POST /v1/chat/completions): a request becomes a ChatRequest,
and a reply becomes one `chat.completion.chunk` per committed block (the block's stats in the
"clover" extension, usage on the last) then `data: [DONE]`, or one `chat.completion`."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from clover_code.engine import Block, ChatRequest, ToolCall
from clover_code.engine.policies import PolicyError, parse_policy
from clover_code.engine.wire.convert import number, session_of, stop_strings
from clover_code.engine.wire.openai import (
    WireError,
    chunk_json,
    completion_id,
    completion_json,
    error_body,
    sse,
    tool_call_json,
    usage_json,
)
from clover_code.engine.wire.reply import End, Segment, WireCall, text_of
from clover_code.jsonsafe import JSON, JSONObject

ROLES = {"system", "developer", "user", "assistant", "tool"}


class ChatDialect:
    name = "chat"
    busy_status = 429
    strict_model = True  # a model this server does not serve is a 404, as OpenAI answers

    def parse(self, body: JSON, headers: Mapping[str, str], window: int) -> WireCall:
        return parse_chat(body, max_tokens_limit=window, headers=headers)

    def writer(self, call: WireCall, model: str, prompt_tokens: int) -> ChatWriter:
        return ChatWriter(model)

    def error(self, exc: WireError) -> JSONObject:
        return exc.body()


class ChatWriter:
    def __init__(self, model: str):
        self.cid, self.created, self.model = completion_id(), int(time.time()), model
        self.calls = 0

    def start(self) -> Iterable[bytes]:
        return ()

    def block(self, segments: list[Segment], block: Block, end: End | None) -> Iterable[bytes]:
        calls = self._calls(segments)
        yield sse(chunk_json(self.cid, self.model, self.created, text=text_of(segments), calls=calls,
                             finish=end.reason if end else None, block=block, first=block.index == 0,
                             usage=_usage(end) if end else None))
        if end:
            yield b"data: [DONE]\n\n"

    def ping(self) -> bytes:
        return b": ping\n\n"

    def fail(self, message: str) -> bytes:
        return sse(error_body(message, "server_error"))

    def whole(self, segments: list[Segment], blocks: list[Block], end: End) -> JSONObject:
        return completion_json(self.cid, self.model, text=text_of(segments), calls=self._calls(segments),
                               finish=end.reason, usage=_usage(end), blocks=blocks)

    def _calls(self, segments: list[Segment]) -> list[JSONObject]:
        made = [s for s in segments if isinstance(s, ToolCall)]
        calls = [tool_call_json(call, self.calls + i) for i, call in enumerate(made)]
        self.calls += len(calls)
        return calls


def _usage(end: End) -> JSONObject:
    return usage_json(end.usage.prompt, end.usage.completion, end.usage.cached)


# --- requests in -----------------------------------------------------------------------------

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


def _tool_choice(choice: JSON, tools: list[JSONObject]) -> tuple[list[JSONObject], str]:
    """(the tools the reply may call, "auto" or "required") for OpenAI's tool_choice."""
    if choice == "none":
        return [], "auto"
    if choice == "required":
        return tools, "required"
    if not isinstance(choice, dict) or choice.get("type") != "function":
        return tools, "auto"  # auto, or a kind this server does not know: as before, the model chooses
    fn = choice.get("function")
    name = fn.get("name") if isinstance(fn, dict) else None
    named = [t for t in tools if t["function"].get("name") == name]
    if not named:
        raise WireError("'tool_choice' must be auto, none, required or {'type': 'function', 'function': "
                        "{'name': NAME}} naming one of the tools", param="tool_choice")
    return named, "required"


def _policy(policy: JSON) -> str | None:
    """A decoding policy `NAME[:KNOB]` (engine/policies.py): checked here, applied by the engine."""
    if policy is None:
        return None
    try:
        if not isinstance(policy, str):
            raise PolicyError("'policy' must be a string, NAME[:KNOB]")
        parse_policy(policy)
    except PolicyError as e:
        raise WireError(str(e), param="policy") from None
    return policy


def parse_chat(body: JSON, *, max_tokens_limit: int, headers: Mapping[str, str] | None = None) -> WireCall:
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
        threshold = number(body, "threshold", 0.0, 1.0, 0.0)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise WireError("'model' must be a string", param="model")
    tools, choice = _tool_choice(body.get("tool_choice"), _tools(body.get("tools")))
    request = ChatRequest(
        messages=[_message(m, i) for i, m in enumerate(messages)], tools=tools, max_tokens=max_tokens,
        temperature=number(body, "temperature", 0.0, 2.0, 0.0), top_p=number(body, "top_p", 0.0, 1.0, 1.0),
        stop=stop_strings(body.get("stop"), "stop"), threshold=threshold, seed=seed, tool_choice=choice,
        session=session_of(headers or {}, body.get("user")), policy=_policy(body.get("policy")))
    return WireCall(request, body.get("stream", False), model)
