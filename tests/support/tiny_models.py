"""Tiny models built in memory, and random blocks to denoise (test_denoisers, test_fused_hybrid).
Checkpoints on disk come from tools.training.make_tiny_model."""

from __future__ import annotations

import torch

BLOCK = 32


def random_block(gen: torch.Generator, vocab: int, mask: int, masked: float, size: int = BLOCK) -> torch.Tensor:
    ids = torch.randint(0, 256, (size,), generator=gen)
    return torch.where(torch.rand(size, generator=gen) < masked, torch.full_like(ids, mask), ids)


def tiny_config(model_type: str):
    """Tiny configs of the other supported families (MoE, Qwen3-Next, Llama), built in memory."""
    from transformers import AutoConfig

    common = dict(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, head_dim=16)
    linear = dict(linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16,
                  linear_num_key_heads=2, linear_num_value_heads=4)
    moe = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
    extra = {"llama": {}, "qwen3_moe": moe,
             "qwen3_next": {**linear, **moe, "shared_expert_intermediate_size": 32},
             "qwen3_5_moe_text": {**linear, **moe, "shared_expert_intermediate_size": 32}}[model_type]
    return AutoConfig.for_model(model_type, **common, **extra)
