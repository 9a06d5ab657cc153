"""A test denoiser that wants to write given text: scripted logits, so the decoding loop's
helpers (scaffold, drafts) can be checked exactly, pass by pass."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

# (reply position, the block's input ids, position in the block) -> {token: probability}
Wants = Callable[[int, list[int], int], dict[int, float]]


class WantingDenoiser:
    """`wants` gives, for each masked position, the distribution the 'model' predicts; the rest
    of the mass is spread evenly over the vocabulary. The first commit is the prompt."""

    def __init__(self, wants: Wants, vocab: int, mask_id: int):
        self.wants, self.vocab, self.mask_id = wants, vocab, mask_id
        self.prompt_len: int | None = None
        self.committed = 0  # prompt and reply tokens in the prefix
        self.passes = 0
        self.inputs: list[list[int]] = []  # every block as a pass read it

    def denoise(self, block: torch.Tensor, commit: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
        if commit is not None:
            if self.prompt_len is None:
                self.prompt_len = commit.shape[0]
            self.committed += commit.shape[0]
        ids = block.tolist()
        self.inputs.append(ids)
        self.passes += 1
        offset = self.committed - (self.prompt_len or 0)
        logits = torch.zeros(len(ids), self.vocab)  # [L, V]
        for i in range(len(ids)):
            logits[i] = self._row(self.wants(offset + i, ids, i))
        return logits, 1

    def _row(self, probs: dict[int, float]) -> torch.Tensor:
        rest = max(1e-6, 1.0 - sum(probs.values())) / (self.vocab - len(probs))
        row = torch.full((self.vocab,), math.log(rest))
        for token, p in probs.items():
            row[token] = math.log(p)
        return row


def following(target: list[int], confidence: float | Callable[[int], float] = 0.99) -> Wants:
    """Wants `target` in order, each position sure to `confidence` (a number, or per position)."""
    def wants(r: int, ids: list[int], i: int) -> dict[int, float]:
        c = confidence(r) if callable(confidence) else confidence
        return {target[r]: c} if r < len(target) else {}
    return wants
