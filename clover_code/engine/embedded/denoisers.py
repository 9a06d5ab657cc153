"""Adapters from a transformers causal-LM checkpoint to the block-diffusion `Denoiser`.

`denoise(block, commit)` returns logits for every position of a (partly masked) block
over the committed prefix, which it leaves as it was; `commit`, when given, joins the
prefix first, in the SAME forward pass: `[clean block k | masked block k+1]`, the masked
part sees the clean part, not the other way round. So a block that resolves in one step
costs one pass, for both kinds:

- attention-only models (qwen3, qwen3_moe, qwen2, llama, mistral): the pass appends the
  keys/values of both parts; the masked part's are cropped off again.
- Gated DeltaNet hybrids (qwen3_5, qwen3_5_moe, qwen3_next): linear layers fold tokens
  into a recurrent state that `crop` cannot roll back, so in that pass they fold the clean
  part only and run the masked part from the state at the block boundary, then forget it
  (linear_state.py); the attention layers are cropped as above. DeltaNet layers stay
  causal inside a block; only the attention layers see the block both ways.

The checkpoint properties (mask token, block size, alignment, logits shift, prefix
attention) are read in props.py; segments.py says where the attention segments go.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from clover_code.engine.embedded.linear_state import LinearSplit, capture
from clover_code.engine.embedded.prefix_cache import DEFAULT_PREFIX_CACHE_MB, PrefixCache
from clover_code.engine.embedded.prefix_state import PrefixState, drop_kv_tail, new_state, storage_bytes, usable_prefix
from clover_code.engine.embedded.props import (  # noqa: F401  (re-exported: the engine's one import site)
    ATTENTION_TYPES,
    HYBRID_TYPES,
    SUPPORTED_TYPES,
    CheckpointProps,
    checkpoint_kind,
    read_props,
    turn_mark_ids,
)
from clover_code.engine.embedded.segments import Segment, commit_segments, segment_mask
from clover_code.engine.embedded.state_checkpoints import (
    DEFAULT_CHECKPOINT_MB,
    DEFAULT_MAX_BLOCK_CHECKPOINTS,
    Checkpoints,
)

if TYPE_CHECKING:
    from transformers import DynamicCache, PreTrainedModel

    from clover_code.engine.embedded.linear_state import LinearState

PREFILL_CHUNK = 1024  # tokens per prefill pass: bounds the additive mask to [chunk, past + chunk]
CHECKPOINT_SPACING = 256  # a hybrid checkpoints a long prompt every this many tokens (then thinned)
MAX_TURN_CUTS = 16  # message starts checkpointed per request: the first (the system prompt's end) and the last


def state_budgets(checkpoint_mb: float | None = None, prefix_cache_mb: float | None = None) -> dict[str, int]:
    """ModelDenoiser's memory keywords from megabytes (None: the default; 0: none kept)."""
    return {"checkpoint_bytes": int((DEFAULT_CHECKPOINT_MB if checkpoint_mb is None else checkpoint_mb) * 2**20),
            "prefix_cache_bytes": int((DEFAULT_PREFIX_CACHE_MB if prefix_cache_mb is None else prefix_cache_mb)
                                      * 2**20)}


@dataclass(frozen=True)
class Reuse:
    """How a request's prompt met the cached prefix."""

    reused: int  # prompt tokens served from the cache
    encoded: int  # prompt tokens this request encodes
    source: str  # "live" | "parked" | "cut" | "cold", see prefix_cache.Match


class ModelDenoiser:
    """A transformers model with its prefix state; see the module docstring. `fuse=False`
    spends a pass of its own on every commit (the unfused path, kept to measure against).
    Hybrids keep linear-state checkpoints (checkpoints.py) within `checkpoint_bytes`."""

    def __init__(self, model: PreTrainedModel, props: CheckpointProps, kind: str, *, fuse: bool = True,
                 checkpoint_bytes: int = DEFAULT_CHECKPOINT_MB << 20,
                 max_block_checkpoints: int = DEFAULT_MAX_BLOCK_CHECKPOINTS,
                 prefix_cache_bytes: int = DEFAULT_PREFIX_CACHE_MB << 20, turn_marks: frozenset[int] = frozenset()):
        self.model, self.props, self.kind, self.fuse = model, props, kind, fuse
        self.text_config = model.config.get_text_config()
        # transformers leaves get_output_embeddings unannotated; it is the LM head (a Module).
        self.head: torch.nn.Module = model.get_output_embeddings()  # type: ignore[no-untyped-call]
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.split = LinearSplit(model) if kind == "hybrid" else None
        self.checkpoint_limits = (checkpoint_bytes, max_block_checkpoints)
        self.pool = PrefixCache(prefix_cache_bytes)
        self.last_reuse = Reuse(0, 0, "cold")
        self.turn_marks = turn_marks  # ids that start a message (`<|im_start|>`): checkpointed before
        self._turns: set[int] = set()  # where the current request checkpoints as "turn"
        self.reset()

    # -- prefix state ------------------------------------------------------------------------
    @property
    def tokens(self) -> list[int]:
        return self.state.tokens

    @property
    def cache(self) -> DynamicCache:
        return self.state.cache

    def reset(self) -> None:
        """Forget every cached prefix."""
        self.state = self._fresh()
        self.pool.clear()

    @torch.inference_mode()
    def reuse(self, prompt: list[int], owner: str | None = None) -> torch.Tensor:
        """Decode the next request against the cached prefix (this conversation's or a parked
        one, prefix_cache.py) that serves the longest part of `prompt` exactly, cut back to a
        checkpoint if need be; return the rest `[P']`, at least one token."""
        hybrid = self.split is not None
        match = self.pool.take(self.state, prompt, lambda s, p: usable_prefix(s, p, self.props, hybrid),
                               self._fresh, self.text_config, owner)
        self.state, keep = match.state, match.keep
        self.pool.trim(self.state)
        self.last_reuse = Reuse(keep, len(prompt) - keep, match.source)
        points = self.state.checkpoints
        if self.split is not None and keep and points.budget > 0 and keep not in points.points:
            points.add(keep, capture(self.state.cache), "turn")  # where this turn starts
        self._turns = self._turn_points(prompt, keep)
        return torch.tensor(prompt[keep:], dtype=torch.long)

    def commit(self, tokens: torch.Tensor) -> int:
        """Append clean tokens `[C]` to the prefix. Returns forward passes spent."""
        pieces = self._pieces(tokens)
        for piece, segments in pieces:
            self._commit_piece(piece, segments)
        return len(pieces)

    def report(self) -> dict[str, int]:
        """Prefix-state figures for logs and benchmarks (sizes in bytes)."""
        return {"prefix_tokens": len(self.state.tokens), "prefix_bytes": storage_bytes(self.state.storage()),
                **self.state.checkpoints.report(), **self.pool.report(self.state)}

    def _fresh(self) -> PrefixState:
        return new_state(self.text_config, Checkpoints(*self.checkpoint_limits))

    # -- Denoiser ----------------------------------------------------------------------------
    def denoise(self, block: torch.Tensor, commit: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
        size, shift, passes = block.shape[0], self.props.logits_shift, 0
        if commit is not None and not self.fuse:
            passes, commit = self.commit(commit), None
        if commit is None:
            logits = self._forward(block, [(size, True)], list(range(size - shift)), keep=0)  # [L - shift, V]
            if shift:
                assert self.state.last_logits is not None  # set by every pass over the prefix (logits_shift=1)
                logits = torch.cat([self.state.last_logits[None], logits])  # [L, V]
            return logits, passes + 1
        *head, (piece, segments) = self._pieces(commit)
        for earlier in head:  # a long prompt: prefill in bounded chunks, fuse only the last
            self._commit_piece(*earlier)
        c = piece.shape[0]
        rows = list(range(c - shift, c + size - shift))
        logits = self._forward(torch.cat([piece, block]), segments + [(size, True)], rows, keep=c)  # [L, V]
        self._append(piece, segments, logits[0] if shift else None)
        return logits, len(head) + 1

    # -- internals ---------------------------------------------------------------------------
    @torch.inference_mode()
    def _forward(self, ids: torch.Tensor, segments: list[Segment], rows: list[int], keep: int) -> torch.Tensor:
        """Run `ids` `[T]` after the cached prefix, keeping the first `keep` of them in the
        prefix state; logits `[R, V]` of `rows` (fp32, on the model's device)."""
        past, total = len(self.state.tokens), ids.shape[0]
        ids = ids.to(self.device)
        mask = segment_mask(segments, past, self.dtype, self.device)  # [1, 1, T, past + T]
        positions = torch.arange(past, past + total, device=self.device)[None]  # [1, T]
        cuts = self._cuts(past, keep)
        split: AbstractContextManager[dict[int, LinearState]] = nullcontext({})
        if self.split is not None and (cuts or keep < total):
            split = self.split.folding(self.state.cache, keep, cuts)
        with split as captured:
            out = self.model.base_model(input_ids=ids[None], attention_mask=self._mask_arg(mask),
                                        position_ids=positions, cache=self.state.cache, use_cache=True)
        drop_kv_tail(self.state.cache, total - keep)
        for at, linear in captured.items():
            self.state.checkpoints.add(past + at, linear, "turn" if past + at in self._turns else "block")
        hidden = out.last_hidden_state[0, rows]  # [R, H]
        logits: torch.Tensor = self.head(hidden)
        return logits.float()  # [R, V]

    def _cuts(self, past: int, keep: int) -> tuple[int, ...]:
        """Where, within a pass that keeps `keep` tokens, a hybrid checkpoints its linear states:
        at the end of what it keeps, at this request's turn points, and every CHECKPOINT_SPACING
        tokens of a long prompt (a multiple of the block size: a segment end in every layout)."""
        if self.split is None or keep == 0 or self.state.checkpoints.budget <= 0:
            return ()
        spacing = max(1, CHECKPOINT_SPACING // self.props.block_size) * self.props.block_size
        first = (past // spacing + 1) * spacing
        cuts = {keep, *range(first - past, keep, spacing), *(t - past for t in self._turns if 0 < t - past < keep)}
        return tuple(sorted(cuts))

    def _turn_points(self, prompt: list[int], keep: int) -> set[int]:
        """Turn checkpoints of a request whose prompt is encoded from `keep`: before the first
        and the last MAX_TURN_CUTS - 1 message starts, and where a retry resumes (all but the
        last prompt token); on the block grid for a block-causal prefix (segment ends)."""
        if self.split is None:
            return set()
        starts = [i for i in range(keep + 1, len(prompt)) if prompt[i] in self.turn_marks]
        points = {*starts[:1], *starts[1:][-(MAX_TURN_CUTS - 1):], len(prompt) - 1}
        if self.props.prefix_attention == "block":
            points = {p - p % self.props.block_size for p in points}
        return {p for p in points if p > keep}

    def _mask_arg(self, mask: torch.Tensor) -> torch.Tensor | dict[str, torch.Tensor | None]:
        layer_types = getattr(self.text_config, "layer_types", None)
        if not layer_types:
            return mask
        # Linear (DeltaNet) layers are causal by construction and take no mask.
        return {t: (None if t == "linear_attention" else mask) for t in set(layer_types)}

    def _commit_piece(self, piece: torch.Tensor, segments: list[Segment]) -> None:
        rows = [piece.shape[0] - 1] if self.props.logits_shift else []
        logits = self._forward(piece, segments, rows, keep=piece.shape[0])
        self._append(piece, segments, logits[-1] if rows else None)

    def _pieces(self, tokens: torch.Tensor) -> list[tuple[torch.Tensor, list[Segment]]]:
        """Split a commit into forward passes of at most PREFILL_CHUNK tokens, at segment
        boundaries (a causal segment may be cut anywhere), so masks stay `[chunk, past + chunk]`."""
        flat: list[Segment] = []
        for n, both in self._commit_segments(tokens.shape[0]):
            step = n if both else PREFILL_CHUNK
            flat += [(min(step, n - i), both) for i in range(0, n, step)]
        pieces: list[tuple[torch.Tensor, list[Segment]]] = []
        group: list[Segment] = []
        start = 0
        for seg in flat:
            if group and sum(n for n, _ in group) + seg[0] > PREFILL_CHUNK:
                count = sum(n for n, _ in group)
                pieces.append((tokens[start:start + count], group))
                start, group = start + count, []
            group.append(seg)
        pieces.append((tokens[start:], group))
        return pieces

    def _commit_segments(self, count: int) -> list[Segment]:
        return commit_segments(len(self.state.tokens), count, self.props.block_size,
                               block_prefix=self.props.prefix_attention == "block",
                               absolute=self.props.block_alignment == "absolute")

    def _append(self, tokens: torch.Tensor, segments: list[Segment], last_logits: torch.Tensor | None) -> None:
        if self.props.prefix_attention == "block":  # causal: every position is a boundary
            for n, _ in segments:
                self.state.boundaries.append(self.state.boundaries[-1] + n)
        self.state.tokens.extend(tokens.tolist())
        if last_logits is not None:
            self.state.last_logits = last_logits
        if self.pool.parked:
            self.pool.trim(self.state)  # the active state grew
