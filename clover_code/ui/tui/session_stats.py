"""Counting a session's blocks, tokens and speed for the status bar and /stats."""

from __future__ import annotations

from dataclasses import dataclass

from clover_code.engine import Block


@dataclass
class SessionStats:
    tokens: int = 0
    blocks: int = 0
    forward_passes: int = 0
    requests: int = 0
    turns: int = 0
    tool_calls: int = 0
    seconds: float = 0.0  # generation time, summed over requests
    context_used: int = 0  # prompt + reply tokens of the latest request
    last: Block | None = None
    _request_at: float = 0.0  # `at` of the newest block of the current request
    _request_tokens: int = 0

    def add_block(self, block: Block) -> None:
        if block.index == 0:
            self.requests += 1
            self._request_at = 0.0
            self._request_tokens = 0
        self.tokens += block.tokens
        self.blocks += 1
        self.forward_passes += block.steps or 0
        self.seconds += max(0.0, block.at - self._request_at)
        self._request_at = block.at
        self._request_tokens += block.tokens
        if block.prompt_tokens is not None:
            self.context_used = block.prompt_tokens + self._request_tokens
        self.last = block

    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        tpf = f"{self.tokens / self.forward_passes:.2f}" if self.forward_passes else "n/a"
        return (f"turns {self.turns} · requests {self.requests} · tool calls {self.tool_calls}\n"
                f"tokens {self.tokens} · blocks {self.blocks} · forward passes "
                f"{self.forward_passes or 'n/a'} · tokens/pass {tpf}\n"
                f"generation {self.seconds:.2f} s · {self.tokens_per_second():.0f} tokens/s · "
                f"context {self.context_used} tokens")
