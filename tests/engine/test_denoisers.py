"""Cached denoising equals full recomputation, for both adapter kinds, over many blocks."""

import dataclasses

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from clover_code.engine import EngineError
from clover_code.engine.embedded import denoisers
from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
from clover_code.engine.embedded.denoisers import ModelDenoiser, checkpoint_kind, read_props
from tests.support.reference import ReferenceDenoiser
from tests.support.tiny_models import BLOCK, random_block, tiny_config


@pytest.fixture(scope="module", params=["attention", "hybrid"])
def loaded(request):
    folder = request.getfixturevalue(f"tiny_{request.param}_ckpt")
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    return model, read_props(model.config), request.param


@pytest.fixture(scope="module", params=["attention", "hybrid"])
def plain(request, tmp_path_factory):
    """Unpeaked checkpoints: logits at their natural scale, so 1e-5 is a tight bound."""
    from tools.training.make_tiny_model import make_tiny_model

    folder = make_tiny_model(tmp_path_factory.mktemp("plain"), request.param)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    return model, read_props(model.config), request.param


def variants(props):
    yield props
    yield dataclasses.replace(props, logits_shift=1, prefix_attention="block", block_alignment="absolute")


def test_cached_denoise_matches_full_recomputation_over_many_blocks(plain, monkeypatch):
    model, base_props, kind = plain
    monkeypatch.setattr(denoisers, "PREFILL_CHUNK", 20)  # the 45-token prompt prefills in 3 passes
    for props in variants(base_props):
        cached, full = ModelDenoiser(model, props, kind), ReferenceDenoiser(model, props)
        gen = torch.Generator().manual_seed(0)
        pending = torch.randint(0, 256, (45,), generator=gen)  # prompt
        size = 64 - 45 if props.block_alignment == "absolute" else BLOCK  # the first block reaches the grid
        worst, total = 0.0, 45
        for _ in range(6):
            for step in range(2):  # the first step carries the commit of the previous block
                block = random_block(gen, model.config.vocab_size, props.mask_token_id, 0.7 - 0.3 * step, size)
                got, _ = cached.denoise(block, pending)
                want, _ = full.denoise(block, pending)
                worst = max(worst, (got - want).abs().max().item())
                pending = None
            pending = torch.randint(0, 256, (size,), generator=gen)
            total, size = total + size, BLOCK
        assert worst < 1e-5, (kind, props, worst)
        assert len(cached.tokens) == len(full.tokens) == total - BLOCK


def test_greedy_output_is_identical_with_and_without_cache(loaded):
    model, props, kind = loaded
    opts = DecodeOptions(mask_id=props.mask_token_id, stop_ids=frozenset(), max_tokens=4 * BLOCK)
    prompt = torch.arange(10, 60)
    runs = []
    for den in (ModelDenoiser(model, props, kind), ReferenceDenoiser(model, props)):
        runs.append([b.tokens for b in decode_blocks(den, prompt, opts)])
    assert runs[0] == runs[1]
    assert sum(len(t) for t in runs[0]) == 4 * BLOCK


def test_fused_commit_costs_no_extra_pass_for_either_kind(loaded):
    model, props, kind = loaded
    block = torch.full((BLOCK,), props.mask_token_id)
    for fuse, passes in ((True, (1, 1)), (False, (2, 1))):
        den = ModelDenoiser(model, props, kind, fuse=fuse)
        _, first = den.denoise(block, torch.arange(5, 20))
        _, later = den.denoise(block)
        assert (first, later) == passes


def test_prefix_reuse_keeps_the_common_prefix(loaded):
    model, props, kind = loaded
    den = ModelDenoiser(model, props, kind)
    den.commit(torch.arange(5, 40))
    rest = den.reuse(list(range(5, 40)) + [7, 8, 9])
    assert rest.tolist() == [7, 8, 9] and len(den.tokens) == 35
    rest = den.reuse(list(range(5, 20)) + [1, 2])  # diverges inside: attention crops, hybrid restarts
    assert len(den.tokens) == (15 if kind == "attention" else 0)
    assert rest.tolist() == list(range(5, 20))[len(den.tokens):] + [1, 2]


def test_unsupported_model_type_names_the_supported_ones():
    with pytest.raises(EngineError, match=r"unsupported model type 'gpt2'.*qwen3_5_moe.*qwen3_next"):
        checkpoint_kind("gpt2")


def test_props_come_from_config_with_defaults(tiny_attention_ckpt):
    config = AutoConfig.from_pretrained(tiny_attention_ckpt)
    props = read_props(config)
    assert (props.block_size, props.block_alignment, props.logits_shift, props.prefix_attention) == \
        (32, "prompt", 0, "causal")
    config.block_alignment = "diagonal"
    with pytest.raises(EngineError, match="block_alignment"):
        read_props(config)


@pytest.mark.parametrize("model_type", ["llama", "qwen3_moe", "qwen3_next", "qwen3_5_moe_text"])
def test_other_supported_families_match_full_recomputation(model_type):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(tiny_config(model_type)).eval()
    model.config.mask_token_id = 299
    props = read_props(model.config)
    cached, full = ModelDenoiser(model, props, checkpoint_kind(model_type)), ReferenceDenoiser(model, props)
    gen = torch.Generator().manual_seed(1)
    pending = torch.randint(0, 256, (40,), generator=gen)
    for _ in range(2):
        for _step in range(2):
            block = random_block(gen, 300, props.mask_token_id, 0.5)
            got, _ = cached.denoise(block, pending)
            want, _ = full.denoise(block, pending)
            assert (got - want).abs().max().item() < 1e-5
            pending = None
        pending = torch.randint(0, 256, (BLOCK,), generator=gen)
