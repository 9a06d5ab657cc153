"""Recurrent-state checkpoints: a hybrid whose new prompt leaves the cached tokens cuts back
to the nearest checkpoint instead of to zero, and decodes exactly what a cold decode does."""

import dataclasses
import itertools

import pytest
import torch
from transformers import AutoModelForCausalLM

from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
from clover_code.engine.embedded.denoisers import ModelDenoiser, read_props
from clover_code.engine.embedded.linear_state import LinearState
from clover_code.engine.embedded.state_checkpoints import Checkpoints
from tests.support.reference import reference_decode

PROPS = [("causal", "prompt", 0), ("causal", "absolute", 1), ("block", "prompt", 0), ("block", "absolute", 1)]


@pytest.fixture(scope="module")
def hybrid(tiny_hybrid_ckpt):
    model = AutoModelForCausalLM.from_pretrained(tiny_hybrid_ckpt).eval()
    return model, read_props(model.config)


def decode(den, prompt: list[int], props, max_tokens: int = 40) -> list[int]:
    pending = den.reuse(prompt)
    first = -len(prompt) % props.block_size if props.block_alignment == "absolute" else 0
    opts = DecodeOptions(mask_id=props.mask_token_id, block_size=props.block_size, first_block_size=first or None,
                         max_tokens=max_tokens)
    return [t for b in decode_blocks(den, pending, opts) for t in b.tokens]


def cold(model, props, prompt: list[int], max_tokens: int = 40) -> list[int]:
    return decode(ModelDenoiser(model, props, "hybrid"), prompt, props, max_tokens)


@pytest.mark.parametrize("config", PROPS, ids=["-".join(map(str, c)) for c in PROPS])
def test_rollback_to_a_checkpoint_decodes_what_a_cold_decode_does(hybrid, config):
    model, base = hybrid
    attention, alignment, shift = config
    props = dataclasses.replace(base, prefix_attention=attention, block_alignment=alignment, logits_shift=shift)
    den = ModelDenoiser(model, props, "hybrid")
    prompt = [40 + i % 100 for i in range(300)]  # checkpointed at 256 on the way
    reply = decode(den, prompt, props, 100)
    history = prompt + reply
    cases = {
        "retry": prompt,  # the same turn again
        "edited reply": history[:350] + [7, 8, 9] + list(range(60, 80)),  # the reply re-rendered differently
        "edited history": prompt[:270] + list(range(200, 230)),  # an earlier message changed (compaction)
    }
    for name, new_prompt in cases.items():
        decode(den, prompt, props, 100)  # back to the first turn, reply cached
        got = decode(den, new_prompt, props)
        reuse = den.last_reuse
        assert reuse.source == "cut" and reuse.reused > 0, (name, reuse)
        assert reuse.reused + reuse.encoded == len(new_prompt)
        assert got == cold(model, props, new_prompt), name
        assert got == [t for b in reference_decode(model, props, new_prompt, 40) for t in b], name
    assert den.report()["checkpoints"] > 0


def test_a_retried_turn_reencodes_only_its_last_token(hybrid):
    model, props = hybrid
    den = ModelDenoiser(model, props, "hybrid")
    prompt = list(range(40, 140))
    first = decode(den, prompt, props)
    again = decode(den, prompt, props)
    assert (den.last_reuse.reused, den.last_reuse.encoded) == (99, 1)
    assert den.report()["turn_checkpoints"] >= 1
    assert first == again


def test_without_a_checkpoint_budget_a_hybrid_starts_over(hybrid):
    model, props = hybrid
    den = ModelDenoiser(model, props, "hybrid", checkpoint_bytes=0)
    prompt = list(range(40, 140))
    decode(den, prompt, props)
    decode(den, prompt, props)
    assert den.last_reuse.source == "cold" and den.last_reuse.reused == 0
    assert den.report()["checkpoints"] == 0


def fake_state(nbytes: int) -> LinearState:
    return LinearState({0: ({0: torch.zeros(nbytes, dtype=torch.uint8)}, {0: None})})


def test_block_checkpoints_are_thinned_and_the_budget_holds():
    points = Checkpoints(budget_bytes=10_000, max_blocks=4)
    for position in range(32, 32 * 13, 32):
        points.add(position, fake_state(1000), "block")
    blocks = sorted(points.points)
    assert len(blocks) == 4 and blocks[-1] == 32 * 12  # the newest stays
    assert max(b - a for a, b in itertools.pairwise([0, *blocks])) <= 32 * 4  # spread out, not the 4 latest
    points.add(500, fake_state(1000), "turn")
    assert points.points[500].kind == "turn" and points.best(499) == max(p for p in blocks if p <= 499)
    for position in range(1000, 1200, 10):
        points.add(position, fake_state(3000), "turn")
    assert points.nbytes <= 10_000 and points.best(10**6) == 1190  # the newest stays
    assert min(points.points) < 1000  # the rest spread out, early ones included
    points.drop_after(1185)
    assert max(points.points) < 1190


def test_engine_retry_and_rewind_on_a_hybrid_resume_from_checkpoints(tiny_hybrid_ckpt):
    import asyncio

    from clover_code.engine import ChatRequest
    from clover_code.engine.embedded.engine import EmbeddedEngine

    engine = EmbeddedEngine(tiny_hybrid_ckpt)

    def chat(*turns: str) -> ChatRequest:
        roles = ["user", "assistant"]
        return ChatRequest([{"role": roles[i % 2], "content": t} for i, t in enumerate(turns)], max_tokens=40)

    async def text(request) -> str:
        blocks = [b async for b in engine.stream(request)]
        assert blocks[-1].prompt_reused == engine.last_reuse.reused  # the per-request figure UIs show
        return "".join(b.text for b in blocks)

    async def run():
        first = await text(chat("list the files"))
        await text(chat("list the files", first, "now read the biggest one"))
        seen = {}
        for name, request in {"retry": chat("list the files", first, "now read the biggest one"),
                              "rewind": chat("list the files", first, "run the tests instead")}.items():
            warm = await text(request)
            seen[name] = engine.last_reuse
            await engine.aclose()
            assert warm == await text(request), name  # equal to a cold decode
            await text(chat("list the files"))
            await text(chat("list the files", first, "now read the biggest one"))
        return first, seen

    first, seen = asyncio.run(run())
    assert seen["retry"].source == "cut" and seen["retry"].encoded == 1
    history = engine.tokenizer.apply_chat_template(chat("list the files", first).messages, tokenize=False)
    assert seen["rewind"].source == "cut"  # back to where the rewritten message starts
    assert seen["rewind"].reused == len(engine.tokenizer.encode(history, add_special_tokens=False))
