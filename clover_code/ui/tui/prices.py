"""Usage for `/cost`: tokens in and out per turn, what fills the context, and what it cost.

Tokens in are every request's prompt (a turn of five requests sends its context five times;
a prefix cache serves part of it again, counted apart as `cached`); tokens out are what the
model wrote. The cost is an estimate from the prices per million tokens in the user's config
(`price_input_per_mtok`, `price_output_per_mtok`); none set, no cost is shown. Built from the
agent's events, so a resumed session shows its earlier turns too; a turn rewound away stays
on the bill (its tokens were spent).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from clover_code.agent.events import BlockCommitted, Event, TurnFinished, UserMessage
from clover_code.tokens import estimate_tokens

if TYPE_CHECKING:
    from clover_code.agent.context import Conversation
    from clover_code.engine import Engine
    from clover_code.settings import Settings


@dataclass
class TurnUsage:
    text: str  # what the user sent
    requests: int = 0
    tokens_in: int = 0
    cached_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    done: bool = False


@dataclass(frozen=True)
class Prices:
    """Per million tokens, in the user's currency."""

    input: float
    output: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input + tokens_out * self.output) / 1e6


@dataclass
class UsageLog:
    turns: list[TurnUsage] = field(default_factory=list)

    def add(self, event: Event) -> None:
        if isinstance(event, UserMessage):
            self.turns.append(TurnUsage(event.text))
        elif isinstance(event, BlockCommitted) and self.turns:
            turn, block = self.turns[-1], event.block
            turn.requests += block.index == 0
            turn.tokens_out += block.tokens
            turn.tokens_in += block.prompt_tokens or 0
            turn.cached_in += block.prompt_reused or 0
        elif isinstance(event, TurnFinished) and self.turns:
            self.turns[-1].done = True
            seconds = event.stats.get("seconds")
            self.turns[-1].seconds = float(seconds) if isinstance(seconds, (int, float)) else 0.0

    def totals(self) -> TurnUsage:
        total = TurnUsage("total")
        for turn in self.turns:
            total.requests += turn.requests
            total.tokens_in += turn.tokens_in
            total.cached_in += turn.cached_in
            total.tokens_out += turn.tokens_out
            total.seconds += turn.seconds
        return total


@dataclass(frozen=True)
class ContextPart:
    name: str
    tokens: int


def context_breakdown(conversation: Conversation, engine: Engine | None) -> tuple[list[ContextPart], int]:
    """What the next request carries, by part (estimates scaled to the engine's count), and
    that count."""
    total = conversation.tokens(engine)
    raw: dict[str, int] = {
        "system prompt": _estimate(conversation.system),
        "tool descriptions": _estimate(json.dumps(conversation.tools, ensure_ascii=False)),
        "your messages": 0, "replies": 0, "tool results": 0,
    }
    names = {"user": "your messages", "assistant": "replies", "tool": "tool results"}
    for message in conversation.messages:
        raw[names.get(message.get("role", ""), "replies")] += _estimate(json.dumps(message, ensure_ascii=False))
    estimated = sum(raw.values()) or 1
    return [ContextPart(name, round(tokens * total / estimated)) for name, tokens in raw.items()], total


def _estimate(text: str) -> int:
    return estimate_tokens(text) if text else 0


def prices_of(settings: Settings) -> Prices | None:
    """The configured prices, or None when either is not set."""
    input_price, output_price = settings.price_input_per_mtok, settings.price_output_per_mtok
    if input_price is None or output_price is None:
        return None
    return Prices(float(input_price), float(output_price))
