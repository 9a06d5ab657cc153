"""ScriptedEngine: replays given replies block by block, for tests and demos.

Replies come from a list or a JSONL file (`--engine scripted:FILE`), one per request,
each either a string or an object:
    {"content": "text", "tool_calls": [{"name": "read_file", "arguments": {...}}],
     "delay": 0.01}
Text is cut into words and grouped `block_size` words to a block, so streaming,
cancellation, stop strings and tool-call parsing across blocks behave as with a real engine.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import AsyncGenerator
from pathlib import Path

from clover_code import jsonsafe
from clover_code.engine import (
    DEFAULT_BLOCK_SIZE,
    Block,
    ChatRequest,
    EngineError,
    EngineInfo,
    ToolCall,
    estimate_tokens,
)
from clover_code.engine.embedded.stop_strings import StopStrings  # text only: no torch
from clover_code.jsonsafe import JSON, JSONObject

_TOKEN = re.compile(r"\s*\S+|\s+")


def load_replies(path: str | Path) -> list[JSON]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise EngineError(f"cannot read scripted replies {path}: {exc.strerror}") from None
    replies = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            replies.append(jsonsafe.loads(line))
        except json.JSONDecodeError as exc:
            raise EngineError(f"{path}:{n}: not valid JSON: {exc.msg}") from None
    return replies


def split_tokens(text: str) -> list[str]:
    """Word-ish pieces that join back to `text` exactly."""
    return _TOKEN.findall(text)


class ScriptedEngine:
    def __init__(self, replies: list[JSON] | str | Path | None = None, *, model: str = "scripted",
                 block_size: int = DEFAULT_BLOCK_SIZE, delay: float = 0.0, tpf: float = 8.0,
                 context_window: int = 131_072):
        if isinstance(replies, (str, Path)):
            replies = load_replies(replies)
        self.replies = list(replies or [])
        self.requests: list[ChatRequest] = []  # what was asked, for tests
        self.block_size = block_size
        self.delay = delay
        self.tpf = tpf
        self.info = EngineInfo("scripted", model, context_window, block_size, None)

    def count_tokens(self, request: ChatRequest) -> int:
        text = json.dumps(request.messages) + json.dumps(request.tools)
        return estimate_tokens(text)

    async def aclose(self) -> None:
        return None

    def _next_reply(self) -> JSONObject:
        if not self.replies:
            raise EngineError("scripted engine has no more replies")
        reply = self.replies.pop(0)
        return {"content": reply} if isinstance(reply, str) else dict(reply)

    async def stream(self, request: ChatRequest) -> AsyncGenerator[Block, None]:
        self.requests.append(request)
        reply = self._next_reply()
        delay = float(reply.get("delay", self.delay))
        start = time.perf_counter()
        pieces = split_tokens(reply.get("content") or "")
        calls = tuple(
            ToolCall(c.get("id", f"call_{i}"), c["name"],
                     c["arguments"] if isinstance(c["arguments"], str) else json.dumps(c["arguments"]))
            for i, c in enumerate(reply.get("tool_calls") or ())
        )
        budget, stopper = request.max_tokens, StopStrings(request.stop)
        for index, at in enumerate(range(0, max(len(pieces), 1), self.block_size)):
            t0 = time.perf_counter()
            if delay:
                await asyncio.sleep(delay)
            chunk = pieces[at:at + self.block_size][:budget]
            budget -= len(chunk)
            text, hit = stopper.feed("".join(chunk))
            last = hit or at + self.block_size >= len(pieces) or budget <= 0
            finish = None
            if last:
                finish = "stop" if hit else "length" if budget <= 0 and at + len(chunk) < len(pieces) else (
                    "tool_calls" if calls else "stop")
                text += "" if hit else stopper.flush()
            yield Block(
                text=text, tokens=len(chunk), forward_passes=max(1, math.ceil(len(chunk) / self.tpf)),
                seconds_since_start=time.perf_counter() - start, ms=(time.perf_counter() - t0) * 1000, index=index,
                tool_calls=calls if last and not hit else (), finish=finish,
                prompt_tokens=self.count_tokens(request) if last else None, stop_sequence=stopper.hit,
            )
            if last:
                return
