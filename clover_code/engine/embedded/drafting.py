"""Copy drafting: n-gram drafts from the context, verified inside the passes a block needs.

Agent replies copy: `old_string` quotes the file just read, paths and names repeat. When the
last `n` committed tokens also occur earlier in the context (the prompt, tool results, the
reply so far), the tokens that followed them there are a draft for the masked positions
that follow the frontier (the first masked position), as llama.cpp's prompt-lookup drafts.

A draft is used only where it agrees with the model: the span runs from the frontier as long
as each masked position's draft equals the model's own top pick there in the last plain pass
(a guess it was not yet sure enough of to commit). A diffusion model predicts a position
only while it sees it masked, so the draft is checked the way SSD (arXiv 2510.04147) checks
self-drafts, inside one forward pass: along the span, masked positions alternate between
*verify* (left masked) and *fed* (given the drafted token as input), so each verify position
is predicted with the agreed copy around it as context. Soundness: a drafted token is
committed only at a verify position where the model itself predicts it, seeing it masked,
with confidence >= the threshold, and only in an unbroken chain of such positions from the
frontier; a fed position is never committed by that pass (the next pass sees it masked
between committed neighbours and decides it as usual), nor is any position outside the
span. A pass whose first verify position fails commits nothing, and that position gets no
draft again in this block: it is decoded normally. Greedy requests only (temperature 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

MIN_MATCH = 3  # tokens of committed suffix that must recur for a draft
MIN_FED = 2  # fewer fed positions than this: a plain pass does as well
MAX_CANDIDATES = 8  # most recent occurrences compared for the longest match
LONGEST_MATCH = 16


class GrammarCheck(Protocol):
    def allowed_prefix(self, start: int, tokens: list[int]) -> int: ...


@dataclass(frozen=True)
class Draft:
    tokens: dict[int, int]  # position -> drafted token, over the span
    verify: tuple[int, ...]  # masked positions checked by this pass, in order
    fed: tuple[int, ...]  # masked positions given the draft as input

    def inputs(self, block: list[int]) -> list[int]:
        """The block as this pass reads it: fed positions hold their drafted token."""
        ids = list(block)
        for p in self.fed:
            ids[p] = self.tokens[p]
        return ids

    def accepted(self, picks: list[int], confidence: list[float], threshold: float) -> list[int]:
        """Verify positions committed: the unbroken chain, from the frontier, where the model
        predicts the drafted token with confidence >= threshold."""
        chain = []
        for p in self.verify:
            if picks[p] != self.tokens[p] or confidence[p] < threshold:
                break
            chain.append(p)
        return chain


@dataclass
class DraftStats:
    passes: int = 0  # forward passes that fed a draft
    committed: int = 0  # tokens those passes committed
    rejected: int = 0  # drafted passes that committed nothing


@dataclass
class CopyDrafter:
    """decoding.Drafter for one request: `context` is the prompt's ids."""

    context: list[int]
    stop_ids: frozenset[int] = frozenset()
    n: int = MIN_MATCH
    stats: DraftStats = field(default_factory=DraftStats)
    _index: dict[tuple[int, ...], list[int]] = field(default_factory=dict)  # n-gram -> where it ended
    _refused: set[int] = field(default_factory=set)  # positions of this block where a draft failed
    _picks: list[int] | None = None  # the model's top picks in this block's last plain pass

    def __post_init__(self) -> None:
        self.context = list(self.context)
        self._add(0)

    def _add(self, start: int) -> None:
        """Index the n-grams ending at positions start + n .. len(context)."""
        for end in range(max(self.n, start + 1), len(self.context) + 1):
            self._index.setdefault(tuple(self.context[end - self.n:end]), []).append(end)

    def begin_block(self) -> None:
        self._refused.clear()
        self._picks = None

    def end_block(self, tokens: tuple[int, ...]) -> None:
        start = len(self.context) - self.n + 1
        self.context += tokens
        self._add(max(0, start))

    def propose(self, block: list[int], resolved: list[bool], limit: int,
                grammar: GrammarCheck | None = None) -> Draft | None:
        first = next((i for i in range(limit) if not resolved[i]), None)
        if first is None or first in self._refused or self._picks is None:
            return None
        continuation = self._continuation(self.context + block[:first], limit - first)
        if grammar is not None and continuation:
            continuation = continuation[:grammar.allowed_prefix(first, continuation)]
        return _layout(first, continuation, block, resolved, self._picks, self.stop_ids)

    def _continuation(self, history: list[int], room: int) -> list[int]:
        """What followed the longest recent earlier occurrence of history's last n tokens."""
        ends = self._index.get(tuple(history[-self.n:]), [])
        best, best_len = None, 0
        for end in reversed(ends[-MAX_CANDIDATES:]):
            if end >= len(self.context):
                continue  # nothing follows it yet (it is the suffix itself)
            length = _match_length(history, end)
            if length > best_len:
                best, best_len = end, length
        return [] if best is None else self.context[best:best + room]

    def record(self, draft: Draft | None, picks: list[int], committed: list[int]) -> None:
        """After a pass: `picks`, the model's top picks (kept from a plain pass); `committed`."""
        if draft is None:
            self._picks = picks
            return
        self.stats.passes += 1
        self.stats.committed += len(committed)
        if not committed:
            self.stats.rejected += 1
            self._refused.add(draft.verify[0])


def _match_length(history: list[int], end: int) -> int:
    """How many tokens before `end` equal history's last ones."""
    n = 0
    while n < LONGEST_MATCH and n < end and history[end - 1 - n] == history[len(history) - 1 - n]:
        n += 1
    return n


def _layout(first: int, continuation: list[int], block: list[int], resolved: list[bool], picks: list[int],
            stop_ids: frozenset[int]) -> Draft | None:
    """The drafted span from the frontier, its masked positions alternating verify / fed. It
    ends before a stop token, a committed token the draft contradicts, or a masked position
    the draft would feed (or the frontier) where the model's last pick was another token."""
    tokens: dict[int, int] = {}
    verify: list[int] = []
    fed: list[int] = []
    left_verify = False  # the position to the left is a verify position of this pass
    for offset, token in enumerate(continuation):
        p = first + offset
        feeds = not resolved[p] and left_verify
        if token in stop_ids or (resolved[p] and block[p] != token) or ((feeds or p == first) and picks[p] != token):
            break
        tokens[p] = token
        if feeds:
            fed.append(p)
        elif not resolved[p]:
            verify.append(p)
        left_verify = not resolved[p] and not feeds
    return Draft(tokens, tuple(verify), tuple(fed)) if len(fed) >= MIN_FED else None
