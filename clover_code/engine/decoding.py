"""The Clover block-diffusion loop: model-agnostic, pure torch.

Per block: start from mask tokens; each step asks the denoiser for logits of every
position over the read-only committed prefix, and commits (in parallel) the masked
positions whose confidence (max softmax probability, or the sampled token's
probability when sampling) is >= the threshold; when none passes, the single most
confident one. The block ends when no needed position is masked. The clean block is
handed to the next block's first denoise call as `commit`, so an adapter that can
fuse "commit block k" with "first step of block k+1" does it in one forward pass.

A position is needed while it lies before the first committed stop token and within
the `max_tokens` budget: once a stop token is committed and every position before it
is resolved, the block and the request end (positions after it are never decoded).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Iterator, Protocol

import torch

from clover_code.engine import DEFAULT_BLOCK_SIZE, DEFAULT_THRESHOLD, DenoiseStep


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
    threshold: float = DEFAULT_THRESHOLD
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

    @property
    def stopped_on_token(self) -> bool:
        return self.finish == "stop"


@dataclass(frozen=True)
class Pick:
    tokens: torch.Tensor  # [L] chosen token per position
    confidence: torch.Tensor  # [L] probability of the chosen token


def pick_tokens(logits: torch.Tensor, temperature: float, top_p: float,
                generator: torch.Generator | None = None) -> Pick:
    """Greedy at temperature 0, else sample from the top-p nucleus of softmax(logits / T).
    Runs where the logits are (a GPU keeps its `[L, V]`); the picks come back to the CPU."""
    logits = logits.float()  # [L, V]
    if temperature <= 0:
        # max softmax probability = exp(max logit - logsumexp): no [L, V] probabilities materialised
        best, tokens = logits.max(dim=-1)  # [L], [L]
        confidence = (best - logits.logsumexp(dim=-1)).exp()  # [L]
        return Pick(tokens.cpu(), confidence.cpu())
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
    confidence = probs.gather(-1, tokens.to(probs.device)[:, None]).squeeze(-1).cpu()  # [L]
    return Pick(tokens, confidence)


def select_commits(confidence: torch.Tensor, active: torch.Tensor, threshold: float) -> torch.Tensor:
    """Bool `[L]`: the active positions at or above the threshold; with none, the top-1 active one."""
    chosen = active & (confidence >= threshold)
    if not chosen.any():
        best = confidence.masked_fill(~active, -1.0).argmax()
        chosen = torch.zeros_like(active)
        chosen[best] = True
    return chosen


def needed_limit(block: torch.Tensor, resolved: torch.Tensor, stop_ids: torch.Tensor, budget: int) -> int:
    """Positions `[0, limit)` the request still needs: within budget and before the first committed
    stop (`stop_ids`: `[S]` ids)."""
    limit = min(block.shape[0], budget)
    stops = (resolved[:limit] & torch.isin(block[:limit], stop_ids)).nonzero()  # [K, 1]
    return int(stops[0, 0]) + 1 if stops.numel() else limit  # the stop token itself is kept: it is reply text


def decode_blocks(denoiser: Denoiser, prompt_pending: torch.Tensor | None, opts: DecodeOptions, *,
                  on_step: Callable[[DenoiseStep], None] | None = None,
                  cancelled: Callable[[], bool] = lambda: False) -> Iterator[BlockResult]:
    """Yield each block as it resolves. `prompt_pending` (`[P]`): prompt tokens not yet in the
    denoiser's prefix. Stops early (without a final result) when `cancelled()` turns true."""
    if opts.block_size < 1:
        raise ValueError("block size must be >= 1")
    generator = None
    if opts.seed is not None:
        generator = torch.Generator().manual_seed(opts.seed)
    pending = prompt_pending if prompt_pending is not None and prompt_pending.numel() else None
    produced, index = 0, 0
    size = opts.first_block_size or opts.block_size
    stop_ids = torch.tensor(sorted(opts.stop_ids), dtype=torch.long)  # [S]
    while produced < opts.max_tokens:
        result = _decode_one(denoiser, pending, size, opts, stop_ids, index, opts.max_tokens - produced,
                             generator, on_step, cancelled)
        if result is None:
            return
        produced += len(result.tokens)
        finish = result.finish or ("length" if produced >= opts.max_tokens else None)
        yield BlockResult(result.index, result.tokens, result.steps, result.ms, finish)
        if finish:
            return
        pending = torch.tensor(result.tokens, dtype=torch.long)
        index += 1
        size = opts.block_size


def _decode_one(denoiser: Denoiser, pending: torch.Tensor | None, size: int, opts: DecodeOptions,
                stop_ids: torch.Tensor, index: int, budget: int, generator: torch.Generator | None, on_step,
                cancelled) -> BlockResult | None:
    start = time.perf_counter()
    block = torch.full((size,), opts.mask_id, dtype=torch.long)  # [L]
    resolved = torch.zeros(size, dtype=torch.bool)  # [L]
    steps = passes = 0
    limit = min(size, budget)
    while not resolved[:limit].all():
        if cancelled():
            return None
        logits, spent = denoiser.denoise(block, pending)  # [L, V]
        pending = None
        passes += spent
        steps += 1
        pick = pick_tokens(logits, opts.temperature, opts.top_p, generator)
        active = ~resolved
        active[limit:] = False
        chosen = select_commits(pick.confidence, active, opts.threshold)  # [L]
        block = torch.where(chosen, pick.tokens, block)
        resolved |= chosen
        limit = needed_limit(block, resolved, stop_ids, budget)
        if on_step is not None:
            on_step(DenoiseStep(index, steps, tuple(resolved.tolist()),
                                tuple(chosen.nonzero().flatten().tolist())))
    tokens = tuple(block[:limit].tolist())
    stopped = bool(tokens) and tokens[-1] in opts.stop_ids
    ms = (time.perf_counter() - start) * 1000
    return BlockResult(index, tokens, passes, ms, "stop" if stopped else None)
