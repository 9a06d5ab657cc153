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

from contextlib import nullcontext

import torch

from clover_code.engine.linear_state import LinearSplit
from clover_code.engine.prefix_state import drop_kv_tail
from clover_code.engine.props import (  # noqa: F401  (re-exported: the engine's one import site)
    ATTENTION_TYPES, HYBRID_TYPES, SUPPORTED_TYPES, CheckpointProps, checkpoint_kind, read_props)
from clover_code.engine.segments import Segment, commit_segments, grid_cut, segment_mask

PREFILL_CHUNK = 1024  # tokens per prefill pass: bounds the additive mask to [chunk, past + chunk]


class ModelDenoiser:
    """A transformers model with its prefix state; see the module docstring. `fuse=False`
    spends a pass of its own on every commit (the unfused path, kept to measure against)."""

    def __init__(self, model, props: CheckpointProps, kind: str, *, fuse: bool = True):
        self.model, self.props, self.kind, self.fuse = model, props, kind, fuse
        self.text_config = model.config.get_text_config()
        self.head = model.get_output_embeddings()
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
        self.split = LinearSplit(model) if kind == "hybrid" else None
        self.reset()

    # -- prefix state ------------------------------------------------------------------------
    def reset(self) -> None:
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.text_config)
        self.tokens: list[int] = []  # ids whose state the cache holds
        self.boundaries: list[int] = [0]  # prefix lengths at segment ends (block-causal reuse)
        self.last_logits: torch.Tensor | None = None  # [V] at the last prefix position (logits_shift=1)

    def reuse(self, prompt: list[int]) -> torch.Tensor:
        """Keep the longest cached prefix of `prompt` that can be kept; return the rest `[P']`.
        At least one prompt token is left to encode (its logits start the first block)."""
        keep = 0
        limit = len(prompt) - 1
        while keep < min(len(self.tokens), limit) and self.tokens[keep] == prompt[keep]:
            keep += 1
        if self.props.prefix_attention == "block":  # warm must equal cold: cut on the prompt's own grid
            keep = grid_cut(self.boundaries, keep, self.props.block_size)
        if keep < len(self.tokens):
            if self.kind == "hybrid" or keep == 0:
                self.reset()  # a recurrent state cannot be cut back
                keep = 0
            else:
                drop_kv_tail(self.cache, len(self.tokens) - keep)
                del self.tokens[keep:]
                self.boundaries = [b for b in self.boundaries if b <= keep]
        return torch.tensor(prompt[keep:], dtype=torch.long)

    def commit(self, tokens: torch.Tensor) -> int:
        """Append clean tokens `[C]` to the prefix. Returns forward passes spent."""
        pieces = self._pieces(tokens)
        for piece, segments in pieces:
            self._commit_piece(piece, segments)
        return len(pieces)

    # -- Denoiser ----------------------------------------------------------------------------
    def denoise(self, block: torch.Tensor, commit: torch.Tensor | None = None) -> tuple[torch.Tensor, int]:
        size, shift, passes = block.shape[0], self.props.logits_shift, 0
        if commit is not None and not self.fuse:
            passes, commit = self.commit(commit), None
        if commit is None:
            logits = self._forward(block, [(size, True)], list(range(size - shift)), keep=0)  # [L - shift, V]
            if shift:
                logits = torch.cat([self.last_logits[None], logits])  # [L, V]
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
        past, total = len(self.tokens), ids.shape[0]
        ids = ids.to(self.device)
        mask = segment_mask(segments, past, self.dtype, self.device)  # [1, 1, T, past + T]
        positions = torch.arange(past, past + total, device=self.device)[None]  # [1, T]
        split = self.split.folding(self.cache, keep) if self.split and keep < total else nullcontext()
        with split:
            out = self.model.base_model(input_ids=ids[None], attention_mask=self._mask_arg(mask),
                                        position_ids=positions, cache=self.cache, use_cache=True)
        drop_kv_tail(self.cache, total - keep)
        hidden = out.last_hidden_state[0, rows]  # [R, H]
        return self.head(hidden).float()  # [R, V]

    def _mask_arg(self, mask: torch.Tensor):
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
        pieces, start, group = [], 0, []
        for seg in flat:
            if group and sum(n for n, _ in group) + seg[0] > PREFILL_CHUNK:
                count = sum(n for n, _ in group)
                pieces.append((tokens[start:start + count], group))
                start, group = start + count, []
            group.append(seg)
        pieces.append((tokens[start:], group))
        return pieces

    def _commit_segments(self, count: int) -> list[Segment]:
        return commit_segments(len(self.tokens), count, self.props.block_size,
                               block_prefix=self.props.prefix_attention == "block",
                               absolute=self.props.block_alignment == "absolute")

    def _append(self, tokens: torch.Tensor, segments: list[Segment], last_logits: torch.Tensor | None) -> None:
        if self.props.prefix_attention == "block":  # causal: every position is a boundary
            for n, _ in segments:
                self.boundaries.append(self.boundaries[-1] + n)
        self.tokens.extend(tokens.tolist())
        if last_logits is not None:
            self.last_logits = last_logits
