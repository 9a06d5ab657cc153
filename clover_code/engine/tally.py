"""BlockTally: what a stream of committed blocks added up to.

The one count of requests, blocks, tokens and forward passes that the agent's turn stats,
the headless result, the TUI's status bar and `clover-code generate` all report.
"""

from __future__ import annotations

from dataclasses import dataclass

from clover_code.engine import Block


@dataclass
class BlockTally:
    requests: int = 0  # a block with index 0 starts one
    blocks: int = 0
    tokens: int = 0
    # None once any block does not say (a server that reports no passes): a sum over only
    # some blocks would make tokens per pass a made-up figure.
    forward_passes: int | None = 0
    generation_seconds: float = 0.0  # summed over requests, from the blocks' own clocks
    prompt_tokens: int | None = None  # of the latest request that said
    request_tokens: int = 0  # tokens of the latest request so far
    last: Block | None = None

    def add(self, block: Block) -> None:
        if block.index == 0:
            self.requests += 1
            self.request_tokens = 0
            previous_at = 0.0
        else:
            previous_at = self.last.seconds_since_start if self.last is not None else 0.0
        self.blocks += 1
        self.tokens += block.tokens
        self.request_tokens += block.tokens
        if self.forward_passes is not None:
            self.forward_passes = None if block.forward_passes is None else self.forward_passes + block.forward_passes
        self.generation_seconds += max(0.0, block.seconds_since_start - previous_at)
        if block.prompt_tokens is not None:
            self.prompt_tokens = block.prompt_tokens
        self.last = block

    @property
    def tokens_per_pass(self) -> float | None:
        """TPF: tokens committed per forward pass; None when the passes are not known."""
        return self.tokens / self.forward_passes if self.forward_passes else None
