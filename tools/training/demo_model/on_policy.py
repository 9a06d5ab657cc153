"""Noisy blocks as the engine's own decoding visits them.

Uniform random masks rarely look like the partial blocks the engine denoises: it commits
what it is surest of first, often tokens whose offset depends on a span not yet written.
Where such a guess is wrong by one position, the gap is later filled with a copy of a
neighbour (`budget/texttext.py`): about a quarter of the shipped model's wrong calls.

Here every assistant block of a row is decoded as the engine decodes it (threshold 0.95,
else the single most confident position; never the mask token), all blocks at once in
the two-stream layout, each committed position receiving its true token, so every state
is one the engine passes through on its way to the right block. A block then trains on
the state before its first wrong commit when it made one, else on a random visited state.
"""

from __future__ import annotations

import random

import torch

from clover_code.engine import DEFAULT_THRESHOLD
from clover_code.engine.embedded.decoding import needed_limit, select_commits
from tools.training.demo_model.attention import BLOCK, Layout
from tools.training.demo_model.chat import Row
from tools.training.demo_model.train import Batch, State, forward, turn_blocks


@torch.no_grad()
def predictions(model, row: Row, starts: list[int], blocks: list[list[int]], mask_id: int) -> tuple[list, list]:
    """Per block, the model's confidence and choice at each of its 32 positions, as the
    engine's denoiser computes them: each block sees the clean tokens before it and itself."""
    L = len(row.ids)
    ids = torch.tensor([row.ids + [t for block in blocks for t in block]])  # [1, L + n * 32]
    pos = torch.tensor([list(range(L)) + [s + j for s in starts for j in range(BLOCK)]])
    empty = torch.empty(0, dtype=torch.long)
    batch = Batch(ids, pos, None, Layout.of(L, starts), empty, empty, L).to(model.device)
    hidden = forward(model, batch).last_hidden_state[0, L:]  # [n * 32, H]
    logits = model.lm_head(hidden).float()  # [n * 32, V]
    logits[:, mask_id] = float("-inf")
    confidence, chosen = logits.softmax(-1).max(-1)  # [n * 32], [n * 32]
    return confidence.view(-1, BLOCK).tolist(), chosen.view(-1, BLOCK).tolist()


def visited_states(model, row: Row, mask_id: int, filler: int, stop_ids: frozenset[int], rng: random.Random,
                   rounds: int, threshold: float = DEFAULT_THRESHOLD) -> list[State]:
    """One state per assistant block of the row, from at most `rounds` denoising passes."""
    blocks = turn_blocks(row, filler)
    states = [[mask_id] * BLOCK for _ in blocks]
    seen = [[list(s)] for s in states]  # the open states each block passed through
    first_wrong: list[list[int] | None] = [None] * len(blocks)

    def needed(b: int) -> list[bool]:
        resolved = [t != mask_id for t in states[b]]
        limit = needed_limit(states[b], resolved, stop_ids, BLOCK)
        return [not r and i < limit for i, r in enumerate(resolved)]

    for _ in range(rounds):
        open_blocks = [b for b in range(len(blocks)) if any(needed(b))]
        if not open_blocks:
            break
        confidence, chosen = predictions(model, row, [blocks[b][0] for b in open_blocks],
                                         [states[b] for b in open_blocks], mask_id)
        for k, b in enumerate(open_blocks):
            target = blocks[b][1]
            commits = select_commits(confidence[k], needed(b), threshold)
            if first_wrong[b] is None and any(chosen[k][i] != target[i] for i in commits):
                first_wrong[b] = list(states[b])
            for i in commits:
                states[b][i] = target[i]
            if any(needed(b)):
                seen[b].append(list(states[b]))
    return [(start, target, first_wrong[b] or rng.choice(seen[b])) for b, (start, target) in enumerate(blocks)]
