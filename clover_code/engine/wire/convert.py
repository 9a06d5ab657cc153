"""What every wire format's request conversion shares: checked numbers and stop strings, the
reply budget, one system message, stand-ins for what a text model cannot read, the client's
session, and SSE framing."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from clover_code.engine.wire.openai import WireError
from clover_code.jsonsafe import JSON, JSONObject

# Where an agent says whose conversation a request continues, most specific first.
SESSION_HEADERS = ("x-claude-code-session-id", "session-id", "x-session-id")
IMAGE_STANDIN = "[an image was here; this model reads text only]"
DOCUMENT_STANDIN = "[a document was here; this model reads text only]"


def number(body: JSONObject, name: str, lo: float, hi: float, default: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise WireError(f"'{name}' must be a number from {lo} to {hi}", param=name)
    return float(value)


def reply_budget(value: JSON, name: str, window: int, *, default: int) -> int:
    """Tokens a reply may take. Agents ask for more than a local model's window holds (Claude
    Code: 64,000 whatever the model), so a number above the window is cut to it, not refused:
    the engine caps it again to the room the prompt leaves."""
    if value is None:
        return min(default, window)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise WireError(f"'{name}' must be a positive integer", param=name)
    return min(value, window)


def stop_strings(value: JSON, name: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return tuple(value)
    raise WireError(f"'{name}' must be a string or a list of strings", param=name)


def one_system_message(messages: list[JSONObject]) -> list[JSONObject]:
    """The leading system messages as one; a system message later on becomes a user turn.
    Chat templates such as Qwen's take one system message, first (some refuse any other); an
    agent's mid-conversation notes (Claude Code's, Codex's developer messages) stay in order."""
    lead = 0
    while lead < len(messages) and messages[lead]["role"] == "system":
        lead += 1
    out = messages[lead:]
    if lead:
        texts = [str(m["content"]) for m in messages[:lead] if m.get("content")]
        out = [{"role": "system", "content": "\n\n".join(texts)}, *out]
    return [{**m, "role": "user"} if m["role"] == "system" and i else m for i, m in enumerate(out)]


def session_of(headers: Mapping[str, str], *candidates: JSON) -> str | None:
    """The client's session id: a header an agent sends, else the first string candidate from
    the body (`prompt_cache_key`, `metadata.user_id`, `user`)."""
    for name in SESSION_HEADERS:
        if value := headers.get(name, "").strip():
            return value[:200]
    for value in candidates:
        if isinstance(value, str) and value:
            return value[:200]
    return None


def function_tool(name: str, description: JSON, parameters: JSON) -> JSONObject:
    """A tool as the engine takes it (an OpenAI function schema)."""
    schema = parameters if isinstance(parameters, dict) else {"type": "object", "properties": {}}
    fn: JSONObject = {"name": name, "parameters": schema}
    if isinstance(description, str) and description:
        fn["description"] = description
    return {"type": "function", "function": fn}


def tool_call_message(calls: Iterable[tuple[str, str, str]]) -> list[JSONObject]:
    """(id, name, arguments JSON) -> the tool_calls of an assistant message."""
    return [{"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
            for cid, name, args in calls]


def sse_event(event: str, data: JSONObject) -> bytes:
    """An SSE event with a name (Messages, Responses); Chat Completions sends data lines only."""
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event}\ndata: {payload}\n\n".encode()
