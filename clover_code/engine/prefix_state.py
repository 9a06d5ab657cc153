"""One conversation's encoded prefix, and the cache operations on it.

A `PrefixState` is what a denoiser decodes against: the transformers cache (attention
keys/values, and for hybrids the linear layers' conv/recurrent states), the ids it holds,
its segment ends and, for hybrids, state checkpoints at earlier positions.

Attention keys/values are never written in place (`DynamicLayer.update` concatenates,
`crop` slices), so a cut or a forked state shares storage with its parent until its next
pass; `nbytes` counts each storage once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator

import torch

from clover_code.engine.checkpoints import Checkpoints
from clover_code.engine.linear_state import linear_layer_ids, restore


@dataclass
class PrefixState:
    cache: object  # transformers DynamicCache
    checkpoints: Checkpoints
    tokens: list[int] = field(default_factory=list)  # ids whose state the cache holds
    boundaries: list[int] = field(default_factory=lambda: [0])  # prefix lengths at segment ends
    last_logits: torch.Tensor | None = None  # [V] at the last prefix position (logits_shift=1)

    def tensors(self) -> Iterator[torch.Tensor]:
        for layer in self.cache.layers:
            if hasattr(layer, "recurrent_states"):
                yield from (t for t in (*layer.conv_states.values(), *layer.recurrent_states.values())
                            if t is not None)
            elif getattr(layer, "is_initialized", False):
                yield from (layer.keys, layer.values)
        yield from self.checkpoints.tensors()
        if self.last_logits is not None:
            yield self.last_logits


def new_state(text_config, checkpoints: Checkpoints) -> PrefixState:
    from transformers import DynamicCache

    return PrefixState(DynamicCache(config=text_config), checkpoints)


def nbytes(tensors: Iterable[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind `tensors` (views and shared storage count once)."""
    seen: dict[tuple, int] = {}
    for t in tensors:
        storage = t.untyped_storage()
        seen[(t.device, storage.data_ptr())] = storage.nbytes()
    return sum(seen.values())


def drop_kv_tail(cache, count: int) -> None:
    """Forget the last `count` positions of every attention layer (linear layers untouched)."""
    if count <= 0:
        return
    for layer in cache.layers:
        if not hasattr(layer, "recurrent_states") and getattr(layer, "is_initialized", False):
            layer.crop(-count)


def cut(state: PrefixState, keep: int) -> None:
    """Cut `state` back to its first `keep` tokens in place. A hybrid needs a checkpoint at
    `keep` (or `keep == 0`, which starts over)."""
    if keep == len(state.tokens):
        return
    ids = linear_layer_ids(state.cache)
    if keep == 0:
        state.cache.reset() if ids else drop_kv_tail(state.cache, len(state.tokens))
    else:
        drop_kv_tail(state.cache, len(state.tokens) - keep)
        if ids:
            restore(state.cache, state.checkpoints.at(keep), keep)
    state.checkpoints.drop_after(keep)
    del state.tokens[keep:]
    state.boundaries = [b for b in state.boundaries if b <= keep]


def fork(state: PrefixState, keep: int, text_config) -> PrefixState:
    """A new state holding `state`'s first `keep` tokens; `state` is left as it was. Keys and
    values are shared views; linear states come from the checkpoint at `keep`."""
    child = new_state(text_config, state.checkpoints.copy_until(keep))
    if keep == 0:
        return child
    for mine, theirs in zip(child.cache.layers, state.cache.layers):
        if not hasattr(theirs, "recurrent_states") and getattr(theirs, "is_initialized", False):
            keys, values = theirs.keys[..., :keep, :], theirs.values[..., :keep, :]  # [B, H, keep, D]
            mine.lazy_initialization(keys, values)
            mine.keys, mine.values = keys, values
    if linear_layer_ids(state.cache):
        restore(child.cache, state.checkpoints.at(keep), keep)
    child.tokens = state.tokens[:keep]
    child.boundaries = [b for b in state.boundaries if b <= keep]
    child.last_logits = state.last_logits if keep == len(state.tokens) else None
    return child
