"""An independent, cache-free reference for the engine: every step re-runs the whole
sequence (prompt, decoded blocks, the current block) from scratch, with the segmentation
written out from the checkpoint properties, not taken from the engine:

- causal prefix: one causal run; block prefix: the prompt in chunks `[0, B), [B, 2B), ...`
  (both alignments), then each decoded block a segment of its own;
- the current block sees itself both ways; Gated DeltaNet layers are causal (no mask);
- logits_shift 1: position i of a block is predicted at position i - 1.

`reference_decode` is a greedy decoder of its own (threshold rule, single most confident
position when none passes, mask never committed, stop tokens end the request).
"""

from __future__ import annotations

import torch

Span = tuple[int, bool]  # (length, both ways)


def prompt_spans(prompt_len: int, block_size: int, block_prefix: bool) -> list[Span]:
    if not block_prefix:
        return [(prompt_len, False)]
    return [(min(block_size, prompt_len - s), True) for s in range(0, prompt_len, block_size)]


def additive_mask(spans: list[Span]) -> torch.Tensor:
    """`[1, 1, T, T]`: 0 where query i may see key j, the dtype's minimum elsewhere."""
    owner = torch.tensor([n for n, (length, _) in enumerate(spans) for _ in range(length)])  # [T]
    both = torch.tensor([two_way for length, two_way in spans for _ in range(length)])  # [T]
    pos = torch.arange(owner.shape[0])
    earlier = owner[None, :] < owner[:, None]  # [T, T]: key j in an earlier span than query i
    inside = (owner[None, :] == owner[:, None]) & (both[:, None] | (pos[None, :] <= pos[:, None]))
    mask = torch.zeros(earlier.shape).masked_fill(~(earlier | inside), torch.finfo(torch.float32).min)
    return mask[None, None]


class ReferenceDenoiser:
    """Cache-free `Denoiser`: the first commit is the prompt, each later one a decoded block."""

    def __init__(self, model, props):
        self.model, self.props = model, props
        self.tokens: list[int] = []
        self.spans: list[Span] = []
        self.layer_types = getattr(model.config.get_text_config(), "layer_types", None)

    @torch.inference_mode()
    def logits(self, block: torch.Tensor) -> torch.Tensor:
        ids = torch.tensor(self.tokens + block.tolist())[None]  # [1, P + L]
        mask = additive_mask(self.spans + [(block.shape[0], True)])
        if self.layer_types:
            mask = {t: None if t == "linear_attention" else mask for t in set(self.layer_types)}
        hidden = self.model.base_model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
        p, shift = len(self.tokens), self.props.logits_shift
        return self.model.get_output_embeddings()(hidden[0, p - shift: p - shift + block.shape[0]]).float()

    def denoise(self, block: torch.Tensor, commit: torch.Tensor | None = None):
        if commit is not None:
            if self.tokens:
                self.spans.append((commit.shape[0], self.props.prefix_attention == "block"))
            else:
                self.spans = prompt_spans(commit.shape[0], self.props.block_size,
                                          self.props.prefix_attention == "block")
            self.tokens = self.tokens + commit.tolist()
        return self.logits(block), 1


def reference_decode(model, props, prompt: list[int], max_tokens: int, stop_ids=frozenset(),
                     threshold: float = 0.95) -> list[tuple[int, ...]]:
    """Greedy blocks for `prompt`, decoded without any cache."""
    den, size, blocks, produced = ReferenceDenoiser(model, props), props.block_size, [], 0
    first = size - len(prompt) % size if props.block_alignment == "absolute" and len(prompt) % size else size
    pending = torch.tensor(prompt)
    while produced < max_tokens:
        block, done = _one_block(den, pending, first if not blocks else size, max_tokens - produced,
                                 props.mask_token_id, stop_ids, threshold)
        blocks.append(block)
        produced += len(block)
        if done:
            break
        pending = torch.tensor(block)
    return blocks


def _one_block(den, pending, size, budget, mask_id, stop_ids, threshold):
    block, resolved = [mask_id] * size, [False] * size
    limit = min(size, budget)
    while not all(resolved[:limit]):
        logits, _ = den.denoise(torch.tensor(block), pending)
        pending = None
        logits = logits.clone()
        logits[:, mask_id] = float("-inf")
        confidence, tokens = torch.softmax(logits, -1).max(-1)
        active = [i for i in range(limit) if not resolved[i]]
        chosen = [i for i in active if confidence[i] >= threshold] or [max(active, key=lambda i: confidence[i])]
        for i in chosen:
            block[i], resolved[i] = int(tokens[i]), True
        stops = [i for i in range(limit) if resolved[i] and block[i] in stop_ids]
        limit = stops[0] + 1 if stops else limit
    return tuple(block[:limit]), block[limit - 1] in stop_ids
