"""Decoding policies (engine/policies.py): each rule's commits on hand-built offers, the names
and knobs a user may write, and the loop's guarantees under every policy: at least one
position per pass, never the mask token."""

import math
import random

import pytest
import torch

from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
from clover_code.engine.policies import (
    POLICIES,
    Aligned,
    Context,
    Entropy,
    Factor,
    Guarded,
    Offer,
    PolicyError,
    Threshold,
    parse_policy,
    policy_spec,
)

MASK, EOS, VOCAB = 0, 1, 8
ALL = [True] * 6


def test_threshold_commits_every_active_position_at_or_above_its_knob():
    offer = Offer([0.96, 0.5, 0.95, 0.94, 0.99, 0.97], [True, True, True, True, False, True])
    assert Threshold(0.95).select(offer) == [0, 2, 5]  # 4 is already committed
    assert Threshold(0.9).select(offer) == [0, 2, 3, 5]
    assert Threshold(0.999).select(offer) == [5]  # none passes: the likeliest active one


def test_factor_commits_the_n_most_confident_while_n_plus_one_times_their_doubt_stays_under_f():
    offer = Offer([0.7, 0.99, 0.78, 0.9, 0.2, 0.85], ALL)
    # sorted: .99 (always), .9: 3 x .1 = .3, .85: 4 x .15 = .6, .78: 5 x .22 = 1.1 (not < 1), stop
    assert Factor(1.0).select(offer) == [1, 3, 5]
    assert Factor(1.2).select(offer) == [1, 2, 3, 5]  # .7: 6 x .3 = 1.8
    assert Factor(0.2).select(offer) == [1]  # .9 needs 3 x .1 = .3 < F
    # a lone position commits at any confidence; two need the second above 1 - F / 3
    assert Factor(1.0).select(Offer([0.3], [True])) == [0]
    assert Factor(1.0).select(Offer([0.6, 0.8], [True, True])) == [1]
    assert Factor(1.0).select(Offer([0.7, 0.8], [True, True])) == [0, 1]


def test_entropy_takes_lowest_entropy_first_while_the_sum_less_the_largest_fits_the_budget():
    offer = Offer([0.99, 0.8, 0.99, 0.3, 0.9, 0.5], ALL, entropy=[0.01, 0.5, 0.02, 2.0, 0.3, 1.2])
    # ascending: .01, .02, .3, .5, 1.2, 2.0; sums less the largest: 0, .01, .03, .33, ...
    assert Entropy(0.1).select(offer) == [0, 2, 4]
    assert Entropy(0.4).select(offer) == [0, 1, 2, 4]
    assert Entropy(0.0).select(offer) == [0]  # always one
    with pytest.raises(ValueError, match="entropy"):
        Entropy(0.1).select(Offer([0.9], [True]))


def test_context_lowers_the_bar_for_structure_and_keys_only():
    conf = [0.75, 0.75, 0.75, 0.75, 0.96, 0.75]
    kinds = ["structure", "key", "string", "prose", "string", None]
    assert Context(0.7).select(Offer(conf, ALL, kinds=kinds)) == [0, 1, 4]
    assert Context(0.7).select(Offer(conf, ALL)) == [4]  # without a scaffold: every position is prose
    assert Context(0.8).select(Offer(conf, ALL, kinds=kinds)) == [4]


def test_guarded_holds_a_pick_that_repeats_a_token_near_it_to_the_default_bar():
    # the tokens as the pass leaves them: 7 7 (a doubled pick), then 3 4 3 (no token beside its twin)
    conf = [0.8, 0.8, 0.8, 0.9, 0.8, 0.96]
    tokens = [7, 7, 3, 4, 3, 6]
    assert Guarded(0.75).select(Offer(conf, ALL, neighbours=tokens)) == [2, 3, 4, 5]
    assert Threshold(0.75).select(Offer(conf, ALL)) == [0, 1, 2, 3, 4, 5]
    # at the default bar a repeat commits: code has `))` and `""`
    assert Guarded(0.75).select(Offer([0.96, 0.96], [True, True], neighbours=[9, 9])) == [0, 1]
    # a committed neighbour counts as much as a pick
    assert Guarded(0.75).select(Offer([0.99, 0.8, 0.8], [False, True, True], neighbours=[2, 2, 5])) == [2]


def test_when_nothing_passes_guarded_takes_the_likeliest_pick_that_repeats_nothing():
    offer = Offer([0.6, 0.6, 0.5, 0.2], [True] * 4, neighbours=[7, 7, 3, 3])
    assert Guarded(0.9).select(offer) == [0]  # every one repeats: the likeliest
    assert Guarded(0.9).select(Offer([0.6, 0.6, 0.5, 0.2], [True] * 4, neighbours=[7, 7, 3, 4])) == [2]
    with pytest.raises(ValueError, match="tokens"):
        Guarded(0.9).select(Offer([0.9], [True]))


def test_aligned_also_holds_a_pick_the_masked_position_beside_it_would_write():
    # `cartkit/models.py` decoded at a low bar: the position meant for `models` offers `.` (the
    # next token) at 0.8, and the masked position after it gives `.` 0.3 (it may be its token)
    conf = [0.8, 0.8, 0.8, 0.8]
    tokens = [11, 12, 13, 14]
    beside = [(0.0, 0.02), (0.01, 0.3), (0.09, 0.0), (0.0, 0.0)]
    assert Aligned(0.75).select(Offer(conf, ALL[:4], neighbours=tokens, beside=beside)) == [0, 2, 3]
    # a committed neighbour's probabilities say nothing (it is not deciding): only masked ones count
    assert Aligned(0.75).select(Offer(conf, [True, True, False, True], neighbours=tokens, beside=beside)) == [0, 1, 3]
    # the default bar takes a claimed pick; repeats are held as guarded holds them
    assert Aligned(0.75).select(Offer([0.96, 0.8], [True, True], neighbours=[1, 2], beside=[(0, 0.5), (0.5, 0)])) == [0]
    assert Aligned(0.75).select(Offer([0.8, 0.8, 0.8], [True] * 3, neighbours=[7, 7, 3], beside=[(0, 0)] * 3)) == [2]
    # nothing passes: the likeliest pick that is neither claimed nor a repeat
    assert Aligned(0.9).select(Offer([0.7, 0.6, 0.5], [True] * 3, neighbours=[1, 2, 3],
                                     beside=[(0, 0.5), (0, 0), (0.2, 0)])) == [1]
    with pytest.raises(ValueError, match="what each neighbour gives"):
        Aligned(0.9).select(Offer([0.9], [True], neighbours=[1]))


def test_what_the_neighbours_give_a_pick_is_read_from_their_distributions():
    from clover_code.engine.embedded.decoding import pick_tokens

    probs = torch.tensor([[0.1, 0.6, 0.2, 0.1], [0.1, 0.3, 0.5, 0.1], [0.1, 0.1, 0.1, 0.7]])  # [3, 4]
    pick = pick_tokens(probs.log(), 0.0, 1.0, banned=0, beside=True)
    assert pick.tokens.tolist() == [1, 2, 3]
    assert pick.beside is not None
    # left: p_{i-1}(t_i), 0 at the start; right: p_{i+1}(t_i), 0 at the end (the mask banned,
    # so each row is renormalised over tokens 1-3)
    assert pick.beside.flatten().tolist() == pytest.approx([0, 0.3 / 0.9, 0.2 / 0.9, 0.1 / 0.9, 0.1 / 0.9, 0], abs=1e-5)
    assert pick_tokens(probs.log(), 0.0, 1.0).beside is None  # only when a policy asks
    sampled = pick_tokens(probs.log(), 1.0, 1.0, torch.Generator().manual_seed(0), beside=True)
    assert sampled.beside is not None and sampled.beside.shape == (3, 2)


def test_names_and_knobs_as_a_user_writes_them():
    assert parse_policy("threshold:0.9") == Threshold(0.9)
    assert parse_policy("threshold") == Threshold(0.95)
    assert parse_policy("threshold", threshold=0.8) == Threshold(0.8)  # --threshold is the bare rule's knob
    assert parse_policy(" Factor:2 ") == Factor(2.0)
    assert parse_policy("entropy") == Entropy(POLICIES["entropy"].default)
    assert parse_policy("context:0.6", threshold=0.8) == Context(0.6)
    assert policy_spec(parse_policy("factor")) == "factor:0.5"
    assert policy_spec(parse_policy("context")) == "context:0.8"
    assert parse_policy("guarded") == Guarded(POLICIES["guarded"].default)
    assert parse_policy("aligned") == Aligned(0.75)
    for spec in ("threshold:0.9", "factor:0.5", "entropy:1.5", "context:0.4", "guarded:0.7", "aligned:0.6"):
        assert policy_spec(parse_policy(spec)) == spec


@pytest.mark.parametrize("spec,says", [
    ("greedy", "unknown decoding policy 'greedy': choose threshold[:KNOB], factor[:KNOB]"),
    ("threshold:1.5", "must be a confidence in (0, 1]"),
    ("threshold:0", "must be a confidence in (0, 1]"),
    ("factor:-1", "must be a factor above 0"),
    ("factor:nan", "must be a factor above 0"),
    ("entropy:inf", "must be a budget in nats"),
    ("factor:fast", "must be a number"),
    ("", "unknown decoding policy"),
])
def test_a_bad_name_or_knob_says_what_would_do(spec, says):
    with pytest.raises(PolicyError) as err:
        parse_policy(spec)
    assert says in str(err.value)


def every_policy():
    return [parse_policy(f"{name}:{knob}") for name, knobs in
            (("threshold", (1.0, 0.5, 0.01)), ("factor", (0.01, 1, 30)), ("entropy", (0, 0.5, 50)),
             ("context", (1.0, 0.01)), ("guarded", (1.0, 0.5, 0.01)), ("aligned", (1.0, 0.5, 0.01)))
            for knob in knobs]


@pytest.mark.parametrize("policy", every_policy(), ids=policy_spec)
def test_on_random_offers_a_policy_commits_a_sorted_nonempty_subset_of_the_active_positions(policy):
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 32)
        active = [rng.random() < 0.6 for _ in range(n)]
        active[rng.randrange(n)] = True
        offer = Offer([rng.random() for _ in range(n)], active, [rng.random() * 3 for _ in range(n)],
                      [rng.choice(["prose", "string", "key", "structure", None]) for _ in range(n)],
                      [rng.randrange(4) for _ in range(n)], [(rng.random() / 4, rng.random() / 4) for _ in range(n)])
        chosen = policy.select(offer)
        assert chosen and chosen == sorted(set(chosen)) and all(active[i] for i in chosen)


class MaskLovingDenoiser:
    """Random logits whose likeliest token is always the mask itself."""

    def __init__(self, seed: int):
        self.generator = torch.Generator().manual_seed(seed)
        self.passes = 0

    def denoise(self, block, commit=None):
        self.passes += 1
        logits = torch.randn(block.shape[0], VOCAB, generator=self.generator) * 3  # [L, V]
        logits[:, MASK] = logits.max(-1).values + 1.0
        return logits, 1


@pytest.mark.parametrize("policy", every_policy(), ids=policy_spec)
@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_under_every_policy_each_pass_commits_something_and_never_the_mask(policy, temperature):
    steps = []
    den = MaskLovingDenoiser(3)
    opts = DecodeOptions(mask_id=MASK, stop_ids=frozenset({EOS}), block_size=8, max_tokens=40, policy=policy,
                         temperature=temperature, seed=5)
    blocks = list(decode_blocks(den, torch.tensor([2, 3]), opts, on_step=steps.append))
    tokens = [t for b in blocks for t in b.tokens]
    assert tokens and MASK not in tokens
    assert all(step.newly for step in steps)
    assert len(steps) == den.passes == sum(b.steps for b in blocks)


def test_the_entropy_of_a_pick_is_that_of_the_distribution_without_the_mask():
    from clover_code.engine.embedded.decoding import pick_tokens

    logits = torch.log(torch.tensor([[0.5, 0.25, 0.25, 1e-12], [0.1, 0.9, 1e-12, 1e-12]]))
    pick = pick_tokens(logits, 0.0, 1.0, banned=0, entropy=True)
    assert pick.tokens.tolist() == [1, 1]
    assert pick.entropy is not None
    assert pick.entropy.tolist() == pytest.approx([math.log(2), 0.0], abs=1e-5)
    assert pick_tokens(logits, 0.0, 1.0, banned=0).entropy is None  # only when a policy asks
