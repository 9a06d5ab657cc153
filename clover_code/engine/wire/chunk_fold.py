"""OpenAI chat-completion stream chunks -> Blocks, for RemoteEngine.

Text chunks become Blocks at once; tool-call deltas are gathered by index and handed
over, whole, on the block that carries the finish reason; the finish block waits for
usage when a server sends it in a chunk of its own (OpenAI does). The `clover`
extension of `clover-code serve` supplies block index, tokens, forward passes and ms.
"""

from __future__ import annotations

import dataclasses
import time

from clover_code import jsonsafe
from clover_code.engine import Block, EngineError, ToolCall, estimate_tokens
from clover_code.engine.wire.openai import EXTENSION
from clover_code.jsonsafe import JSONObject


def chunk_json_object(raw: bytes, url: str) -> JSONObject:
    try:
        data = jsonsafe.loads(raw)  # a server's JSON nested 10,000 deep is invalid, not a RecursionError
    except ValueError:
        snippet = raw[:120].decode("utf-8", "replace")
        raise EngineError(f"{url} sent invalid JSON ({snippet!r}): is it an OpenAI-compatible server?") from None
    if not isinstance(data, dict):
        raise EngineError(f"{url} sent JSON that is not an object: is it an OpenAI-compatible server?")
    return data


class ChunkFold:
    """Stream chunks -> Blocks: gathers tool-call deltas by index, holds the finish block
    until usage arrives (OpenAI sends usage in a chunk of its own after the finish)."""

    def __init__(self, start: float):
        self.start = self.last = start
        self.calls: dict[int, dict[str, str]] = {}
        self.pending: Block | None = None
        self.finished = False
        self.started = False  # the response began (status 200)
        self.events = 0  # SSE events received
        self.emitted = 0
        self.prompt_tokens: int | None = None
        self.prompt_reused: int | None = None  # usage.prompt_tokens_details.cached_tokens

    def _block(self, text: str, ext: JSONObject, finish: str | None) -> Block:
        now = time.perf_counter()
        calls = self._tool_calls() if finish else ()
        if calls and finish != "length":
            finish = "tool_calls"
        block = Block(text=text, tokens=ext.get("tokens", estimate_tokens(text)),
                      forward_passes=ext.get("forward_passes"), seconds_since_start=now - self.start,
                      ms=ext.get("ms", (now - self.last) * 1000), index=ext.get("block", self.emitted),
                      tool_calls=calls, finish=finish)
        self.last = now
        return block

    def _tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(ToolCall(c["id"] or f"call_{i}", c["name"], c["arguments"] or "{}")
                     for i, c in sorted(self.calls.items()))

    def _emit(self, block: Block) -> Block:
        self.emitted += 1
        return block

    def chunk(self, data: JSONObject) -> list[Block]:
        if "error" in data:
            err = data["error"]
            said = err.get("message") if isinstance(err, dict) else str(err)
            raise EngineError(f"the server reported an error: {said}")
        out: list[Block] = []
        usage = data.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int):
            self.prompt_tokens = usage["prompt_tokens"]
            details = usage.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, dict) else None
            self.prompt_reused = cached if isinstance(cached, int) else None
        choices = data.get("choices") or [{}]
        choice = choices[0] if isinstance(choices[0], dict) else {}
        delta = choice.get("delta") or {}
        for n, tc in enumerate(delta.get("tool_calls") or ()):
            slot = self.calls.setdefault(tc.get("index", n), {"id": "", "name": "", "arguments": ""})
            fn = tc.get("function") or {}
            slot["id"] = tc.get("id") or slot["id"]
            slot["name"] += fn.get("name") or ""
            slot["arguments"] += fn.get("arguments") or ""
        text = delta.get("content") or ""
        ext = given if isinstance(given := data.get(EXTENSION), dict) else {}
        finish = choice.get("finish_reason")
        if self.pending is not None:
            out.append(self._emit(self._with_usage(self.pending)))
            self.pending = None
        if text or ext or finish:
            block = self._block(text, ext, finish)
            if finish:
                self.finished = True
                if usage is None:
                    self.pending = block  # usage may follow in a chunk of its own
                    return out
                block = self._with_usage(block)
            out.append(self._emit(block))
        return out

    def _with_usage(self, block: Block) -> Block:
        if self.prompt_tokens is None:
            return block
        return dataclasses.replace(block, prompt_tokens=self.prompt_tokens, prompt_reused=self.prompt_reused)

    def end(self, done: bool, url: str) -> list[Block]:
        if self.pending is not None:
            block, self.pending = self.pending, None
            return [self._emit(self._with_usage(block))]
        if self.finished:
            return []
        if done:  # [DONE] without a finish reason: take the server's word that it is over
            self.finished = True
            return [self._emit(self._with_usage(self._block("", {}, "stop")))]
        raise EngineError(f"the stream from {url} ended before the reply finished, after {self.emitted} "
                          "blocks (the partial reply was kept): check the server's log")

    def completion(self, data: JSONObject) -> Block:
        """A whole (non-streamed) completion, for servers that ignore stream: true."""
        choice = (data.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        for n, tc in enumerate(message.get("tool_calls") or ()):
            fn = tc.get("function") or {}
            self.calls[n] = {"id": tc.get("id") or "", "name": fn.get("name") or "",
                             "arguments": fn.get("arguments") or ""}
        usage = given if isinstance(given := data.get("usage"), dict) else {}
        self.chunk({"usage": usage or None, "choices": []})
        text = message.get("content") or ""
        # The server's own count of the reply, tool calls included; else an estimate of both.
        counted = usage.get("completion_tokens")
        tokens = counted if isinstance(counted, int) and counted >= 0 else estimate_tokens(
            text + "".join(c["name"] + c["arguments"] for c in self.calls.values()))
        block = self._block(text, {"tokens": tokens}, choice.get("finish_reason") or "stop")
        self.finished = True
        return self._emit(self._with_usage(block))
