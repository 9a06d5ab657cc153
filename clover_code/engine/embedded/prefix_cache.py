"""A cache per person: several conversations' prefix states on one model, under a byte budget.

`clover-code serve` lets a team share one GPU; with a single cached prefix, two people
alternating evict each other and every turn re-encodes a whole context. Here each request
takes the state that serves the longest prefix of its prompt (`usable_prefix`: exact reuse
only, hybrids cut back to checkpoints); the state it displaces is parked. A state that would
have to be cut back is forked instead (keys/values shared until the fork's next pass), so a
second person who shares a system prompt with the first does not destroy the first's
conversation. Parked states go least recently used first when the total (the active state
included, shared storage counted once) passes the budget; the active one always stays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clover_code.engine.embedded.prefix_state import PrefixState, cut, fork, storage_bytes

if TYPE_CHECKING:
    from transformers import PretrainedConfig

DEFAULT_PREFIX_CACHE_MB = 8192  # Clover on one GPU: a 32K-token conversation is ~0.7 GB of KV + its checkpoints


@dataclass(frozen=True)
class Match:
    state: PrefixState  # the state the request decodes against (active from now on)
    keep: int  # prompt tokens it already holds
    source: str  # "live" (the active state, whole), "parked" (another conversation's, whole),
    #              "cut" (a state cut back: to a checkpoint for hybrids), "cold" (nothing reused)


class PrefixCache:
    def __init__(self, budget_bytes: int = DEFAULT_PREFIX_CACHE_MB << 20):
        self.budget = budget_bytes
        self.parked: list[PrefixState] = []  # least recently used first
        # storage of the parked states (they never change while parked): key -> bytes
        self._parked_parts: dict[object, int] | None = None

    def take(self, active: PrefixState, prompt: list[int], usable: Callable[[PrefixState, list[int]], int],
             fresh: Callable[[], PrefixState], text_config: PretrainedConfig, owner: str | None = None) -> Match:
        """The state to decode `prompt` against, holding exactly its first `keep` tokens. Among
        states that serve as much, `owner`'s own conversation wins (two people who share a system
        prompt each keep theirs), then the active one, then the most recent."""
        candidates = [active, *reversed(self.parked)]
        keep, _, best = max(((usable(s, prompt), owner is not None and s.owner == owner, s) for s in candidates),
                            key=lambda x: x[:2])
        whole = keep == len(best.tokens)
        source = "cold" if not keep else ("live" if best is active else "parked") if whole else "cut"
        if self.budget <= 0:  # one conversation: cut the active state in place
            cut(active, keep)
            active.owner = owner
            return Match(active, keep, source)
        if best is not active:
            self.parked.remove(best)
            self._parked_parts = None
            self._park(active)
        if not whole:
            self._park(best)  # whoever it belongs to keeps it, until the budget says otherwise
            best = fork(best, keep, text_config) if keep else fresh()
        best.owner = owner if owner is not None else best.owner
        return Match(best, keep, source)

    def trim(self, active: PrefixState) -> None:
        """Drop parked states, least recently used first, until everything fits the budget
        (called as a request starts and after every commit, as the active state grows)."""
        while self.parked and self.nbytes(active) > self.budget:
            self.parked.pop(0)
            self._parked_parts = None

    def clear(self) -> None:
        self.parked.clear()
        self._parked_parts = None

    def nbytes(self, active: PrefixState) -> int:
        if self._parked_parts is None:
            self._parked_parts = dict(part for s in self.parked for part in s.storage())
        parts = dict(self._parked_parts)
        parts.update(active.storage())
        return storage_bytes(parts.items())

    def report(self, active: PrefixState) -> dict[str, int]:
        return {"conversations": 1 + len(self.parked), "cache_bytes": self.nbytes(active),
                "cache_budget_bytes": self.budget}

    def _park(self, state: PrefixState) -> None:
        if state.tokens and all(s is not state for s in self.parked):
            self.parked.append(state)
            self._parked_parts = None

