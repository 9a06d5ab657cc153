"""The threshold rule and stop handling of decoding.py, on a hand-made denoiser with known logits."""

import math

import pytest
import torch

from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks, pick_tokens, select_commits

MASK, EOS, VOCAB = 0, 1, 8


def logits_for(tokens: list[int], confidences: list[float]) -> torch.Tensor:
    """Logits `[L, V]` whose softmax puts exactly `confidence` on `token` at each position."""
    rows = []
    for token, conf in zip(tokens, confidences, strict=True):
        rest = max(1 - conf, 1e-9) / (VOCAB - 1)
        row = torch.full((VOCAB,), math.log(rest))
        row[token] = math.log(conf)
        rows.append(row)
    return torch.stack(rows)


class ScriptedDenoiser:
    """Returns the logits it was given, one step at a time, and records what it saw."""

    def __init__(self, steps: list[torch.Tensor]):
        self.steps = list(steps)
        self.seen: list[tuple[list[int], list[int] | None]] = []

    def denoise(self, block, commit=None):
        self.seen.append((block.tolist(), None if commit is None else commit.tolist()))
        return self.steps.pop(0), 1


def opts(**kw) -> DecodeOptions:
    return DecodeOptions(**{"mask_id": MASK, "stop_ids": frozenset({EOS}), "block_size": 4, **kw})


def test_exactly_the_positions_at_or_above_threshold_commit():
    step1 = logits_for([2, 3, 4, 5], [0.96, 0.5, 0.95, 0.94])
    step2 = logits_for([6, 3, 7, 5], [0.2, 0.3, 0.2, 0.4])  # none passes: top-1 (position 3)
    step3 = logits_for([6, 3, 7, 5], [0.99, 0.99, 0.99, 0.99])
    den = ScriptedDenoiser([step1, step2, step3])
    steps = []
    blocks = list(decode_blocks(den, torch.tensor([5, 6]), opts(max_tokens=4), on_step=steps.append))
    assert [s.newly for s in steps] == [(0, 2), (3,), (1,)]
    assert steps[-1].resolved == (True, True, True, True)
    # positions committed earlier keep their tokens; later logits for them are ignored
    assert blocks[0].tokens == (2, 3, 4, 5)
    assert blocks[0].steps == 3 and blocks[0].finish == "length"
    # the prompt reaches the denoiser once, with the first step; masks fill the rest
    assert den.seen[0] == ([MASK] * 4, [5, 6])
    assert den.seen[1] == ([2, MASK, 4, MASK], None)


def test_select_commits_falls_back_to_the_single_most_confident_active_position():
    conf = [0.9, 0.5, 0.7, 0.1]
    active = [False, True, True, True]
    assert select_commits(conf, active, 0.95) == [2]
    assert select_commits([0.97, 0.96, 0.2, 0.99], active, 0.95) == [1, 3]


def test_block_ends_when_no_mask_is_left_and_the_clean_block_is_committed_next():
    one_pass = logits_for([2, 3, 4, 5], [0.999] * 4)
    den = ScriptedDenoiser([one_pass, one_pass, one_pass])
    blocks = list(decode_blocks(den, torch.tensor([7]), opts(max_tokens=12)))
    assert [b.steps for b in blocks] == [1, 1, 1]
    assert [b.finish for b in blocks] == [None, None, "length"]
    assert den.seen[1] == ([MASK] * 4, [2, 3, 4, 5])  # fused: block 0 commits with block 1's first step


def test_eos_truncates_and_positions_after_it_are_never_decoded():
    step1 = logits_for([2, EOS, 4, 5], [0.5, 0.99, 0.2, 0.2])  # EOS at 1, position 0 still masked
    step2 = logits_for([3, EOS, 4, 5], [0.6, 0.99, 0.3, 0.3])  # top-1 among needed: position 0 only
    den = ScriptedDenoiser([step1, step2])
    blocks = list(decode_blocks(den, None, opts(max_tokens=100)))
    assert len(blocks) == 1
    assert blocks[0].tokens == (3, EOS)
    assert blocks[0].finish == "stop" and blocks[0].steps == 2


def test_first_stop_token_wins():
    step1 = logits_for([2, 3, EOS, EOS], [0.99, 0.2, 0.99, 0.99])
    step2 = logits_for([2, EOS, 4, 4], [0.99, 0.99, 0.1, 0.1])
    blocks = list(decode_blocks(ScriptedDenoiser([step1, step2]), None, opts()))
    assert blocks[0].tokens == (2, EOS)


def test_max_tokens_cuts_inside_a_block():
    step = logits_for([2, 3, 4, 5], [0.99, 0.99, 0.1, 0.1])
    blocks = list(decode_blocks(ScriptedDenoiser([step]), None, opts(max_tokens=2)))
    assert blocks[0].tokens == (2, 3) and blocks[0].finish == "length" and blocks[0].steps == 1


def test_cancel_is_checked_before_every_step():
    step = logits_for([2, 3, 4, 5], [0.99, 0.3, 0.3, 0.3])
    den = ScriptedDenoiser([step] * 10)
    calls = []
    gen = decode_blocks(den, None, opts(), on_step=calls.append, cancelled=lambda: len(calls) >= 2)
    assert list(gen) == []
    assert len(den.seen) == 2


def test_first_block_can_be_shorter_for_absolute_alignment():
    den = ScriptedDenoiser([logits_for([2, 3], [0.99] * 2), logits_for([2, 3, 4, 5], [0.99] * 4)])
    blocks = list(decode_blocks(den, None, opts(first_block_size=2, max_tokens=6)))
    assert [len(b.tokens) for b in blocks] == [2, 4]


def test_sampling_is_reproducible_with_a_seed_and_respects_top_p():
    logits = torch.log(torch.tensor([[0.05, 0.6, 0.3, 0.05]] * 64))
    a = pick_tokens(logits, 1.0, 0.8, torch.Generator().manual_seed(1))
    b = pick_tokens(logits, 1.0, 0.8, torch.Generator().manual_seed(1))
    assert torch.equal(a.tokens, b.tokens)
    assert set(a.tokens.tolist()) <= {1, 2}  # the nucleus of 0.8 is {1, 2}
    assert torch.allclose(a.confidence[a.tokens == 1], torch.tensor(2 / 3))


def test_bad_block_size_is_refused():
    with pytest.raises(ValueError):
        list(decode_blocks(ScriptedDenoiser([]), None, opts(block_size=0)))


def test_the_mask_token_is_never_committed_even_where_it_is_the_most_likely():
    # position 0's logits favour the mask token itself (as a small tied-embedding model's do
    # where it knows nothing); the pick is the best other token, with its renormalised share
    step = logits_for([MASK, 3, 4, 5], [0.9, 0.99, 0.99, 0.99])
    step[0, 6] = step[0, 2] + 1.0
    blocks = list(decode_blocks(ScriptedDenoiser([step, step]), None, opts(max_tokens=4)))
    assert blocks[0].tokens == (6, 3, 4, 5) and blocks[0].steps == 2  # 6 is unsure: committed alone


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_pick_tokens_never_returns_the_banned_token(temperature):
    logits = logits_for([MASK] * 64, [0.999] * 64)
    pick = pick_tokens(logits, temperature, 1.0, torch.Generator().manual_seed(0), banned=MASK)
    assert MASK not in pick.tokens.tolist()
    assert len(set(pick.tokens.tolist())) == (1 if temperature == 0 else VOCAB - 1)
