"""Session logs written by earlier versions, read as the events of this one.

Before issue 33 a log held no TextDelta events (every reader parsed the blocks' raw text
itself), a block's forward passes and time were named `steps` and `at`, and an ErrorEvent
had no source. A resumed old session must rebuild the same conversation, so its text is
parsed here, once, as the agent would have emitted it.
"""

from __future__ import annotations

from collections import deque

from clover_code.agent.events import (
    BlockCommitted,
    Cleared,
    Compacted,
    Event,
    TextDelta,
    ToolCallParsed,
    TurnFinished,
    UserMessage,
)
from clover_code.engine.markup.toolcalls import OPEN, Debris, ParsedCall, ToolCallParser

_RENAMED_BLOCK_FIELDS = {"steps": "forward_passes", "at": "seconds_since_start"}
_BUG_PREFIX = "internal error"  # how the agent's own bugs were told from engine failures then


def upgrade_line(data: dict[str, object]) -> dict[str, object]:
    """One logged event's JSON with today's field names."""
    kind = data.get("type")
    if kind == "BlockCommitted" and isinstance(block := data.get("block"), dict):
        data = {**data, "block": {_RENAMED_BLOCK_FIELDS.get(k, k): v for k, v in block.items()}}
    if kind == "ErrorEvent" and "source" not in data and isinstance(message := data.get("message"), str):
        data = {**data, "source": "internal" if message.startswith(_BUG_PREFIX) else "engine"}
    return data


def upgrade_events(events: list[Event]) -> list[Event]:
    """A log without TextDelta events, with them, where the agent emits them now: each block's
    text and calls in the order written (a call's ToolCallParsed followed its block then)."""
    if any(isinstance(e, TextDelta) for e in events):
        return events
    reading = _ReplyText()
    out: list[Event] = []
    for event in events:
        if isinstance(event, ToolCallParsed) and reading.expects_call():
            out.append(_with_markup(event))
            out += reading.after_call()
            continue
        out += reading.rest() if _ends_reply(event) else reading.texts_left()
        out.append(_with_markup(event))
        if isinstance(event, BlockCommitted):
            out += reading.block(event.block.text)
    return out + reading.rest()


class _ReplyText:
    """The parse of the reply being read, handed out up to each call it holds."""

    def __init__(self) -> None:
        self.parser: ToolCallParser | None = None
        self.waiting: deque[str | ParsedCall] = deque()  # segments of the latest block not handed out

    def block(self, text: str) -> list[Event]:
        self.parser = self.parser or ToolCallParser()
        self.waiting.extend(s for s in self.parser.feed_segments(text) if not isinstance(s, Debris))
        return self._texts_until_call()

    def expects_call(self) -> bool:
        return bool(self.waiting) and isinstance(self.waiting[0], ParsedCall)

    def after_call(self) -> list[Event]:
        self.waiting.popleft()  # logged already, as the ToolCallParsed just read
        return self._texts_until_call()

    def texts_left(self) -> list[Event]:
        """Text of the latest block whose calls were never logged (a crash)."""
        texts: list[Event] = [TextDelta(s) for s in self.waiting if isinstance(s, str)]
        self.waiting.clear()
        return texts

    def rest(self) -> list[Event]:
        """The reply ends: what the parser still held (a held-back `<`)."""
        texts = self.texts_left()
        if self.parser is not None:
            texts += [TextDelta(s) for s in self.parser.finish_segments() if isinstance(s, str)]
            self.parser = None
        return texts

    def _texts_until_call(self) -> list[Event]:
        texts: list[Event] = []
        while self.waiting and isinstance(text := self.waiting[0], str):
            self.waiting.popleft()
            texts.append(TextDelta(text))
        return texts


def _ends_reply(event: Event) -> bool:
    """Whether the conversation closes the reply being written at `event`."""
    if isinstance(event, BlockCommitted):
        return event.block.index == 0
    return isinstance(event, (UserMessage, Compacted, Cleared, TurnFinished))


def _with_markup(event: Event) -> Event:
    """A malformed call written in the text held its markup in `arguments` (a call a server
    sent structured held JSON, never a tag)."""
    if isinstance(event, ToolCallParsed) and event.error and not event.markup \
            and event.call.arguments.startswith(OPEN):
        return ToolCallParsed(event.call, event.error, event.call.arguments)
    return event
