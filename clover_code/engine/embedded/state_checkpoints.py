"""Recurrent-state checkpoints of one hybrid conversation, under a memory budget.

A hybrid's linear layers cannot be cut back, so a prompt that leaves the cached tokens
(an edited or compacted history, a `/undo` rewind, a retried turn, a reply the chat template
renders differently) would re-encode from zero. A checkpoint is the linear layers' state at
one prefix position; with the attention keys/values (which can be cropped anywhere) it
rebuilds the whole prefix state there. Two kinds:

- `turn`: where a message starts (before each turn-mark token, `<|im_start|>` in Qwen's
  template), where a request starts encoding, and where its prompt ends less the token every
  request re-encodes, so an edited message, a rewound or a retried turn resumes there;
- `block`: other pass boundaries (committed blocks, every CHECKPOINT_SPACING tokens of a
  long prompt); at most `max_blocks`.

Over a limit, the checkpoint whose neighbours lie closest together goes (never the newest),
so those that stay are spread over the conversation.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch

from clover_code.engine.embedded.linear_state import LinearState

DEFAULT_CHECKPOINT_MB = 1024
DEFAULT_MAX_BLOCK_CHECKPOINTS = 16


@dataclass(frozen=True)
class Checkpoint:
    kind: str  # "turn" | "block"
    state: LinearState
    nbytes: int


class Checkpoints:
    def __init__(self, budget_bytes: int = DEFAULT_CHECKPOINT_MB << 20,
                 max_blocks: int = DEFAULT_MAX_BLOCK_CHECKPOINTS):
        self.budget, self.max_blocks = budget_bytes, max_blocks
        self.points: dict[int, Checkpoint] = {}  # prefix position -> checkpoint

    def add(self, position: int, state: LinearState, kind: str) -> None:
        if position <= 0:
            return  # position 0 is a fresh state: nothing to keep
        size = sum(t.nbytes for t in state.tensors())
        old = self.points.get(position)
        self.points[position] = Checkpoint("turn" if old and old.kind == "turn" else kind, state, size)
        self._thin()

    def best(self, limit: int) -> int:
        """The latest checkpointed position at or before `limit` (0: none, start over)."""
        return max((p for p in self.points if p <= limit), default=0)

    def at(self, position: int) -> LinearState:
        return self.points[position].state

    def drop_after(self, position: int) -> None:
        for p in [p for p in self.points if p > position]:
            del self.points[p]

    def copy_until(self, position: int) -> Checkpoints:
        """The checkpoints up to `position`, sharing their (never written) tensors."""
        other = Checkpoints(self.budget, self.max_blocks)
        other.points = {p: c for p, c in self.points.items() if p <= position}
        return other

    @property
    def nbytes(self) -> int:
        return sum(c.nbytes for c in self.points.values())

    def tensors(self) -> Iterator[torch.Tensor]:
        for c in self.points.values():
            yield from c.state.tensors()

    def report(self) -> dict[str, int]:
        kinds = [c.kind for c in self.points.values()]
        return {"checkpoints": len(kinds), "turn_checkpoints": kinds.count("turn"),
                "checkpoint_bytes": self.nbytes, "checkpoint_budget_bytes": self.budget}

    def _thin(self) -> None:
        while len(blocks := [p for p, c in self.points.items() if c.kind == "block"]) > self.max_blocks:
            self._drop_closest(blocks)
        while self.points and self.nbytes > self.budget:
            self._drop_closest(list(self.points))

    def _drop_closest(self, positions: list[int]) -> None:
        """Drop the checkpoint whose neighbours lie closest together (never the newest, unless
        it is the only one), so the rest stay spread over the conversation."""
        positions = sorted(positions)
        if len(positions) == 1:
            del self.points[positions[0]]
            return
        edges = [0, *positions]
        gap = {p: edges[i + 2] - edges[i] for i, p in enumerate(positions[:-1])}
        del self.points[min(gap, key=gap.__getitem__)]
