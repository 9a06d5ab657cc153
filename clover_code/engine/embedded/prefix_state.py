"""One conversation's encoded prefix, and the cache operations on it.

A `PrefixState` is what a denoiser decodes against: the transformers cache (attention
keys/values, and for hybrids the linear layers' conv/recurrent states), the ids it holds,
its segment ends and, for hybrids, state checkpoints at earlier positions.

Attention keys/values are never written in place (`DynamicLayer.update` concatenates,
`crop` slices), so a cut or a forked state shares storage with its parent until its next
pass; `storage()` names each storage so that shared ones are counted once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeGuard

import torch

from clover_code.engine.embedded.linear_state import is_linear, linear_layer_ids, restore
from clover_code.engine.embedded.segments import grid_cut
from clover_code.engine.embedded.state_checkpoints import Checkpoints

if TYPE_CHECKING:
    from transformers import DynamicCache, PretrainedConfig
    from transformers.cache_utils import DynamicLayer

    from clover_code.engine.embedded.props import CheckpointProps


@dataclass
class PrefixState:
    cache: DynamicCache
    checkpoints: Checkpoints
    tokens: list[int] = field(default_factory=list)  # ids whose state the cache holds
    boundaries: list[int] = field(default_factory=lambda: [0])  # prefix lengths at segment ends
    last_logits: torch.Tensor | None = None  # [V] at the last prefix position (logits_shift=1)
    owner: str | None = None  # whose conversation it holds (ChatRequest.session), when a client says

    def storage(self) -> Iterator[tuple[object, int]]:
        """(key, bytes) of every storage this state holds; equal keys are one storage (a view,
        keys/values shared with a fork, a checkpoint shared with one)."""
        for layer in self.cache.layers:
            if is_linear(layer):
                tensors = [*layer.conv_states.values(), *layer.recurrent_states.values()]
            else:
                tensors = [layer.keys, layer.values] if kv_layer(layer) else []
            for t in tensors:
                if t is None:  # a state never set
                    continue
                storage = t.untyped_storage()
                yield (t.device, storage.data_ptr()), storage.nbytes()
        for point in self.checkpoints.points.values():
            yield id(point), point.nbytes
        if self.last_logits is not None:
            yield id(self.last_logits), self.last_logits.nbytes


def kv_layer(layer: object) -> TypeGuard[DynamicLayer]:
    """An attention layer's cache that holds keys and values (a linear layer's holds states)."""
    return not is_linear(layer) and bool(getattr(layer, "is_initialized", False))


def attention_layer(layer: object) -> TypeGuard[DynamicLayer]:
    """An attention layer's cache, keys and values held or not."""
    return not is_linear(layer)


def new_state(text_config: PretrainedConfig, checkpoints: Checkpoints) -> PrefixState:
    from transformers import DynamicCache

    return PrefixState(DynamicCache(config=text_config), checkpoints)


def storage_bytes(parts: Iterable[tuple[object, int]]) -> int:
    """Total bytes of `(key, bytes)` parts, each key counted once."""
    return sum(dict(parts).values())


def drop_kv_tail(cache: DynamicCache, count: int) -> None:
    """Forget the last `count` positions of every attention layer (linear layers untouched)."""
    if count <= 0:
        return
    for layer in cache.layers:
        if kv_layer(layer):
            layer.crop(-count)


def cut(state: PrefixState, keep: int) -> None:
    """Cut `state` back to its first `keep` tokens in place. A hybrid needs a checkpoint at
    `keep` (or `keep == 0`, which starts over)."""
    if keep == len(state.tokens):
        return
    ids = linear_layer_ids(state.cache)
    if keep == 0:
        if ids:
            state.cache.reset()  # type: ignore[no-untyped-call]  # transformers leaves Cache.reset unannotated
        else:
            drop_kv_tail(state.cache, len(state.tokens))
    else:
        drop_kv_tail(state.cache, len(state.tokens) - keep)
        if ids:
            restore(state.cache, state.checkpoints.at(keep), keep)
    state.checkpoints.drop_after(keep)
    del state.tokens[keep:]
    state.boundaries = [b for b in state.boundaries if b <= keep]
    state.last_logits = None  # a cut prefix always re-encodes at least one token, which sets it


def common_length(a: list[int], b: list[int], limit: int, chunk: int = 4096) -> int:
    """Length of the common prefix of `a` and `b`, at most `limit`: whole chunks compared as
    list slices (C speed; a 128K-token prompt is ~30 of them), then the differing chunk."""
    start = 0
    while start < limit and a[start:min(start + chunk, limit)] == b[start:min(start + chunk, limit)]:
        start += chunk
    end = min(start + chunk, limit)
    while start < end and a[start] == b[start]:
        start += 1
    return min(start, limit)


def usable_prefix(state: PrefixState, prompt: list[int], props: CheckpointProps, hybrid: bool) -> int:
    """How many leading tokens of `prompt` `state` can serve, exactly as a cold encoding would
    have them: at most all but the last prompt token (its logits start the first block), on
    the prompt's own block grid for a block-causal prefix, and for a hybrid cut back only to
    a checkpoint (or to 0)."""
    keep = common_length(state.tokens, prompt, min(len(state.tokens), len(prompt) - 1))
    if props.prefix_attention == "block":
        keep = grid_cut(state.boundaries, keep, props.block_size)
    if hybrid and keep < len(state.tokens):
        keep = state.checkpoints.best(keep)
    return keep


def fork(state: PrefixState, keep: int, text_config: PretrainedConfig) -> PrefixState:
    """A new state holding `state`'s first `keep` tokens; `state` is left as it was. Keys and
    values are shared views; linear states come from the checkpoint at `keep`."""
    child = new_state(text_config, state.checkpoints.copy_until(keep))
    if keep == 0:
        return child
    for mine, theirs in zip(child.cache.layers, state.cache.layers, strict=False):
        if kv_layer(theirs) and theirs.keys is not None and theirs.values is not None and attention_layer(mine):
            keys, values = theirs.keys[..., :keep, :], theirs.values[..., :keep, :]  # [B, H, keep, D]
            mine.lazy_initialization(keys, values)
            mine.keys, mine.values = keys, values
    if linear_layer_ids(state.cache):
        restore(child.cache, state.checkpoints.at(keep), keep)
    child.tokens = state.tokens[:keep]
    child.boundaries = [b for b in state.boundaries if b <= keep]
    child.last_logits = state.last_logits if keep == len(state.tokens) else None
    return child
