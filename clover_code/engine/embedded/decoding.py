"""The Clover block-diffusion loop: model-agnostic, pure torch.

Per block: start from mask tokens; each step asks the denoiser for logits of every
position over the read-only committed prefix, and commits (in parallel) the masked
positions the decoding policy picks (engine/policies.py) from their confidence (max
softmax probability, or the sampled token's probability when sampling; the mask token
itself is never picked). The default policy is the model card's threshold rule: those at
confidence >= the threshold; when none passes, the single most confident one. Every policy
commits at least one position per pass. The block ends when no needed position is masked.
The clean block is handed to the next block's first denoise call as `commit`, so an adapter
that can fuse "commit block k" with "first step of block k+1" does it in one forward pass.

A position is needed while it lies before the first committed stop token and within
the `max_tokens` budget: once a stop token is committed and every position before it
is resolved, the block and the request end (positions after it are never decoded).

Two optional per-request helpers join the loop: a `Guide` (scaffold.py) checks commits
against a grammar at the frontier of the committed text, withdraws what it rules out and
commits what it forces without a pass; a `Drafter` (drafting.py) feeds copy drafts into a
pass and commits only the drafted tokens the model itself confirms. Without them the loop
is exactly the plain one above.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Protocol

import torch

from clover_code.engine import DEFAULT_BLOCK_SIZE, DEFAULT_THRESHOLD, DenoiseStep
from clover_code.engine.embedded.drafting import Draft
from clover_code.engine.policies import Kind, Offer, Policy, Threshold


class Guide(Protocol):
    """Rules on what may be committed where (scaffold.py): the loop asks it at every commit."""

    def begin_block(self) -> None: ...

    def settle(self, block: list[int], resolved: list[bool], limit: int) -> list[int]:
        """Check commits against their committed left context (withdraw, i.e. mask again, what
        it rules out) and commit what it forces; returns the positions it committed."""
        ...

    def constrain(self, logits: torch.Tensor, tokens: list[int], confidence: list[float],
                  resolved: list[bool]) -> None:
        """Change the picks (and their confidence) where it rules the model's pick out."""
        ...

    def allowed_prefix(self, start: int, tokens: list[int]) -> int: ...

    def kinds(self, block: list[int], resolved: list[bool], picks: list[int]) -> list[Kind | None]:
        """Per position, the kind of text it falls in, read along the committed tokens and the
        picks from the frontier on (None before the frontier and past a pick ruled out)."""
        ...


class Drafter(Protocol):
    """Drafts for the masked positions, checked inside the block's passes (drafting.py)."""

    def begin_block(self) -> None: ...

    def propose(self, block: list[int], resolved: list[bool], limit: int, grammar: Guide | None) -> Draft | None: ...

    def record(self, draft: Draft | None, picks: list[int], committed: list[int]) -> None: ...

    def end_block(self, tokens: tuple[int, ...]) -> None: ...


class Denoiser(Protocol):
    """What the loop needs from a model adapter (see denoisers.py)."""

    def denoise(self, block: torch.Tensor, commit: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
        """Logits `[L, V]` aligned to the positions of `block` (`[L]` ids, masks included),
        over the committed prefix, which stays unchanged. `commit` (`[C]` clean ids), when
        given, joins the prefix first. Returns the logits and the forward passes spent."""
        ...


@dataclass(frozen=True)
class DecodeOptions:
    mask_id: int
    stop_ids: frozenset[int] = frozenset()
    block_size: int = DEFAULT_BLOCK_SIZE
    first_block_size: int | None = None  # shorter first block when blocks align to absolute positions
    threshold: float = DEFAULT_THRESHOLD  # the threshold rule's, and the confidence a draft must reach
    policy: Policy | None = None  # which positions a pass commits; None: the threshold rule at `threshold`
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 4096
    seed: int | None = None


@dataclass(frozen=True)
class BlockResult:
    index: int
    tokens: tuple[int, ...]  # committed tokens of this block, up to and including a stop token
    steps: int  # forward passes spent on this block
    ms: float
    finish: str | None  # "stop" | "length" | None (more blocks follow)


@dataclass(frozen=True)
class Pick:
    tokens: torch.Tensor  # [L] chosen token per position
    confidence: torch.Tensor  # [L] probability of the chosen token
    entropy: torch.Tensor | None = None  # [L] nats of the distribution picked from, when asked
    beside: torch.Tensor | None = None  # [L, 2] the left and right neighbours' probability of this pick, when asked


def pick_tokens(logits: torch.Tensor, temperature: float, top_p: float,
                generator: torch.Generator | None = None, banned: int | None = None,
                entropy: bool = False, beside: bool = False) -> Pick:
    """Greedy at temperature 0, else sample from the top-p nucleus of softmax(logits / T),
    never the `banned` token; with `entropy`, also each distribution's entropy; with `beside`,
    what each pick's neighbours give it. Runs where the logits are (a GPU keeps its `[L, V]`);
    the picks come back to the CPU."""
    logits = logits.float()  # [L, V]
    if banned is not None:
        # out of place: a denoiser may keep a row of these logits (the next block's first)
        logits = logits.index_fill(-1, torch.tensor([banned], device=logits.device), float("-inf"))
    if temperature <= 0:
        # softmax then max, not max and logsumexp: on CPU the latter is ~6x slower when logits
        # span a wide range, as a confident model's do (430 vs 70 us for [32, 320] here).
        probs = torch.softmax(logits, dim=-1)  # [L, V]
        confidence, tokens = probs.max(dim=-1)  # [L], [L]
        return Pick(tokens.cpu(), confidence.cpu(), _entropy(probs) if entropy else None,
                    _beside(probs, tokens) if beside else None)
    probs = torch.softmax(logits / temperature, dim=-1)  # [L, V]
    if top_p < 1.0:
        sorted_probs, order = probs.sort(dim=-1, descending=True)  # [L, V]
        outside = sorted_probs.cumsum(-1) - sorted_probs > top_p  # keep the smallest set reaching top_p
        sorted_probs = sorted_probs.masked_fill(outside, 0.0)
        probs = torch.zeros_like(probs).scatter(-1, order, sorted_probs)
        probs = probs / probs.sum(-1, keepdim=True)
    if generator is not None and generator.device != probs.device:
        tokens = torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(-1)  # [L]
    else:
        tokens = torch.multinomial(probs, 1, generator=generator).squeeze(-1).cpu()  # [L]
    on_device = tokens.to(probs.device)  # [L]
    confidence = probs.gather(-1, on_device[:, None]).squeeze(-1).cpu()  # [L]
    return Pick(tokens, confidence, _entropy(probs) if entropy else None,
                _beside(probs, on_device) if beside else None)


def _beside(probs: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """[L, 2]: what the position left of each pick (column 0) and right of it (1) give that
    pick; 0 past the block's ends."""
    out = torch.zeros(probs.shape[0], 2, device=probs.device)  # [L, 2]
    if probs.shape[0] > 1:
        out[1:, 0] = probs[:-1].gather(-1, tokens[1:, None]).squeeze(-1)  # p_{i-1}(t_i)
        out[:-1, 1] = probs[1:].gather(-1, tokens[:-1, None]).squeeze(-1)  # p_{i+1}(t_i)
    return out.cpu()


def _entropy(probs: torch.Tensor) -> torch.Tensor:
    entropy: torch.Tensor = torch.special.entr(probs).sum(-1)  # [L]; entr(0) = 0 where a token is banned
    return entropy.cpu()


def select_commits(confidence: list[float], active: list[bool], threshold: float) -> list[int]:
    """The threshold rule (policies.Threshold): the active positions at or above the threshold;
    with none, the single most confident active one."""
    return Threshold(threshold).select(Offer(confidence, active))


def needed_limit(block: list[int], resolved: list[bool], stop_ids: frozenset[int], budget: int) -> int:
    """Positions `[0, limit)` the request still needs: within budget and before the first committed stop."""
    limit = min(len(block), budget)
    for pos in range(limit):
        if resolved[pos] and block[pos] in stop_ids:
            return pos + 1  # the stop token itself is kept: it is committed text of the reply
    return limit


def decode_blocks(denoiser: Denoiser, prompt_pending: torch.Tensor | None, opts: DecodeOptions, *,
                  on_step: Callable[[DenoiseStep], None] | None = None,
                  cancelled: Callable[[], bool] = lambda: False,
                  guide: Guide | None = None, drafter: Drafter | None = None
                  ) -> Generator[BlockResult, None, None]:
    """Yield each block as it resolves. `prompt_pending` (`[P]`): prompt tokens not yet in the
    denoiser's prefix. Stops early (without a final result) when `cancelled()` turns true.
    `guide` (scaffold.py) and `drafter` (drafting.py) are per-request helpers; without them
    this is the plain Clover loop."""
    if opts.block_size < 1:
        raise ValueError("block size must be >= 1")
    generator = None
    if opts.seed is not None:
        generator = torch.Generator().manual_seed(opts.seed)
    pending = prompt_pending if prompt_pending is not None and prompt_pending.numel() else None
    helpers = Helpers(guide, drafter)
    produced, index = 0, 0
    size = opts.first_block_size or opts.block_size
    while produced < opts.max_tokens:
        result, unspent = _decode_one(denoiser, pending, size, opts, index, opts.max_tokens - produced,
                                      generator, on_step, cancelled, helpers)
        if result is None:
            return
        produced += len(result.tokens)
        finish = result.finish or ("length" if produced >= opts.max_tokens else None)
        yield BlockResult(result.index, result.tokens, result.steps, result.ms, finish)
        if finish:
            return
        pending = torch.tensor(result.tokens, dtype=torch.long)
        if unspent is not None:  # a block the grammar wrote whole took no pass: what it had waits on
            pending = torch.cat([unspent, pending])
        index += 1
        size = opts.block_size


@dataclass(frozen=True)
class Helpers:
    guide: Guide | None = None
    drafter: Drafter | None = None


def _decode_one(denoiser: Denoiser, pending: torch.Tensor | None, size: int, opts: DecodeOptions, index: int,
                budget: int, generator: torch.Generator | None, on_step: Callable[[DenoiseStep], None] | None,
                cancelled: Callable[[], bool], helpers: Helpers) -> tuple[BlockResult | None, torch.Tensor | None]:
    """One block; also the pending commit that no pass took (a block written by the grammar alone)."""
    start = time.perf_counter()
    block = [opts.mask_id] * size  # the block's ids, masks included
    resolved = [False] * size
    steps = passes = 0
    guide, drafter = helpers.guide, helpers.drafter
    policy = opts.policy or Threshold(opts.threshold)
    if guide is not None:
        guide.begin_block()
    if drafter is not None:
        drafter.begin_block()
    limit, _ = _settle(guide, block, resolved, opts.stop_ids, budget)
    while not all(resolved[:limit]):
        if cancelled():
            return None, pending
        draft = drafter.propose(block, resolved, limit, guide) if drafter is not None else None
        inputs = block if draft is None else draft.inputs(block)
        logits, spent = denoiser.denoise(torch.tensor(inputs, dtype=torch.long), pending)  # [L, V]
        pending = None
        passes += spent
        steps += 1
        # the mask token is the input's "unknown", never an answer: a small model with tied
        # embeddings echoes it where it knows nothing, and a committed mask would be text
        pick = pick_tokens(logits, opts.temperature, opts.top_p, generator, banned=opts.mask_id,
                           entropy="entropy" in policy.wants, beside="beside" in policy.wants)
        tokens, confidence = pick.tokens.tolist(), pick.confidence.tolist()
        if guide is not None:
            guide.constrain(logits, tokens, confidence, resolved)
        if draft is not None:
            chosen = draft.accepted(tokens, confidence, opts.threshold)
        else:
            chosen = policy.select(_offer(policy, pick, tokens, confidence, block, resolved, limit, guide))
        if drafter is not None:
            drafter.record(draft, tokens, chosen)
        for i in chosen:
            block[i], resolved[i] = tokens[i], True
        limit, forced = _settle(guide, block, resolved, opts.stop_ids, budget)
        if on_step is not None:
            newly = chosen if guide is None else [i for i in chosen + forced if resolved[i]]
            on_step(DenoiseStep(index, steps, tuple(resolved), tuple(newly)))
    committed = tuple(block[:limit])
    if drafter is not None:
        drafter.end_block(committed)
    stopped = bool(committed) and committed[-1] in opts.stop_ids
    ms = (time.perf_counter() - start) * 1000
    return BlockResult(index, committed, passes, ms, "stop" if stopped else None), pending


def _offer(policy: Policy, pick: Pick, tokens: list[int], confidence: list[float], block: list[int],
           resolved: list[bool], limit: int, guide: Guide | None) -> Offer:
    """What this pass offers the policy: the active positions (masked, needed), and what else it wants."""
    active = [not r and i < limit for i, r in enumerate(resolved)]
    entropy = pick.entropy.tolist() if pick.entropy is not None else None
    kinds = guide.kinds(block, resolved, tokens) if guide is not None and "kinds" in policy.wants else None
    neighbours = [b if r else t for b, r, t in zip(block, resolved, tokens, strict=True)] \
        if "tokens" in policy.wants else None
    beside = pick.beside.tolist() if pick.beside is not None else None
    return Offer(confidence, active, entropy, kinds, neighbours, beside)


def _settle(guide: Guide | None, block: list[int], resolved: list[bool], stop_ids: frozenset[int],
            budget: int) -> tuple[int, list[int]]:
    """The block's needed limit once the guide has checked its commits and written what it
    forces (a withdrawn stop token lengthens the limit: check again), and what it wrote."""
    limit = needed_limit(block, resolved, stop_ids, budget)
    forced: list[int] = []
    while guide is not None:
        forced += guide.settle(block, resolved, limit)
        limit, before = needed_limit(block, resolved, stop_ids, budget), limit
        if limit == before:
            break
    return limit, forced
