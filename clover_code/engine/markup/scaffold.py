"""Scaffolded decoding inside tool calls: the grammar of the request's tools, applied at the
frontier of the committed text.

The frontier is the first position whose left context is not all committed and checked.
Per block, the decoding loop (decoding.py) asks the scaffold to
- `settle`: walk the frontier over committed positions, checking each against the grammar
  given the (now committed) text to its left; a commit the grammar rules out is withdrawn
  (the position is masked again: until its left context resolved, it held the model's own
  choice); at a masked frontier, commit the tokens the grammar forces (the tokenizer's own
  tokens for the forced text, see vocabulary.py) without a denoise step;
- `constrain`: after a forward pass, if the model's pick at the frontier is ruled out, replace
  it by the likeliest allowed token, with the model's probability renormalized over the
  allowed candidates as its confidence (so it commits at the usual threshold).
Outside calls, and for string contents inside them, the model's choice stands: the grammar
rules out only broken structure (quoting, escapes, brackets, tags), unknown tool names and
keys the schema lacks. Whitespace JSON allows beyond the template's layout (before a key,
json_grammar.py) stands where the model commits it, but a replaced pick is never whitespace:
it follows the template (else a model unsure of what comes next would be handed spaces). A sampled request
(temperature > 0) gets the likeliest allowed token where its sample is ruled out.
`TokenGrammar` memoizes token steps per (state, id, strict), and is kept per set of tools, so
an agent's later requests reuse it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from clover_code.engine.markup.call_format import CallFormat
from clover_code.engine.markup.call_grammar import CallGrammar
from clover_code.engine.markup.json_grammar import Stack
from clover_code.engine.markup.vocabulary import Vocabulary
from clover_code.engine.policies import Kind

if TYPE_CHECKING:
    import torch

CANDIDATES = 64  # likeliest tokens tried at the frontier before scanning the whole vocabulary
MEMO_LIMIT = 200_000  # token steps remembered per grammar (tens of MB at most)
_RULED_OUT = object()


class TokenGrammar:
    """CallGrammar over token ids: memoized steps and forced tokens."""

    def __init__(self, grammar: CallGrammar, vocab: Vocabulary):
        self.grammar, self.vocab = grammar, vocab
        self.start = grammar.start
        self._steps: dict[tuple[Stack, int, bool], Stack | object] = {}
        self._forced: dict[tuple[Stack, str], list[int]] = {}

    def step(self, state: Stack, token: int, strict: bool = False) -> Stack | None:
        """The state after `token`, or None when the grammar rules it out (`strict`: also
        whitespace beyond the template's, see CallGrammar.feed)."""
        key = (state, token, strict)
        found = self._steps.get(key)
        if found is None:
            text = self.vocab.text(token)
            nxt = None if text is None else self.grammar.feed(state, text, structural=token in self.vocab.added,
                                                              strict=strict)
            if len(self._steps) > MEMO_LIMIT:
                self._steps.clear()
            found = self._steps[key] = _RULED_OUT if nxt is None else nxt
        return None if found is _RULED_OUT else found  # type: ignore[return-value]

    def inside_call(self, state: Stack) -> bool:
        return self.grammar.inside_call(state)

    def kind(self, state: Stack) -> Kind:
        return self.grammar.kind(state)

    def forced(self, state: Stack, prev: str) -> list[int]:
        """Tokens the grammar forces next (after text ending in `prev`): see Vocabulary.forced_tokens."""
        key = (state, prev)
        if key not in self._forced:
            if len(self._forced) > MEMO_LIMIT // 10:
                self._forced.clear()
            text, following = self.grammar.forced(state)
            ids = self.vocab.forced_tokens(prev, text, following) if text else []
            for k, token in enumerate(ids):  # the rest stays forced after each of them
                self._forced[(state, prev)] = ids[k:]
                nxt = self.step(state, token)
                if nxt is None:
                    break
                state, prev = nxt, self.vocab.texts[token]
            self._forced.setdefault(key, [])
        return self._forced[key]


def tools_key(tools: Iterable[Mapping[str, object]]) -> str:
    return json.dumps(list(tools), sort_keys=True, default=str)


class Grammars:
    """Per checkpoint: its call layout, its vocabulary and a TokenGrammar per set of tools."""

    def __init__(self, fmt: CallFormat, vocab: Vocabulary, keep: int = 8):
        self.fmt, self.vocab, self.keep = fmt, vocab, keep
        self._by_tools: dict[str, TokenGrammar] = {}

    def for_tools(self, tools: Sequence[Mapping[str, object]], required: bool = False) -> TokenGrammar:
        """`required`: the reply must open with a call (a request's tool_choice)."""
        key = f"{required}:{tools_key(tools)}"
        grammar = self._by_tools.pop(key, None) or TokenGrammar(CallGrammar(self.fmt, tools, required), self.vocab)
        self._by_tools[key] = grammar  # most recent last
        while len(self._by_tools) > self.keep:
            del self._by_tools[next(iter(self._by_tools))]
        return grammar


@dataclass
class ScaffoldStats:
    forced: int = 0  # tokens committed by the grammar, without a denoise step
    repicked: int = 0  # frontier picks the grammar replaced
    withdrawn: int = 0  # commits ruled out once their left context was committed


class Scaffold:
    """decoding.Guide for one request (see the module docstring)."""

    def __init__(self, grammar: TokenGrammar, mask_id: int):
        self.grammar, self.mask_id = grammar, mask_id
        self.state = grammar.start
        self.prev = ""  # text of the committed token just left of the frontier
        self.frontier = 0  # position in the current block
        self.stats = ScaffoldStats()
        self.broken = False  # no token fits (cannot happen with a consistent grammar): stop guiding

    def begin_block(self) -> None:
        self.frontier = 0

    def settle(self, block: list[int], resolved: list[bool], limit: int) -> list[int]:
        """Advance the frontier up to `limit`; returns the positions committed by the grammar."""
        forced_at: list[int] = []
        while not self.broken and self.frontier < limit:
            f = self.frontier
            if resolved[f]:
                nxt = self.grammar.step(self.state, block[f])
                if nxt is None:
                    block[f], resolved[f] = self.mask_id, False
                    self.stats.withdrawn += 1
                    continue
                self.state, self.prev, self.frontier = nxt, self.grammar.vocab.texts[block[f]], f + 1
                continue
            ids = self.grammar.forced(self.state, self.prev) if self.grammar.inside_call(self.state) else []
            if not ids:
                break
            block[f], resolved[f] = ids[0], True
            forced_at.append(f)
            self.stats.forced += 1
        return forced_at

    def constrain(self, logits: torch.Tensor, tokens: list[int], confidence: list[float],
                  resolved: list[bool]) -> None:
        """Replace a ruled-out pick at the frontier (see the module docstring); `logits` `[L, V]`."""
        f = self.frontier
        if self.broken or f >= len(tokens) or resolved[f] or not self.grammar.inside_call(self.state):
            return
        if self.grammar.step(self.state, tokens[f]) is not None:
            return
        import torch

        probs = torch.softmax(logits[f].float(), dim=-1)  # [V]
        top_p, top_ids = probs.topk(min(CANDIDATES, probs.shape[0]))  # [K], [K]
        top = list(zip(top_p.tolist(), top_ids.tolist(), strict=True))
        allowed = [(p, t) for p, t in top if self.grammar.step(self.state, t, strict=True) is not None]
        outside = max(0.0, 1.0 - sum(p for p, _ in top))  # mass beyond the candidates, counted as allowed
        if not allowed:
            allowed = self._scan(probs, {t for _, t in top})
        if not allowed:
            self.broken = True
            return
        p, token = allowed[0]
        tokens[f], confidence[f] = token, p / (sum(q for q, _ in allowed) + outside)
        self.stats.repicked += 1

    def _scan(self, probs: torch.Tensor, seen: set[int]) -> list[tuple[float, int]]:
        """The likeliest allowed token outside the candidates, scanning the whole vocabulary."""
        for token in probs.argsort(descending=True).tolist():
            if token not in seen and self.grammar.step(self.state, token, strict=True) is not None:
                return [(float(probs[token]), token)]
        return []

    def kinds(self, block: list[int], resolved: list[bool], picks: list[int]) -> list[Kind | None]:
        """Per position, the kind of text its token starts in (policies.Kind), read along the
        block from the frontier: committed tokens, and the model's picks where masked (so
        past the frontier it is the model's own guess of its context). None before the
        frontier and from the first token the grammar rules out."""
        kinds: list[Kind | None] = [None] * len(block)
        state = self.state
        for f in range(self.frontier, len(block) if not self.broken else 0):
            kinds[f] = self.grammar.kind(state)
            nxt = self.grammar.step(state, block[f] if resolved[f] else picks[f])
            if nxt is None:
                break
            state = nxt
        return kinds

    def allowed_prefix(self, start: int, tokens: list[int]) -> int:
        """How many of `tokens`, placed from position `start`, the grammar allows (0 unless
        `start` is the frontier): drafts are cut where the grammar rules them out."""
        if start != self.frontier:
            return 0
        state = self.state
        for n, token in enumerate(tokens):
            nxt = self.grammar.step(state, token)
            if nxt is None:
                return n
            state = nxt
        return len(tokens)
