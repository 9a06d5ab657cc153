"""The policy seam in the decoding loop: the threshold rule (the default for a checkpoint that
names no policy of its own) decodes exactly as before it, on the tiny checkpoints (against the
cache-free reference) and on the demo model (against ids pinned from the engine before the
seam); the demo model's own policy is faster; a request's policy reaches the loop; the scaffold
says what kind of text each position falls in."""

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
import torch
from test_call_grammar import DEMO, TOOLS, XML, call
from transformers import AutoModelForCausalLM, AutoTokenizer

from clover_code.agent.instructions import render_system_prompt
from clover_code.engine import ChatRequest, EngineError
from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
from clover_code.engine.embedded.denoisers import ModelDenoiser, read_props
from clover_code.engine.embedded.engine import EmbeddedEngine
from clover_code.engine.markup.call_format import probe_call_format
from clover_code.engine.markup.call_grammar import CallGrammar
from clover_code.engine.markup.scaffold import Grammars, Scaffold
from clover_code.engine.markup.vocabulary import Vocabulary
from clover_code.engine.policies import Factor, Threshold
from clover_code.models import demo_model
from clover_code.tools import default_registry
from tests.support.reference import reference_decode


@pytest.mark.parametrize("kind", ["attention", "hybrid"])
def test_the_default_policy_and_an_explicit_threshold_rule_decode_as_the_reference(kind, request):
    folder = request.getfixturevalue(f"tiny_{kind}_ckpt")
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    props = read_props(model.config)
    prompt = list(range(40, 90))

    def decode(policy):
        opts = DecodeOptions(mask_id=props.mask_token_id, block_size=props.block_size, max_tokens=70, policy=policy)
        blocks = list(decode_blocks(ModelDenoiser(model, props, kind), torch.tensor(prompt), opts))
        return [b.tokens for b in blocks], sum(b.steps for b in blocks)

    default, explicit = decode(None), decode(Threshold(0.95))
    assert default == explicit
    assert default[0] == reference_decode(model, props, prompt, 70)
    assert default[1] < sum(map(len, default[0]))  # the peaked checkpoint commits in parallel


# A turn the demo model decodes in many passes (some committing one token): its text, tokens and
# passes under the threshold rule, as the engine before the policy seam (commit 498b523) decodes
# it with the shipped weights (run L2 of issue 46; run N7's were ("de0f6dee2d666f8e", 91, 43) and
# ("268fb51d89010c21", 78, 28), which this test held before the checkpoint changed).
FILE = '"""Small numeric helpers."""\n\n\ndef mean(data):\n    return sum(data) / len(data)\n'
BEFORE = {True: ("f880633d10489838", 84, 40), False: ("2a5d7c0e3c3f0e04", 91, 35)}  # scaffold: (sha, tokens, passes)


def demo_turn() -> ChatRequest:
    def read(i, path):
        return {"id": f"call_{i}", "type": "function", "function": {"name": "read_file",
                                                                     "arguments": json.dumps({"path": path})}}
    numbered = "".join(f"{i:6}\t{line}\n" for i, line in enumerate(FILE.splitlines(), 1))
    messages = [
        {"role": "system", "content": render_system_prompt(Path("/work/ws"), "full-auto")},
        {"role": "user", "content": "Add a function `clamp(value, low, high)` to numkit/measures.py that returns "
         "value limited to the range [low, high], with a test in tests/test_measures.py. Run the tests, then commit."},
        {"role": "assistant", "content": "", "tool_calls": [read(1, "numkit/measures.py")]},
        {"role": "tool", "tool_call_id": "call_1", "name": "read_file", "content": numbered}]
    # The tools the demo model was trained with (the todo list came later), as the agent offers it.
    trained = [t for t in default_registry().schemas() if t["function"]["name"] != "todo_write"]
    return ChatRequest(messages, trained, max_tokens=400)


def decoded(engine: EmbeddedEngine, request: ChatRequest) -> tuple[str, int, int]:
    async def run():
        return [b async for b in engine.stream(request)]
    blocks = asyncio.run(run())
    text = "".join(b.text for b in blocks)
    return hashlib.sha256(text.encode()).hexdigest()[:16], sum(b.tokens for b in blocks), \
        sum(b.forward_passes for b in blocks)


@pytest.fixture(scope="module")
def demo_engine():
    return EmbeddedEngine(demo_model())


def threshold_turn() -> ChatRequest:
    request = demo_turn()
    request.policy = "threshold:0.95"
    return request


@pytest.mark.parametrize("scaffold", [True, False])
def test_the_demo_model_decodes_exactly_as_before_the_seam(demo_engine, scaffold):
    demo_engine.scaffold = scaffold
    try:
        assert decoded(demo_engine, threshold_turn()) == BEFORE[scaffold]
        engine = EmbeddedEngine(demo_model(), threshold=0.95)  # a threshold alone means the threshold rule
        engine.scaffold = scaffold
        assert engine.info.policy == "threshold:0.95"
        assert decoded(engine, demo_turn()) == BEFORE[scaffold]
    finally:
        demo_engine.scaffold = True


def test_the_demo_model_decodes_by_its_own_policy_unless_told_otherwise(demo_engine):
    # the policy its config names (measured to meet issue 46's goal on both held-out sets)
    assert demo_engine.info.policy == "aligned:0.75"
    request = demo_turn()
    request.policy = "aligned:0.75"
    own = decoded(demo_engine, demo_turn())
    assert own == decoded(demo_engine, request)
    _, tokens, passes = own
    _, rule_tokens, rule_passes = BEFORE[True]
    assert tokens / passes > rule_tokens / rule_passes


def test_a_requests_policy_reaches_the_loop_and_a_bad_one_is_an_engine_error(demo_engine):
    base = decoded(demo_engine, threshold_turn())
    for spec in ("factor:3", "entropy:2", "threshold:0.5"):
        request = demo_turn()
        request.policy = spec
        _, tokens, passes = decoded(demo_engine, request)
        assert tokens / passes > base[1] / base[2], spec  # each commits more per pass than 0.95 here
    request = demo_turn()
    request.policy = "fastest"
    with pytest.raises(EngineError, match="unknown decoding policy 'fastest'"):
        decoded(demo_engine, request)


def test_an_engines_policy_and_its_threshold(tiny_attention_ckpt):
    engine = EmbeddedEngine(tiny_attention_ckpt, policy="factor:2", threshold=0.9)
    assert engine.info.policy == "factor:2" and engine.info.threshold == 0.9
    options = engine._options(ChatRequest([{"role": "user", "content": "hi"}], threshold=0.5), 10)
    assert options.policy == Factor(2.0) and options.threshold == 0.5  # a request's threshold: drafts only
    bare = EmbeddedEngine(tiny_attention_ckpt, policy="threshold", threshold=0.9)
    assert bare.info.policy == "threshold:0.9"
    options = bare._options(ChatRequest([{"role": "user", "content": "hi"}], threshold=0.5), 10)
    assert options.policy == Threshold(0.5)  # the threshold rule's knob, as before the seam
    knob = EmbeddedEngine(tiny_attention_ckpt, policy="threshold:0.8")
    assert knob.info.threshold == 0.8 and knob._options(ChatRequest([]), 10).policy == Threshold(0.8)
    with pytest.raises(EngineError, match="decoding policy 'factor:0'"):
        EmbeddedEngine(tiny_attention_ckpt, policy="factor:0")


def test_a_checkpoint_may_name_its_own_policy_and_the_user_overrides_it(tiny_attention_ckpt, tmp_path):
    import json
    import shutil

    own = tmp_path / "own"
    shutil.copytree(tiny_attention_ckpt, own)
    config = json.loads((own / "config.json").read_text())
    (own / "config.json").write_text(json.dumps({**config, "clover_policy": "guarded:0.8"}))
    assert EmbeddedEngine(own).info.policy == "guarded:0.8"
    assert EmbeddedEngine(own, policy="factor:1").info.policy == "factor:1"
    assert EmbeddedEngine(own, threshold=0.9).info.policy == "threshold:0.9"  # a threshold means its rule
    assert EmbeddedEngine(tiny_attention_ckpt).info.policy == "threshold:0.95"  # none named: the card's rule
    (own / "config.json").write_text(json.dumps({**config, "clover_policy": "fastest"}))
    with pytest.raises(EngineError, match="config clover_policy: unknown decoding policy 'fastest'"):
        EmbeddedEngine(own)


@pytest.mark.parametrize("fmt", [DEMO, XML], ids=["json", "xml"])
def test_the_grammar_says_what_kind_of_text_each_character_falls_in(fmt):
    grammar = CallGrammar(fmt, TOOLS)
    text = "Hi " + call("read_file", {"path": "a.py", "limit": 57}, fmt) + " ok"
    state, kinds = grammar.start, []
    for c in text:
        kinds.append(grammar.kind(state))
        state = grammar.feed(state, c)
    at = {c: kinds[text.index(c)] for c in ("H", "<", "read_file", "path", "a.py", "7")}
    assert at == {"H": "prose", "<": "prose", "read_file": "key", "path": "key", "a.py": "string", "7": "string"}
    for name in ("read_file", "path", "a.py"):
        assert len(set(kinds[text.index(name):text.index(name) + len(name)])) == 1
    assert kinds[text.index("</tool_call>") - 1] == "structure"
    assert kinds[-1] == "prose"


def test_the_scaffold_reads_kinds_along_commits_and_picks_until_a_pick_is_ruled_out():
    tokenizer = AutoTokenizer.from_pretrained(demo_model())
    fmt = probe_call_format(tokenizer)
    assert fmt is not None
    mask = tokenizer.mask_token_id
    scaffold = Scaffold(Grammars(fmt, Vocabulary(tokenizer)).for_tools(TOOLS), mask)
    ids = tokenizer.encode("ok " + call("read_file", {"path": "a.py"}, fmt), add_special_tokens=False)
    texts = [tokenizer.decode([t]) for t in ids]
    resolved = [i % 2 == 0 for i in range(len(ids))]  # half committed; the picks fill the rest
    block = [t if r else mask for t, r in zip(ids, resolved, strict=True)]
    kinds = scaffold.kinds(block, resolved, ids)
    assert kinds[0] == "prose" and kinds[texts.index("read")] == "key"
    assert kinds[next(i for i, t in enumerate(texts) if "a" in t and i > texts.index("path"))] == "string"
    assert None not in kinds
    wrong = list(ids)
    wrong[texts.index("read")] = tokenizer.convert_tokens_to_ids("<|im_end|>")  # ruled out inside a call
    cut = scaffold.kinds([mask] * len(ids), [False] * len(ids), wrong)
    assert cut[texts.index("read")] == "key" and set(cut[texts.index("read") + 1:]) == {None}
