"""Fused commit on Gated DeltaNet hybrids: one pass over [block k clean | block k+1 masked]
gives the logits of the unfused path (a commit pass, then a denoise pass), advances the
linear states through block k only, and spends one pass per denoise step."""

import dataclasses

import pytest
import torch
from transformers import AutoModelForCausalLM

from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
from clover_code.engine.embedded.denoisers import ModelDenoiser, checkpoint_kind, read_props
from tests.support.reference import ReferenceDenoiser, reference_decode
from tests.support.tiny_models import random_block, tiny_config

SHAPES = [("prompt", 0), ("prompt", 1), ("absolute", 0), ("absolute", 1)]


def hybrids():
    """Unpeaked tiny hybrids of the three families (logits at natural scale: 1e-5 is tight)."""
    from tools.training.make_tiny_model import build_config

    torch.manual_seed(0)
    yield "qwen3_5_text", AutoModelForCausalLM.from_config(
        build_config("hybrid", 320, layers=4, hidden=64, ids={"<|im_end|>": 1, "<|endoftext|>": 0, "<|mask|>": 319}))
    for model_type in ("qwen3_next", "qwen3_5_moe_text"):
        model = AutoModelForCausalLM.from_config(tiny_config(model_type))
        model.config.mask_token_id = 299
        yield model_type, model


@pytest.fixture(scope="module", params=list(range(3)), ids=["qwen3_5", "qwen3_next", "qwen3_5_moe"])
def hybrid(request):
    model_type, model = list(hybrids())[request.param]
    return model.eval(), read_props(model.config), checkpoint_kind(model_type)


@pytest.mark.parametrize("alignment,shift", SHAPES)
def test_fused_logits_match_the_unfused_path_and_the_reference(hybrid, alignment, shift):
    model, base, kind = hybrid
    props = dataclasses.replace(base, block_alignment=alignment, logits_shift=shift)
    fused, unfused = ModelDenoiser(model, props, kind), ModelDenoiser(model, props, kind, fuse=False)
    ref = ReferenceDenoiser(model, props)
    gen = torch.Generator().manual_seed(3)
    pending = torch.randint(0, 256, (45,), generator=gen)
    size = 64 - 45 if alignment == "absolute" else 32
    worst_unfused = worst_ref = 0.0
    for _ in range(4):
        for step in range(2):
            block = random_block(gen, 300, props.mask_token_id, 0.8 - 0.4 * step, size)
            (a, pa), (b, pb), (c, _) = fused.denoise(block, pending), unfused.denoise(block, pending), \
                ref.denoise(block, pending)
            assert (pa, pb) == (1, 1 if pending is None else 2)
            worst_unfused = max(worst_unfused, (a - b).abs().max().item())
            worst_ref = max(worst_ref, (a - c).abs().max().item())
            pending = None
        pending, size = torch.randint(0, 256, (size,), generator=gen), 32
    assert worst_unfused < 1e-5 and worst_ref < 1e-5, (worst_unfused, worst_ref)
    assert fused.tokens == unfused.tokens


@pytest.mark.parametrize("alignment,shift", SHAPES)
def test_fused_greedy_ids_equal_unfused_and_reference_with_one_pass_per_step(tiny_hybrid_ckpt, alignment, shift):
    model = AutoModelForCausalLM.from_pretrained(tiny_hybrid_ckpt).eval()
    props = dataclasses.replace(read_props(model.config), block_alignment=alignment, logits_shift=shift)
    prompt = list(range(40, 90))
    first = 64 - 50 if alignment == "absolute" else None
    opts = DecodeOptions(mask_id=props.mask_token_id, max_tokens=100, first_block_size=first)
    runs = {}
    for fuse in (True, False):
        steps: list = []
        den = ModelDenoiser(model, props, "hybrid", fuse=fuse)
        blocks = list(decode_blocks(den, torch.tensor(prompt), opts, on_step=steps.append))
        per_block = [sum(1 for s in steps if s.block_index == b.index) for b in blocks]
        runs[fuse] = ([b.tokens for b in blocks], [b.steps for b in blocks], per_block)
    ids, passes, steps = runs[True]
    assert ids == runs[False][0] == reference_decode(model, props, prompt, 100)
    assert passes == steps  # one forward pass per denoise step, as for attention models
    assert runs[False][1] == [s + 1 for s in runs[False][2]]  # unfused: a commit pass per block
