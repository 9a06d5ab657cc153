"""The session ledger: the one count of what the session's agent did, fed by its events.

The status bar, `/stats`, `/cost` and the spinner all read it: tokens per turn, the blocks
generated (requests, forward passes, speed), tool calls, finished turns, and the context the
next request carries. Tokens in are every request's prompt (a turn of five requests sends its
context five times; a prefix cache serves part of it again, counted apart as `cached`); tokens
out are what the model wrote. Built from events, so a resumed session shows its earlier turns
too; a turn rewound away stays on the bill (its tokens were spent).

The context is one figure: while a reply streams, the request's prompt (as the engine counts
it) plus what the reply has added; between turns, the next request's size as
agent/context_count.py counts it (`recounted`), which `/cost` shows too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from clover_code.agent.events import BlockCommitted, Compacted, Event, ToolCallParsed, TurnFinished, UserMessage
from clover_code.engine import Block
from clover_code.engine.tally import BlockTally


@dataclass
class TurnUsage:
    text: str  # what the user sent
    requests: int = 0
    tokens_in: int = 0
    cached_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    done: bool = False

    def add(self, other: TurnUsage) -> None:
        self.requests += other.requests
        self.tokens_in += other.tokens_in
        self.cached_in += other.cached_in
        self.tokens_out += other.tokens_out
        self.seconds += other.seconds


@dataclass
class SessionLedger:
    turns: list[TurnUsage] = field(default_factory=list)  # one per message sent, for /cost
    generated: BlockTally = field(default_factory=BlockTally)
    finished: int = 0  # turns that ended, however
    tool_calls: int = 0
    context: int = 0  # tokens the next request carries (see the module's docstring)
    _prompt: int = 0  # the latest request's prompt tokens, or a stand-in until it says

    def add(self, event: Event) -> None:
        if isinstance(event, UserMessage):
            self.turns.append(TurnUsage(event.text))
        elif isinstance(event, BlockCommitted):
            self._add_block(event.block)
        elif isinstance(event, ToolCallParsed):
            self.tool_calls += 1
        elif isinstance(event, TurnFinished):
            self.finished += 1
            if self.turns:
                seconds = event.stats.get("seconds")
                self.turns[-1].done = True
                self.turns[-1].seconds = float(seconds) if isinstance(seconds, (int, float)) else 0.0
        elif isinstance(event, Compacted) and event.dropped_messages:
            self.context = event.tokens_after  # the meter drops now, not at the next reply

    def _add_block(self, block: Block) -> None:
        if block.index == 0:  # engines say the prompt's size with the last block: until then
            self._prompt = self.context  # the context so far stands in, so the meter moves
        self.generated.add(block)
        if block.prompt_tokens is not None:
            self._prompt = block.prompt_tokens
        self.context = self._prompt + self.generated.request_tokens
        if self.turns:
            turn = self.turns[-1]
            turn.requests += block.index == 0
            turn.tokens_out += block.tokens
            turn.tokens_in += block.prompt_tokens or 0
            turn.cached_in += block.prompt_reused or 0

    def recounted(self, tokens: int) -> None:
        """The context as counted afresh (a new agent, a turn's end, /clear, /compact, a rewind)."""
        self.context = tokens

    @property
    def running(self) -> TurnUsage | None:
        """The turn being worked on, if one is."""
        return self.turns[-1] if self.turns and not self.turns[-1].done else None

    def totals(self) -> TurnUsage:
        total = TurnUsage("total")
        for turn in self.turns:
            total.add(turn)
        return total

    def tokens_per_second(self) -> float:
        g = self.generated
        return g.tokens / g.generation_seconds if g.generation_seconds > 0 else 0.0

    def summary(self) -> str:
        g = self.generated
        tpf = f"{g.tokens_per_pass:.2f}" if g.tokens_per_pass else "n/a"
        return (f"turns {self.finished} · requests {g.requests} · tool calls {self.tool_calls}\n"
                f"tokens {g.tokens} · blocks {g.blocks} · forward passes "
                f"{g.forward_passes or 'n/a'} · tokens/pass {tpf}\n"
                f"generation {g.generation_seconds:.2f} s · {self.tokens_per_second():.0f} tokens/s · "
                f"context {self.context} tokens")
