"""Scaffolded decoding (scaffold.py) in the decoding loop, with a scripted denoiser that wants
given text: forced tokens cost no pass, commits the grammar rules out are withdrawn, string
contents stay the model's."""


import pytest
import torch
from transformers import AutoTokenizer

from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
from clover_code.engine.markup.call_format import probe_call_format
from clover_code.engine.markup.scaffold import Grammars, Scaffold
from clover_code.engine.markup.vocabulary import Vocabulary
from clover_code.models import demo_model
from tests.support.grammar import TOOLS, XML_TEMPLATE, call
from tests.support.wanting import WantingDenoiser, following


@pytest.fixture(scope="module", params=["json", "xml"])
def setup(request):
    tokenizer = AutoTokenizer.from_pretrained(demo_model())
    if request.param == "xml":
        tokenizer.chat_template = XML_TEMPLATE
    fmt = probe_call_format(tokenizer)
    assert fmt is not None and fmt.family == request.param
    return tokenizer, Grammars(fmt, Vocabulary(tokenizer)), fmt


def decode(setup, wants, scaffold: bool = True, max_tokens: int = 200, tools=TOOLS):
    tokenizer, grammars, _ = setup
    mask, eos = tokenizer.mask_token_id, tokenizer.convert_tokens_to_ids("<|im_end|>")
    den = WantingDenoiser(wants, len(tokenizer), mask)
    guide = Scaffold(grammars.for_tools(tools), mask) if scaffold else None
    opts = DecodeOptions(mask_id=mask, stop_ids=frozenset({eos}), max_tokens=max_tokens)
    blocks = list(decode_blocks(den, torch.tensor([1, 50, 60, 70]), opts, guide=guide))
    return [t for b in blocks for t in b.tokens], den, guide


def encode(setup, text: str) -> list[int]:
    tokenizer = setup[0]
    return tokenizer.encode(text + "<|im_end|>", add_special_tokens=False)


def test_forced_tokens_are_committed_without_a_denoise_step(setup):
    fmt = setup[2]
    target = encode(setup, "Reading. " + call("read_file", {"path": "src/a.py", "limit": 5}, fmt))
    unsure = following(target, lambda r: 0.5 - r / 1000)  # every pass commits one token, left to right
    plain, plain_den, _ = decode(setup, unsure, scaffold=False)
    ids, den, guide = decode(setup, unsure)
    assert plain == ids == target
    assert plain_den.passes == len(target)
    assert guide.stats.forced >= 10 and den.passes == len(target) - guide.stats.forced
    assert guide.stats.withdrawn == guide.stats.repicked == 0


def test_string_contents_stay_the_models(setup):
    fmt = setup[2]
    odd = 'dir/ä "q" \\ {x}' if fmt.family == "json" else 'dir/ä "q" \\ {x}\n</par'
    target = encode(setup, call("edit_file", {"path": odd, "old_string": "a\tb"}, fmt))
    assert decode(setup, following(target))[0] == decode(setup, following(target), scaffold=False)[0] == target


def test_a_commit_the_grammar_rules_out_is_withdrawn_and_decoded_under_it(setup):
    tokenizer, _, fmt = setup
    good = encode(setup, call("read_file", {"path": "a.py"}, fmt))
    at = max(i for i, t in enumerate(good) if tokenizer.decode([t]) == "file")  # the tool name's end
    wrong = tokenizer.convert_tokens_to_ids("name")

    def wants(r, ids, i):
        """Unsure, left to right; but sure of a wrong token at `at` while its left is masked."""
        if r >= len(good):
            return {}
        if r == at and i < len(ids) and any(t == tokenizer.mask_token_id for t in ids[:i]):
            return {wrong: 0.99}
        return {good[r]: 0.5 - r / 1000}
    plain = decode(setup, wants, scaffold=False)[0]
    ids, _, guide = decode(setup, wants)
    assert plain[at] == wrong and ids == good
    assert guide.stats.withdrawn == 1


@pytest.mark.parametrize("setup", ["json"], indirect=True)  # whitespace between members: JSON's alone
def test_a_replaced_pick_follows_the_template_not_the_whitespace_json_allows(setup):
    tokenizer, _, fmt = setup
    assert fmt.family == "json"
    listing = [{"type": "function", "function": {"name": "list_files", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}}}}}]  # no key required: "{" then '"' or "}"
    text = call("list_files", {"path": "a.py"}, fmt)
    cut = text.index('{"path')  # "{" and the key's quote as tokens of their own, a space possible between
    good = tokenizer.encode(text[:cut + 1], add_special_tokens=False) + encode(setup, text[cut + 1:])
    at = len(tokenizer.encode(text[:cut + 1], add_special_tokens=False))  # the quote that opens the key
    space, wrong = (tokenizer.encode(t, add_special_tokens=False)[0] for t in (" ", "b"))
    assert tokenizer.decode(good[at - 1:at + 1]) == '{"'

    def wants(r, ids, i):
        """Unsure, left to right; where the key opens, a letter first and a space second."""
        if r == at:
            return {wrong: 0.45, space: 0.3, good[at]: 0.2}
        return {good[r]: 0.5 - r / 1000} if r < len(good) else {}
    assert decode(setup, wants, scaffold=False, tools=listing)[0][at] == wrong
    ids, _, guide = decode(setup, wants, tools=listing)
    assert ids == good and guide.stats.repicked == 1


def test_without_tools_or_scaffold_the_loop_is_the_plain_one(setup):
    target = encode(setup, "no calls here " + call("read_file", {"path": "a"}, setup[2]))
    plain, plain_den, _ = decode(setup, following(target, lambda r: 0.7 - r / 1000), scaffold=False)
    assert plain == target and plain_den.passes == len(target)


@pytest.mark.parametrize("setup", ["json"], indirect=True)  # a grammar for the input: JSON strings only
def test_a_freeform_input_is_decoded_under_its_grammar(setup):
    from test_lark_subset import GOOD, TOOL

    fmt = setup[2]
    target = encode(setup, call("apply_patch", {"input": GOOD}, fmt))
    unsure = following(target, lambda r: 0.5 - r / 1000)  # every pass commits one token, left to right
    bare = {"type": "function", "function": {"name": "apply_patch", "parameters": {
        "type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}}}
    ids, den, guide = decode(setup, unsure, tools=[TOOL])
    plain_ids, _, plain_guide = decode(setup, unsure, tools=[bare])
    assert ids == plain_ids == target
    assert guide.stats.forced > plain_guide.stats.forced + 5  # the patch's fixed lines cost no pass
    assert den.passes == len(target) - guide.stats.forced
