"""Counting a session's turns, tool calls and generated blocks for the status bar and /stats."""

from __future__ import annotations

from dataclasses import dataclass, field

from clover_code.engine import Block
from clover_code.engine.tally import BlockTally


@dataclass
class SessionStats:
    generated: BlockTally = field(default_factory=BlockTally)
    turns: int = 0
    tool_calls: int = 0
    context_used: int = 0  # prompt + reply tokens of the latest request
    _prompt: int = 0  # the latest request's prompt tokens, or a stand-in until it says

    def add_block(self, block: Block) -> None:
        if block.index == 0:  # engines say the prompt's size with the last block: until then
            self._prompt = self.context_used  # the context so far stands in, so the meter moves
        self.generated.add(block)
        if block.prompt_tokens is not None:
            self._prompt = block.prompt_tokens
        self.context_used = self._prompt + self.generated.request_tokens

    def tokens_per_second(self) -> float:
        g = self.generated
        return g.tokens / g.generation_seconds if g.generation_seconds > 0 else 0.0

    def summary(self) -> str:
        g = self.generated
        tpf = f"{g.tokens_per_pass:.2f}" if g.tokens_per_pass else "n/a"
        return (f"turns {self.turns} · requests {g.requests} · tool calls {self.tool_calls}\n"
                f"tokens {g.tokens} · blocks {g.blocks} · forward passes "
                f"{g.forward_passes or 'n/a'} · tokens/pass {tpf}\n"
                f"generation {g.generation_seconds:.2f} s · {self.tokens_per_second():.0f} tokens/s · "
                f"context {self.context_used} tokens")
