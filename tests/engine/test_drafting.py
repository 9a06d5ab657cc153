"""Copy drafting (drafting.py) in the decoding loop, with a scripted denoiser that is sure of a
position only once it sees the right token to its left: a copied span commits in far fewer
passes; a wrong draft is rejected and the span decoded normally."""

import torch

from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
from clover_code.engine.embedded.drafting import CopyDrafter, Draft
from tests.support.wanting import WantingDenoiser

MASK, EOS, VOCAB = 3, 2, 300
TARGET = list(range(100, 160)) + [EOS]  # 60 tokens of reply, then the end


def copy_model(guess: dict[int, int] | None = None):
    """Sure of TARGET[r] when the token to its left is TARGET[r - 1] (committed or fed); unsure
    (0.5) with a mask to its left, guessing `guess[r]` if given; fairly sure (0.6) after a wrong one."""
    guess = guess or {}

    def wants(r, ids, i):
        if r >= len(TARGET):
            return {}
        if i == 0 or ids[i - 1] == TARGET[r - 1]:
            return {TARGET[r]: 0.99}
        if ids[i - 1] == MASK:
            return {guess.get(r, TARGET[r]): 0.5 - r / 1000}
        return {TARGET[r]: 0.6}
    return wants


def run(prompt: list[int], wants, draft: bool):
    den = WantingDenoiser(wants, VOCAB, MASK)
    drafter = CopyDrafter(prompt, frozenset({EOS})) if draft else None
    opts = DecodeOptions(mask_id=MASK, stop_ids=frozenset({EOS}), max_tokens=100)
    blocks = list(decode_blocks(den, torch.tensor(prompt), opts, drafter=drafter))
    return [t for b in blocks for t in b.tokens], den, drafter


def test_a_copied_span_commits_in_fewer_passes():
    prompt = [1, 50, 51] + TARGET[:-1] + [60, 61]  # the reply copies what the prompt holds
    plain, plain_den, _ = run(prompt, copy_model(), draft=False)
    ids, den, drafter = run(prompt, copy_model(), draft=True)
    assert plain == ids == TARGET
    assert plain_den.passes == len(TARGET)  # one position per pass without drafts
    assert den.passes <= len(TARGET) // 4
    assert drafter.stats.passes >= 2 and drafter.stats.committed >= len(TARGET) // 3 and drafter.stats.rejected == 0


def test_a_wrong_draft_is_rejected_and_decoded_normally():
    wrong = list(range(200, 257))
    prompt = [1, 50] + TARGET[:3] + wrong + [60]  # the context copies only the first three tokens
    model = copy_model(guess={3 + k: w for k, w in enumerate(wrong)})  # its blind guesses follow the copy
    plain, plain_den, _ = run(prompt, model, draft=False)
    ids, den, drafter = run(prompt, model, draft=True)
    assert plain == ids == TARGET
    assert drafter.stats.rejected >= 1 and drafter.stats.committed == 0
    assert den.passes == plain_den.passes + drafter.stats.rejected  # a rejected draft costs its pass, no more


def test_only_an_unbroken_chain_of_verified_positions_commits():
    draft = Draft({4: 10, 5: 11, 6: 12, 7: 13, 8: 14}, verify=(4, 6, 8), fed=(5, 7))
    picks, sure = [0] * 10, [0.99] * 10
    picks[4], picks[6], picks[8] = 10, 12, 14
    assert draft.accepted(picks, sure, 0.95) == [4, 6, 8]
    picks[6] = 99  # the model predicts another token there
    assert draft.accepted(picks, sure, 0.95) == [4]
    picks[6], sure[4] = 12, 0.9  # below the threshold at the frontier
    assert draft.accepted(picks, sure, 0.95) == []
    assert draft.inputs([MASK] * 10)[4:9] == [MASK, 11, MASK, 13, MASK]  # verify positions stay masked
