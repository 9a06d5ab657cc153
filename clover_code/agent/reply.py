"""One model reply, parsed once as its blocks commit: the text a reader sees and the tool
calls, in the order written.

The agent turns each part into an event (TextDelta, or a ToolCallParsed when the call is
submitted), so every UI and the conversation read the same parse and none parses again.
Markup debris (a stray `</tool_call>`, a call's leftover `}}`) becomes no part: no UI shows
it and the model never reads it back as its own prose; the block's raw text, logged with its
BlockCommitted, still holds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from clover_code.agent.events import TextDelta
from clover_code.engine import Block
from clover_code.engine.markup.toolcalls import Debris, ParsedCall, Segment, ToolCallParser, check_structured
from clover_code.jsonsafe import JSONObject


@dataclass(frozen=True)
class CallPart:
    parsed: ParsedCall
    markup: str  # the call as written in the reply's text; "" for a call a server sent structured


ReplyPart = TextDelta | CallPart


class ReplyReader:
    def __init__(self, tools: list[JSONObject] | None = None) -> None:
        """`tools`: the request's function schemas (string parameters of the XML markup stay strings)."""
        self._parser = ToolCallParser(tools)
        self.text = ""  # every TextDelta so far
        self.last: Block | None = None

    def add(self, block: Block) -> list[ReplyPart]:
        """What `block` completes: text, and calls whose closing tag it holds (or a server sent)."""
        self.last = block
        parts = self._parts(self._parser.feed_segments(block.text))
        return parts + [CallPart(check_structured(call), "") for call in block.tool_calls]

    def end(self, max_tokens: int) -> list[ReplyPart]:
        """What the end of the reply releases: held-back text, or a call the reply ended inside."""
        parts = self._parts(self._parser.finish_segments())
        if not self.cut_off:
            return parts
        return [_over_length(p, max_tokens) if isinstance(p, CallPart) else p for p in parts]

    @property
    def cut_off(self) -> bool:
        """Whether the reply stopped at max_tokens."""
        return self.last is not None and self.last.finish == "length"

    def _parts(self, segments: list[Segment]) -> list[ReplyPart]:
        parts: list[ReplyPart] = []
        for segment in segments:
            if isinstance(segment, str):
                self.text += segment
                parts.append(TextDelta(segment))
            elif not isinstance(segment, Debris):
                parts.append(CallPart(segment, segment.raw))
        return parts


def _over_length(part: CallPart, max_tokens: int) -> CallPart:
    """A call cut off by max_tokens: the model is told why, so it writes smaller calls."""
    p = part.parsed
    why = f"{p.error}: the reply reached max_tokens ({max_tokens}); split the work into smaller calls"
    return CallPart(ParsedCall(None, why, p.raw, p.name), part.markup)
