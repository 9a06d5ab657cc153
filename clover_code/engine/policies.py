"""Decoding policies: which masked positions one denoise pass commits.

Every pass of the block-diffusion loop (embedded/decoding.py) predicts each masked position;
a policy picks the ones to commit from what the pass offers (an `Offer`: each position's
confidence, whether it is still to decode, and on request its entropy and the kind of text it
falls in). Whatever the rule, a policy commits at least one position per pass (the likeliest,
when its rule takes none), so a block always ends; the loop never offers the mask token.

    threshold:T   the model card's rule: every position at confidence >= T (default 0.95)
    factor:F      Fast-dLLM's factor rule: the n most confident while (n + 1)(1 - p_n) < F
    entropy:B     EB-sampler's bound: in order of entropy, while the summed entropy (nats)
                  less the largest stays <= B
    context:T     thresholds by the scaffold's context: positions the grammar says are JSON
                  structure, a key or a tool name commit at >= T, string contents and prose
                  at the threshold rule's 0.95 (without a scaffold, everything is prose)
    guarded:T     the threshold rule at T, but a pick that repeats the token beside it (committed,
                  or picked there this pass) waits for 0.95: the doubled token (`strstr`,
                  `pypy`) a model unsure of an offset writes when the bar is low
    aligned:T     guarded, and a pick the still-masked position beside it also finds likely
                  (>= 0.1) waits for 0.95 too: it may be that position's token, one place off

A policy is named `NAME[:KNOB]` (flags, config, a request body); `parse_policy` reads that and
refuses anything else with a message that lists the names. A bare name takes the knob that
kept the demo checkpoint's calls about as exact as the threshold rule's (docs/benchmarks.md,
"Decoding policies"). Pure Python on lists of 32 numbers: cheap to import (the config and the
wire format check names with it) and cheaper per pass than a torch op.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, Literal, Protocol

from clover_code.engine import DEFAULT_THRESHOLD
from clover_code.errors import UserError

Kind = Literal["prose", "string", "key", "structure"]  # where a position falls, per the scaffold


class PolicyError(UserError):
    """A policy name or knob that cannot work; the message says what can."""


@dataclass(frozen=True)
class Offer:
    """What one pass offers the policy, per position of the block."""

    confidence: Sequence[float]  # the pick's probability
    active: Sequence[bool]  # still masked and needed (only these may be committed)
    entropy: Sequence[float] | None = None  # nats, when the policy wants it
    kinds: Sequence[Kind | None] | None = None  # when the policy wants it and a scaffold runs
    neighbours: Sequence[int] | None = None  # when the policy wants "tokens": each position's token,
    # the committed one where resolved, else this pass's pick
    beside: Sequence[Sequence[float]] | None = None  # when the policy wants "beside": what the
    # positions left and right of each give its pick, as [left, right]


class Policy(Protocol):
    name: ClassVar[str]
    wants: ClassVar[frozenset[str]]  # "entropy", "kinds", "tokens", "beside": what the loop adds to the offer

    @property
    def knob(self) -> float: ...

    def select(self, offer: Offer) -> list[int]:
        """Positions to commit, ascending; never empty while any position is active."""
        ...


def likeliest(offer: Offer) -> list[int]:
    """The single most confident active position: what every rule falls back to."""
    return [max((i for i, a in enumerate(offer.active) if a), key=offer.confidence.__getitem__)]


def by_confidence(offer: Offer) -> list[int]:
    """Active positions, most confident first (ties: leftmost first)."""
    return sorted((i for i, a in enumerate(offer.active) if a), key=lambda i: (-offer.confidence[i], i))


@dataclass(frozen=True)
class Threshold:
    """Every active position at or above the knob; else the likeliest one."""

    knob: float = DEFAULT_THRESHOLD
    name: ClassVar[str] = "threshold"
    wants: ClassVar[frozenset[str]] = frozenset()

    def select(self, offer: Offer) -> list[int]:
        # plain lists: a torch op per check cost more than the rest of a step outside the pass
        chosen = [i for i, (c, a) in enumerate(zip(offer.confidence, offer.active, strict=True))
                  if a and c >= self.knob]
        return chosen or likeliest(offer)


@dataclass(frozen=True)
class Factor:
    """Fast-dLLM (arXiv 2505.22618): commit the n most confident positions, n the largest with
    (k + 1)(1 - p_k) < F for every k <= n (p_k the k-th highest confidence); at least one. Few
    positions may commit at a lower confidence than many: the bound is on the chance that any
    of them is wrong together."""

    knob: float = 0.5
    name: ClassVar[str] = "factor"
    wants: ClassVar[frozenset[str]] = frozenset()

    def select(self, offer: Offer) -> list[int]:
        order = by_confidence(offer)
        n = 1
        while n < len(order) and (n + 2) * (1 - offer.confidence[order[n]]) < self.knob:
            n += 1
        return sorted(order[:n])


@dataclass(frozen=True)
class Entropy:
    """EB-sampler (arXiv 2505.24857): positions in order of entropy, lowest first, while the
    summed entropy of those taken, less the largest of them, stays within the knob (nats)."""

    knob: float = 0.1
    name: ClassVar[str] = "entropy"
    wants: ClassVar[frozenset[str]] = frozenset({"entropy"})

    def select(self, offer: Offer) -> list[int]:
        entropy = offer.entropy
        if entropy is None:
            raise ValueError("the entropy policy needs the offer's entropy")
        order = sorted((i for i, a in enumerate(offer.active) if a), key=lambda i: (entropy[i], i))
        total = largest = 0.0
        n = 0
        for i in order:
            total, largest = total + entropy[i], max(largest, entropy[i])
            if n and total - largest > self.knob:
                break
            n += 1
        return sorted(order[:n])


@dataclass(frozen=True)
class Context:
    """Thresholds by where a position falls (the scaffold's kinds): JSON structure, keys and
    tool names at the knob, string contents and prose at DEFAULT_THRESHOLD."""

    knob: float = 0.8
    name: ClassVar[str] = "context"
    wants: ClassVar[frozenset[str]] = frozenset({"kinds"})
    LOW: ClassVar[frozenset[str]] = frozenset({"structure", "key"})

    def select(self, offer: Offer) -> list[int]:
        kinds = offer.kinds

        def bar(i: int) -> float:
            return self.knob if kinds is not None and kinds[i] in self.LOW else DEFAULT_THRESHOLD

        chosen = [i for i, a in enumerate(offer.active) if a and offer.confidence[i] >= bar(i)]
        return chosen or likeliest(offer)


def held_back(offer: Offer, knob: float, held: Callable[[int], bool]) -> list[int]:
    """The threshold rule at `knob`, except that a `held` position waits for DEFAULT_THRESHOLD;
    when nothing passes, the likeliest position not held (else the likeliest)."""
    chosen = [i for i, (c, a) in enumerate(zip(offer.confidence, offer.active, strict=True))
              if a and (c >= DEFAULT_THRESHOLD or (c >= knob and not held(i)))]
    if chosen:
        return chosen
    free = [a and not held(i) for i, a in enumerate(offer.active)]
    return likeliest(Offer(offer.confidence, free)) if any(free) else likeliest(offer)


def repeats_neighbour(tokens: Sequence[int], i: int) -> bool:
    """Position i's token equals the one left or right of it."""
    return any(0 <= j < len(tokens) and tokens[j] == tokens[i] for j in (i - 1, i + 1))


@dataclass(frozen=True)
class Guarded:
    """The threshold rule at the knob, except for a pick that repeats the token beside it
    (committed, or picked there this pass): that one waits for DEFAULT_THRESHOLD. A small
    model unsure of a token's offset offers it at two neighbouring positions (`strstr`,
    `pypy`, `..`); a lower bar commits both, and the text has a doubled token."""

    knob: float = 0.8
    name: ClassVar[str] = "guarded"
    wants: ClassVar[frozenset[str]] = frozenset({"tokens"})

    def select(self, offer: Offer) -> list[int]:
        tokens = offer.neighbours
        if tokens is None:
            raise ValueError("the guarded policy needs the offer's tokens")
        return held_back(offer, self.knob, lambda i: repeats_neighbour(tokens, i))


@dataclass(frozen=True)
class Aligned:
    """guarded, and more: a pick that a still-masked neighbour also finds likely (at least
    CLAIM) waits for DEFAULT_THRESHOLD too. A token the position beside would write is one a
    model unsure of the offset may be placing a position early or late; committed there, it
    doubles (if the neighbour writes it too) or skips a token (`cartkit/.py` for
    `cartkit/models.py`), which guarded alone cannot see."""

    knob: float = 0.75
    name: ClassVar[str] = "aligned"
    wants: ClassVar[frozenset[str]] = frozenset({"tokens", "beside"})
    # a round bar between the measured 0.07 and 0.15, which trade TPF for exact calls along
    # one line on the demo checkpoint (docs/benchmarks.md, "Decoding policies")
    CLAIM: ClassVar[float] = 0.1

    def select(self, offer: Offer) -> list[int]:
        tokens, beside = offer.neighbours, offer.beside
        if tokens is None or beside is None:
            raise ValueError("the aligned policy needs the offer's tokens and what each neighbour gives them")

        def claimed(i: int) -> bool:
            return any(0 <= j < len(tokens) and offer.active[j] and beside[i][side] >= self.CLAIM
                       for side, j in enumerate((i - 1, i + 1)))

        return held_back(offer, self.knob, lambda i: repeats_neighbour(tokens, i) or claimed(i))


@dataclass(frozen=True)
class Rule:
    """A policy's name, what its knob means and where it may lie."""

    make: Callable[[float], Policy]
    default: float
    valid: Callable[[float], bool]
    rule: str


POLICIES: dict[str, Rule] = {
    "threshold": Rule(Threshold, DEFAULT_THRESHOLD, lambda k: 0 < k <= 1, "a confidence in (0, 1]"),
    "factor": Rule(Factor, 0.5, lambda k: k > 0, "a factor above 0"),
    "entropy": Rule(Entropy, 0.1, lambda k: k >= 0, "a budget in nats, 0 or more"),
    "context": Rule(Context, 0.8, lambda k: 0 < k <= 1, "a confidence in (0, 1]"),
    "guarded": Rule(Guarded, 0.8, lambda k: 0 < k <= 1, "a confidence in (0, 1]"),
    "aligned": Rule(Aligned, 0.75, lambda k: 0 < k <= 1, "a confidence in (0, 1]"),
}
NAMES_HELP = ", ".join(f"{name}[:KNOB]" for name in POLICIES)


def parse_policy(spec: str, threshold: float | None = None) -> Policy:
    """The policy `NAME[:KNOB]` names; a bare `threshold` takes `threshold` (else 0.95), any
    other bare name its default knob. PolicyError says what is wrong."""
    name, colon, knob_text = spec.strip().partition(":")
    name = name.strip().lower()
    rule = POLICIES.get(name)
    if rule is None:
        raise PolicyError(f"unknown decoding policy {spec!r}: choose {NAMES_HELP}")
    if not colon:
        default = threshold if threshold is not None and name == "threshold" else rule.default
        return rule.make(default)
    try:
        knob = float(knob_text)
    except ValueError:
        raise PolicyError(f"decoding policy {spec!r}: the knob must be a number ({rule.rule})") from None
    if not (math.isfinite(knob) and rule.valid(knob)):
        raise PolicyError(f"decoding policy {spec!r}: the knob must be {rule.rule}")
    return rule.make(knob)


def policy_spec(policy: Policy) -> str:
    """`NAME:KNOB`, as parse_policy reads it back."""
    return f"{policy.name}:{policy.knob:g}"
