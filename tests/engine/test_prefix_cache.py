"""A cache per person: conversations that alternate through one denoiser each find their own
prefix again, decode exactly what a cold decode does, and stay within the memory budget."""

import pytest
import torch
from transformers import AutoModelForCausalLM

from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
from clover_code.engine.embedded.denoisers import ModelDenoiser, read_props

SYSTEM = [30 + i % 50 for i in range(120)]  # a system prompt every conversation shares
MARK = 5  # starts a message: hybrids checkpoint before it


@pytest.fixture(scope="module", params=["attention", "hybrid"])
def loaded(request):
    folder = request.getfixturevalue(f"tiny_{request.param}_ckpt")
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    return model, read_props(model.config), request.param


def decode(den, prompt: list[int], props) -> list[int]:
    opts = DecodeOptions(mask_id=props.mask_token_id, max_tokens=40)
    return [t for b in decode_blocks(den, den.reuse(prompt), opts) for t in b.tokens]


def person(n: int) -> list[int]:
    return SYSTEM + [MARK] + [100 + n * 7 + i % 5 for i in range(60)]


def denoiser(model, props, kind, **kw) -> ModelDenoiser:
    return ModelDenoiser(model, props, kind, turn_marks=frozenset({MARK}), **kw)


def test_alternating_conversations_reuse_their_own_prefix_and_equal_cold_decodes(loaded):
    model, props, kind = loaded
    den = denoiser(model, props, kind)
    prompts = {n: person(n) for n in range(3)}
    for turn in range(3):
        for n in range(3):
            got = decode(den, prompts[n], props)
            reuse = den.last_reuse
            assert got == decode(ModelDenoiser(model, props, kind), prompts[n], props), (turn, n)
            if turn:  # its own conversation, parked while the others spoke
                assert reuse.source == "parked" and reuse.reused > len(SYSTEM) + 60, (turn, n, reuse)
            elif n:  # a new person: forked from the shared system prompt, the others kept
                assert reuse.source == "cut" and reuse.reused == len(SYSTEM) + (kind == "attention")
            prompts[n] = prompts[n] + got + [200 + turn, 201, 202]
    assert den.report()["conversations"] == 3


def test_the_budget_holds_and_evicts_the_least_recently_used(loaded):
    model, props, kind = loaded
    one = denoiser(model, props, kind)
    decode(one, person(0), props)
    size = one.report()["prefix_bytes"]
    den = denoiser(model, props, kind, prefix_cache_bytes=int(size * 2.5))
    for n in range(4):
        decode(den, person(n), props)
        report = den.report()
        assert report["cache_bytes"] <= report["cache_budget_bytes"]
    assert report["conversations"] < 4
    decode(den, person(3) + [5, 6], props)  # the latest is still there
    assert den.last_reuse.source in ("parked", "live", "cut") and den.last_reuse.reused > len(SYSTEM)
    decode(den, person(0) + [5, 6], props)  # the first went out: only the shared system prompt is left
    assert den.last_reuse.reused < len(person(0))


def test_without_a_budget_there_is_one_conversation(loaded):
    model, props, kind = loaded
    den = denoiser(model, props, kind, prefix_cache_bytes=0)
    decode(den, person(0), props)
    decode(den, person(1), props)
    decode(den, person(0) + [1, 2], props)
    assert den.last_reuse.reused < len(person(0)) and den.report()["conversations"] == 1
    assert len(den.tokens) == len(person(0)) + 2 + 32  # all blocks but the last are committed
    assert den.last_reuse.reused == len(SYSTEM) + (kind == "attention")
    assert torch.equal(den.reuse(den.tokens + [9]), torch.tensor([9]))


def test_each_state_is_kept_for_the_session_that_made_it(loaded):
    model, props, kind = loaded
    den = denoiser(model, props, kind)
    opts = DecodeOptions(mask_id=props.mask_token_id, max_tokens=40)
    for n, who in ((0, "a"), (1, "b")):
        list(decode_blocks(den, den.reuse(person(n), owner=who), opts))
    edited = SYSTEM + [MARK, 300, 301, 302]  # a's first message edited: both states serve as much of it
    got = [t for b in decode_blocks(den, den.reuse(edited, owner="a"), opts) for t in b.tokens]
    assert got == decode(ModelDenoiser(model, props, kind), edited, props)
    assert den.state.owner == "a" and {s.owner for s in den.pool.parked} == {"a", "b"}
    assert den.last_reuse.source == "cut" and den.last_reuse.reused == len(SYSTEM) + (kind == "attention")
