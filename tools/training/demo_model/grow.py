"""Deepen a trained checkpoint without changing what it computes (block expansion).

The demo model underfits its own training sessions (run Y: 77.8% exact on 40 of them), and
a bigger shape trained from scratch needs more hours than a CPU session has (run B, GPU). So
grow the trained one instead: after each chosen layer, insert a copy of it whose two output
projections (attention's o_proj, every expert's down_proj) are zero. A zeroed layer adds
nothing to the residual stream, so the grown model's logits equal the original's to the last
bit; training then starts from the original's skill, and the copies start from features that
mean something (their queries, keys, router and experts) instead of noise.
"""

from __future__ import annotations

import copy
import re

import torch

ZEROED = ("self_attn.o_proj.weight", "mlp.experts.down_proj")  # a layer's writes to the residual
LAYER_KEY = re.compile(r"^model\.layers\.(\d+)\.(.+)$")


def layer_plan(layers: int, after: list[int]) -> list[tuple[int, bool]]:
    """For each layer of the grown model: (the original layer it copies, whether it is new)."""
    bad = [i for i in after if not 0 <= i < layers]
    if bad:
        raise ValueError(f"no layer {bad[0]} to grow after: the model has layers 0 to {layers - 1}")
    plan = []
    for i in range(layers):
        plan.append((i, False))
        plan.extend((i, True) for _ in range(after.count(i)))
    return plan


def grown_state(state: dict, plan: list[tuple[int, bool]]) -> dict:
    """The state dict of the grown model: every original tensor under its new layer index,
    the inserted layers as copies of their originals with ZEROED outputs."""
    by_layer: dict[int, dict] = {}
    out = {}
    for key, tensor in state.items():
        match = LAYER_KEY.match(key)
        if match:
            by_layer.setdefault(int(match[1]), {})[match[2]] = tensor
        else:
            out[key] = tensor
    for new_index, (source, inserted) in enumerate(plan):
        for name, tensor in by_layer[source].items():
            # shared tensors are fine: load_state_dict copies them into the grown model
            zeroed = inserted and name in ZEROED
            out[f"model.layers.{new_index}.{name}"] = torch.zeros_like(tensor) if zeroed else tensor
    return out


def grow(model, after: list[int]):
    """A new model with len(after) more layers that computes exactly what `model` does."""
    from transformers import AutoModelForCausalLM

    if model.config.model_type != "qwen3_moe":
        raise ValueError(f"growing needs an attention-only qwen3_moe model, not {model.config.model_type}")
    plan = layer_plan(model.config.num_hidden_layers, after)
    config = copy.deepcopy(model.config)
    config.num_hidden_layers = len(plan)
    grown = AutoModelForCausalLM.from_config(config, dtype=model.dtype)
    grown.load_state_dict(grown_state(model.state_dict(), plan))
    return grown
