"""One reply as `serve` hands it to a wire format: blocks from the engine become, in order,
visible text and tool calls, and the last block says how and why the reply ended.

Every format (Chat Completions, Messages, Responses) renders the same `Segment`s and the same
`End`; each has a `Writer` that turns them into its own events (streamed) or body (whole).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from clover_code.engine import Block, ChatRequest, ToolCall
from clover_code.engine.markup.toolcalls import Debris, ParsedCall, ToolCallParser
from clover_code.jsonsafe import JSONObject

Segment = str | ToolCall  # visible text, or a tool call the model made


@dataclass(frozen=True)
class Usage:
    prompt: int  # prompt tokens
    completion: int  # reply tokens
    cached: int | None = None  # of the prompt, those served from the engine's prefix cache (None: unknown)


@dataclass(frozen=True)
class End:
    """How a reply ended, in Chat Completions' words (each format translates them)."""

    reason: str  # "stop" | "length" | "tool_calls" | "cancelled" (an engine may say others)
    usage: Usage
    stop_sequence: str | None = None  # the request's stop string that ended it, when the engine says


@dataclass
class WireCall:
    """One validated request, whatever format it came in."""

    request: ChatRequest
    stream: bool
    model: str | None  # the model the client named
    custom_tools: frozenset[str] = field(default_factory=frozenset)  # freeform tools (Responses)


class Writer(Protocol):
    """A wire format's side of one reply: events as blocks arrive, or the whole body."""

    def start(self) -> Iterable[bytes]:
        """Events before the first block (the reply's opening)."""
        ...

    def block(self, segments: list[Segment], block: Block, end: End | None) -> Iterable[bytes]:
        """Events for one committed block; `end` is set on the last one."""
        ...

    def ping(self) -> bytes:
        """A keep-alive while the engine has nothing yet (a long prompt encoding)."""
        ...

    def fail(self, message: str) -> bytes:
        """The event that ends a stream the engine could not finish."""
        ...

    def whole(self, segments: list[Segment], blocks: list[Block], end: End) -> JSONObject:
        """The body of a reply that was not streamed."""
        ...


class Reply:
    """Blocks -> segments, block by block (tool calls parsed from the model's markup with the
    request's tools, or taken as the engine gives them), and the reply's `End`."""

    def __init__(self, request: ChatRequest, prompt_tokens: int):
        self.prompt_tokens = prompt_tokens
        self.parser = ToolCallParser(request.tools) if request.tools else None
        self.calls = 0
        self.completion_tokens = 0

    def split(self, block: Block) -> list[Segment]:
        pieces: list[str | ParsedCall | Debris] = [block.text]
        if self.parser is not None:
            pieces = self.parser.feed_segments(block.text)
            if block.finish:
                pieces += self.parser.finish_segments()
        kept = [p for p in [*pieces, *block.tool_calls] if not isinstance(p, Debris)]  # markup, not content
        out = [s for s in joined(map(_segment, kept)) if s != ""]
        self.calls += sum(isinstance(s, ToolCall) for s in out)
        self.completion_tokens += block.tokens
        return out

    def end(self, block: Block) -> End:
        reason = block.finish or "stop"
        if self.calls and reason == "stop":
            reason = "tool_calls"
        prompt = block.prompt_tokens if block.prompt_tokens is not None else self.prompt_tokens
        cached = block.prompt_reused if block.prompt_tokens is not None else None
        return End(reason, Usage(prompt, self.completion_tokens, cached), block.stop_sequence)


def _segment(piece: str | ParsedCall | ToolCall) -> Segment:
    if isinstance(piece, ParsedCall):  # malformed: what the model wrote is shown as text
        return piece.call if piece.call is not None else piece.raw
    return piece


def text_of(segments: Iterable[Segment]) -> str:
    return "".join(s for s in segments if isinstance(s, str))


def joined(segments: Iterable[Segment]) -> list[Segment]:
    """Adjacent text as one piece (a whole reply's text comes block by block)."""
    out: list[Segment] = []
    for s in segments:
        if isinstance(s, str) and out and isinstance(out[-1], str):
            out[-1] += s
        else:
            out.append(s)
    return out
