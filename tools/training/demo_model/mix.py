"""What training draws: one row at a time from the mix of sessions, renamed sessions,
copy drills and bare copy rows, and, for a GPU, those rows packed into padded batches
by worker processes (a step there consumes rows faster than one core makes them).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import accumulate

import torch

from tools.training.demo_model.chat import Row, session_row
from tools.training.demo_model.copy_task import copy_row
from tools.training.demo_model.rename import renamed
from tools.training.demo_model.train import BLOCK, Batch, pack, two_stream


@dataclass
class Rates:
    drill: float = 0.5  # share of the rows drawn from the drills
    rename: float = 0.5  # share of sessions and drills trained with invented names
    prefix: float = 0.0  # share of rows cut after a random one of their turns
    copy: float = 0.0  # share of bare copy rows
    copy_noise: int = 40  # most random words either side of a copy row's span


@dataclass
class RowSource:
    tokenizer: object
    tools: list[dict]
    sessions: list[dict]
    rows: list[Row]  # the sessions tokenized once
    drills: list[dict]
    words: list[str]  # vocabulary words that invented names are made of
    rates: Rates
    weights: dict[str, float] | None = None  # a family's weight in the draw of sessions (others: 1)

    def __post_init__(self):
        # cumulative weights of the sessions; None draws them uniformly
        self._cumulative = (list(accumulate(self.weights.get(s["family"], 1.0) for s in self.sessions))
                            if self.weights else None)

    def session_index(self, rng: random.Random) -> int:
        if self._cumulative is None:
            return rng.randrange(len(self.sessions))  # the same draw as rng.choice: older runs replay
        return rng.choices(range(len(self.sessions)), cum_weights=self._cumulative)[0]

    def next_row(self, rng: random.Random) -> Row:
        """One training sequence: a bare copy row, a drill or a session (renamed or not), maybe cut short."""
        rates = self.rates
        if rng.random() < rates.copy:
            row = copy_row(self.tokenizer, rng, self.words, rates.copy_noise)
        elif self.drills and rng.random() < rates.drill:  # tokenized here: drills are short
            drill = rng.choice(self.drills)
            chosen = renamed(drill, rng, self.words) if rng.random() < rates.rename else drill
            row = session_row(self.tokenizer, chosen, self.tools)
        elif rng.random() < rates.rename:
            session = self.sessions[self.session_index(rng)]
            row = session_row(self.tokenizer, renamed(session, rng, self.words), self.tools)
        else:
            row = self.rows[self.session_index(rng)]
        if rng.random() < rates.prefix:
            row = row.prefix(rng.randint(1, len(row.turns)))
        return row


def padded_size(parts: list[Batch]) -> int:
    """Sequence length of `pack(parts)`, per row."""
    clean = -(-max(p.noisy_from for p in parts) // BLOCK) * BLOCK
    return clean + max(p.input_ids.shape[1] - p.noisy_from for p in parts)


def group_by_size(parts: list[Batch], budget: int) -> list[list[Batch]]:
    """Rows of similar length together, each group's padded tokens within `budget` (a row
    longer than that alone), so little of a packed batch is padding."""
    parts = sorted(parts, key=lambda p: (p.input_ids.shape[1], p.noisy_from))
    groups: list[list[Batch]] = [[]]
    for part in parts:
        trial = groups[-1] + [part]
        if groups[-1] and len(trial) * padded_size(trial) > budget:
            groups.append([part])
        else:
            groups[-1] = trial
    return groups


class PackedBatches(torch.utils.data.IterableDataset):
    """Endless packed two-stream batches of about `budget` tokens each. Each worker draws
    from its own generator, seeded by (seed, worker), so a run is reproducible for a given
    worker count."""

    def __init__(self, source: RowSource, seed: str, budget: int, copies: int, pool: int = 256):
        self.source, self.seed, self.budget, self.copies, self.pool = source, seed, budget, copies, pool

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        rng = random.Random(f"{self.seed}/{info.id if info else 0}")
        mask_id, filler = self.source.tokenizer.mask_token_id, self.source.tokenizer.pad_token_id
        while True:
            parts = [two_stream(self.source.next_row(rng), mask_id, filler, rng, self.copies)
                     for _ in range(self.pool)]
            groups = group_by_size(parts, self.budget)
            rng.shuffle(groups)
            for group in groups:
                yield pack(group, filler)
