"""The recurrent state of a hybrid's linear (Gated DeltaNet) layers: capture, restore, and
passes that fold only a prefix of their tokens into it.

A linear layer folds every token it sees into a conv state (the last few projected inputs)
and a recurrent state (`[B, H, Dk, Dv]`), in place; `crop` cannot take a token back out.
`LinearSplit.folding(cache, keep, cuts)` makes the next forward pass run each linear layer
in pieces: tokens `[0, keep)` advance the state (it is captured, cloned, at every cut on
the way), tokens `[keep, T)` run from the state at `keep` and are then forgotten. The rule
is causal, so each piece is exactly the layer's own computation on those tokens; the
attention layers and the MLPs still see the whole pass at once. That is how a hybrid
commits block k and denoises block k+1 in ONE forward pass.

Cost: a linear layer's own projections run once per piece, so their weights (about 1B of
Clover's 35B) are read twice per fused pass instead of once; a chunked gated-delta kernel
that hands back the state at the block boundary would read them once. On the tiny CPU hybrid
a fused pass costs ~1.5x a denoise-only one, and a reply decodes ~1.3x faster fused
(tools/bench/bench_engine.py, case fusion).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard

import torch

if TYPE_CHECKING:
    from transformers import Cache
    from transformers.cache_utils import LinearAttentionCacheLayerMixin

StateDict = dict[int, torch.Tensor | None]  # state index -> its tensor (None: never set)
Forward = Callable[..., torch.Tensor]  # a linear-attention module's forward


@dataclass(frozen=True)
class LinearState:
    """Every linear layer's conv and recurrent states at one prefix position (clones)."""

    layers: dict[int, tuple[StateDict, StateDict]]  # layer index -> (conv states, recurrent states)

    def tensors(self) -> Iterator[torch.Tensor]:
        for conv, recurrent in self.layers.values():
            yield from (t for t in (*conv.values(), *recurrent.values()) if t is not None)


def is_linear(layer: object) -> TypeGuard[LinearAttentionCacheLayerMixin]:
    """A linear layer's cache (conv and recurrent states), not an attention layer's."""
    return hasattr(layer, "recurrent_states")


def linear_layer(cache: Cache, i: int) -> LinearAttentionCacheLayerMixin:
    layer = cache.layers[i]
    assert is_linear(layer), f"layer {i} is not a linear layer"
    return layer


def linear_layer_ids(cache: Cache) -> list[int]:
    return [i for i, layer in enumerate(cache.layers) if is_linear(layer)]


def capture(cache: Cache, ids: list[int] | None = None) -> LinearState:
    """Clones of the linear layers' states, as they are now."""
    ids = linear_layer_ids(cache) if ids is None else ids
    layers = {i: linear_layer(cache, i) for i in ids}
    return LinearState({i: (_clones(layer.conv_states), _clones(layer.recurrent_states))
                        for i, layer in layers.items()})


def restore(cache: Cache, state: LinearState, position: int) -> None:
    """Put `state` (cloned again: it stays as it was) back into the cache's linear layers."""
    for i, (conv, recurrent) in state.layers.items():
        layer = linear_layer(cache, i)
        layer.conv_states.update(_clones(conv))
        layer.recurrent_states.update(_clones(recurrent))
        for k, c in conv.items():
            layer.is_conv_states_initialized[k] = c is not None
            layer.is_recurrent_states_initialized[k] = recurrent[k] is not None
            layer.has_previous_state[k] = c is not None
            if c is not None:  # what lazy initialisation sets, for a cache that never ran a pass
                layer.conv_kernel_size[k] = c.shape[-1]
                # transformers leaves device and dtype unannotated (`= None`): mypy takes them for None.
                layer.device, layer.dtype = c.device, c.dtype  # type: ignore[assignment]
        device = layer.device or layer.cumulative_length_linear.device
        layer.cumulative_length_linear = torch.tensor(position, device=device)


class LinearSplit:
    """Runs a model's linear-attention modules in pieces for one forward pass at a time."""

    def __init__(self, model: torch.nn.Module):
        self.modules = [attn for m in model.modules()
                        if isinstance(attn := getattr(m, "linear_attn", None), torch.nn.Module)]

    @contextmanager
    def folding(self, cache: Cache, keep: int, cuts: tuple[int, ...] = ()) -> Iterator[dict[int, LinearState]]:
        """Within the block, the next pass folds only its first `keep` tokens into the linear
        states; the dict it yields fills with the states captured after each of `cuts`
        (positions `0..keep` within the pass) once the pass has run."""
        found: dict[int, dict[int, tuple[StateDict, StateDict]]] = {c: {} for c in cuts}
        saved = [m.__dict__.get("forward") for m in self.modules]
        for module in self.modules:
            layer_idx = module.layer_idx
            assert isinstance(layer_idx, int)
            # An instance attribute shadows the class's forward for this pass (deleted after it).
            setattr(module, "forward", _split_forward(module.forward, layer_idx, cache, keep, cuts, found))  # noqa: B010
        captured: dict[int, LinearState] = {}
        try:
            yield captured
        finally:
            for module, before in zip(self.modules, saved, strict=True):
                if before is None:
                    del module.forward
                else:
                    setattr(module, "forward", before)  # noqa: B010  (see above)
        captured.update({c: LinearState(layers) for c, layers in found.items()})


def _split_forward(original: Forward, layer_idx: int, cache: Cache, keep: int, cuts: tuple[int, ...],
                   found: dict[int, dict[int, tuple[StateDict, StateDict]]]) -> Forward:
    def forward(hidden_states: torch.Tensor, **kwargs: object) -> torch.Tensor:  # [B, T, H] -> [B, T, H]
        layer = linear_layer(cache, layer_idx)
        outs: list[torch.Tensor] = []
        start = 0
        for edge in sorted({c for c in cuts if c <= keep} | {keep}):
            if edge > start:
                outs.append(original(hidden_states=hidden_states[:, start:edge], **kwargs))
                start = edge
            if edge in found:
                found[edge][layer_idx] = (_clones(layer.conv_states), _clones(layer.recurrent_states))
        if keep < hidden_states.shape[1]:
            with _scratch(layer):  # the tail writes into throwaway copies
                outs.append(original(hidden_states=hidden_states[:, keep:], **kwargs))
        return outs[0] if len(outs) == 1 else torch.cat(outs, dim=1)

    return forward


@contextmanager
def _scratch(layer: LinearAttentionCacheLayerMixin) -> Iterator[None]:
    """Let a pass write the layer's states in place, then put the originals back."""
    states = (dict(layer.conv_states), dict(layer.recurrent_states))
    flags = (dict(layer.is_conv_states_initialized), dict(layer.is_recurrent_states_initialized),
             dict(layer.has_previous_state))
    length = layer.cumulative_length_linear
    layer.conv_states.update(_clones(layer.conv_states))
    layer.recurrent_states.update(_clones(layer.recurrent_states))
    layer.cumulative_length_linear = layer.cumulative_length_linear.clone()
    try:
        yield
    finally:
        layer.conv_states.update(states[0])
        layer.recurrent_states.update(states[1])
        for target, before in zip((layer.is_conv_states_initialized, layer.is_recurrent_states_initialized,
                                   layer.has_previous_state), flags, strict=True):
            target.update(before)
        layer.cumulative_length_linear = length


def _clones(states: StateDict) -> StateDict:
    return {k: None if t is None else t.clone() for k, t in states.items()}
