"""Adapters from a transformers causal-LM checkpoint to the block-diffusion `Denoiser`.

`denoise(block, commit)` returns logits for every position of a (partly masked) block
over the committed prefix, which it leaves as it was; `commit`, when given, joins the
prefix first. Two kinds:

- attention-only models (qwen3, qwen3_moe, qwen2, llama, mistral): the prefix lives in a
  KV cache; a denoise step appends the block's keys/values and crops them off again.
  Committing block k and the first step of block k+1 share ONE forward pass
  (`[clean block k | masked block k+1]`, the masked part sees the clean part, not the
  other way round), so a block that resolves in one step costs one pass.
- Gated DeltaNet hybrids (qwen3_5, qwen3_5_moe, qwen3_next): linear layers fold every
  token into a recurrent state that `crop` cannot roll back, so a denoise step
  snapshots the conv/recurrent states and the attention keys/values and restores them
  afterwards; committing is its own forward pass. DeltaNet layers stay causal inside
  a block; only the attention layers see the block both ways.

Properties of a checkpoint, read from its config (the text config for multimodal
ones), with these defaults when absent:

| config key          | meaning                                                        | default  |
|---------------------|----------------------------------------------------------------|----------|
| `mask_token_id`     | the mask token; else the tokenizer's `mask_token`              | required |
| `block_size`        | tokens per block                                               | 32       |
| `block_alignment`   | `"prompt"`: blocks start at the prompt's end; `"absolute"`: at multiples of the block size (the first block is shortened to reach one) | `"prompt"` |
| `logits_shift`      | 0: logits at position i predict token i (LLaDA/SDAR style); 1: they predict token i+1 (Dream/Fast-dLLM style; the first position of a block is predicted by the last committed token) | 0 |
| `prefix_attention`  | `"causal"`: committed tokens are encoded causally; `"block"`: tokens of one committed block see each other both ways (LLaDA2/SDAR training) | `"causal"` |

With `prefix_attention="block"` the prompt is encoded in block-size chunks from its start
and each decoded block is a segment of its own (segments.py); `block_size` is the size the
engine decodes with (a `--block-size` override included), so chunks and blocks agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from clover_code.engine import DEFAULT_BLOCK_SIZE, EngineError
from clover_code.engine.segments import Segment, commit_segments, grid_cut, segment_mask

ATTENTION_TYPES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe")
HYBRID_TYPES = ("qwen3_5", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_5_text", "qwen3_next")
SUPPORTED_TYPES = ATTENTION_TYPES + HYBRID_TYPES

PREFILL_CHUNK = 1024  # tokens per prefill pass: bounds the additive mask to [chunk, past + chunk]


@dataclass(frozen=True)
class CheckpointProps:
    mask_token_id: int
    block_size: int = DEFAULT_BLOCK_SIZE
    block_alignment: str = "prompt"  # "prompt" | "absolute"
    logits_shift: int = 0  # 0 | 1
    prefix_attention: str = "causal"  # "causal" | "block"


def checkpoint_kind(model_type: str) -> str:
    """"attention" or "hybrid"; EngineError naming the supported types otherwise."""
    if model_type in ATTENTION_TYPES:
        return "attention"
    if model_type in HYBRID_TYPES:
        return "hybrid"
    raise EngineError(f"unsupported model type {model_type!r}; supported: {', '.join(SUPPORTED_TYPES)}")


def read_props(config, tokenizer=None) -> CheckpointProps:
    """The block-diffusion properties of a checkpoint, with the documented defaults."""
    def get(key, default=None):
        for cfg in (config, config.get_text_config()):
            value = getattr(cfg, key, None)
            if value is not None:
                return value
        return default

    mask = get("mask_token_id")
    if mask is None and tokenizer is not None:
        mask = tokenizer.mask_token_id
    if mask is None:
        raise EngineError("the checkpoint names no mask token: set `mask_token_id` in config.json "
                          "or a `mask_token` in the tokenizer")
    props = CheckpointProps(int(mask), int(get("block_size", DEFAULT_BLOCK_SIZE)),
                            str(get("block_alignment", "prompt")), int(get("logits_shift", 0)),
                            str(get("prefix_attention", "causal")))
    if props.block_alignment not in ("prompt", "absolute"):
        raise EngineError(f"config block_alignment must be 'prompt' or 'absolute', not {props.block_alignment!r}")
    if props.logits_shift not in (0, 1):
        raise EngineError(f"config logits_shift must be 0 or 1, not {props.logits_shift!r}")
    if props.prefix_attention not in ("causal", "block"):
        raise EngineError(f"config prefix_attention must be 'causal' or 'block', not {props.prefix_attention!r}")
    return props


class ModelDenoiser:
    """A transformers model with its prefix state; see the module docstring."""

    def __init__(self, model, props: CheckpointProps, kind: str):
        self.model, self.props, self.kind = model, props, kind
        self.fuse = kind == "attention"
        self.text_config = model.config.get_text_config()
        self.head = model.get_output_embeddings()
        self.device = next(model.parameters()).device
        self.dtype = next(model.parameters()).dtype
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
                self.cache.crop(keep - len(self.tokens))
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
        size, shift = block.shape[0], self.props.logits_shift
        if commit is not None and self.fuse:
            *head, (piece, segments) = self._pieces(commit)
            for earlier in head:  # a long prompt: prefill in bounded chunks, fuse only the last
                self._commit_piece(*earlier)
            c = piece.shape[0]
            rows = list(range(c - shift, c + size - shift))
            logits = self._forward(torch.cat([piece, block]), segments + [(size, True)], rows)  # [L, V]
            self.cache.crop(-size)
            self._append(piece, segments, logits[0] if shift else None)
            return logits, len(head) + 1
        passes = self.commit(commit) if commit is not None else 0
        snapshot = self._snapshot()
        logits = self._forward(block, [(size, True)], list(range(size - shift)))  # [L - shift, V]
        self._restore(snapshot)
        if shift:
            logits = torch.cat([self.last_logits[None], logits])  # [L, V]
        return logits, passes + 1

    # -- internals ---------------------------------------------------------------------------
    @torch.inference_mode()
    def _forward(self, ids: torch.Tensor, segments: list[Segment], rows: list[int]) -> torch.Tensor:
        """Run `ids` `[T]` after the cached prefix; logits `[R, V]` of `rows` (fp32, on the model's device)."""
        past = len(self.tokens)
        ids = ids.to(self.device)
        mask = segment_mask(segments, past, self.dtype, self.device)  # [1, 1, T, past + T]
        positions = torch.arange(past, past + ids.shape[0], device=self.device)[None]  # [1, T]
        out = self.model.base_model(input_ids=ids[None], attention_mask=self._mask_arg(mask),
                                    position_ids=positions, cache=self.cache, use_cache=True)
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
        logits = self._forward(piece, segments, rows)
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

    def _snapshot(self) -> list:
        """What a forward pass overwrites: linear-layer states (cloned) and attention keys/values."""
        saved = []
        for layer in self.cache.layers:
            if hasattr(layer, "recurrent_states"):
                saved.append(("linear", {i: _clone(s) for i, s in layer.conv_states.items()},
                              {i: _clone(s) for i, s in layer.recurrent_states.items()},
                              dict(layer.has_previous_state)))
            else:
                saved.append(("attention", layer.keys, layer.values, layer.is_initialized))
        return saved

    def _restore(self, saved: list) -> None:
        for layer, state in zip(self.cache.layers, saved):
            if state[0] == "linear":
                _, conv, recurrent, previous = state
                layer.conv_states.update(conv)
                layer.recurrent_states.update(recurrent)
                layer.has_previous_state.update(previous)
                for i in conv:
                    layer.is_conv_states_initialized[i] = conv[i] is not None
                    layer.is_recurrent_states_initialized[i] = recurrent[i] is not None
            else:
                _, layer.keys, layer.values, layer.is_initialized = state


def _clone(t: torch.Tensor | None) -> torch.Tensor | None:
    return None if t is None else t.clone()
