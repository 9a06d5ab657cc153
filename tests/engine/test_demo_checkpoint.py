"""The demo checkpoint shipped in the package: it loads offline, and on a sandbox task it
decodes several tokens per forward pass and writes a tool call that parses."""

import asyncio

from clover_code.agent.instructions import render_system_prompt
from clover_code.engine import ChatRequest
from clover_code.engine.embedded.engine import EmbeddedEngine
from clover_code.engine.markup.toolcalls import written_calls
from clover_code.models import demo_model
from clover_code.tools import default_registry
from tools.training.demo_model.split_names import compound_names

RENAME = ("Rename the function `calc_total` in the shop package to `order_total`, everywhere:\n"
          "its definition, every import and call site, and the tests. No `calc_total` may remain.\n"
          "Run the tests, then commit.")


def first_turn(engine, tmp_path):
    messages = [{"role": "system", "content": render_system_prompt(tmp_path, "full-auto")},
                {"role": "user", "content": RENAME}]
    request = ChatRequest(messages, default_registry().schemas(), max_tokens=256)

    async def run():
        return [block async for block in engine.stream(request)]

    return asyncio.run(run())


def test_demo_checkpoint_decodes_in_parallel_and_calls_a_tool(tmp_path):
    folder = demo_model()
    assert folder is not None, "clover_code/models/clover-demo is missing"
    engine = EmbeddedEngine(folder)
    blocks = first_turn(engine, tmp_path)
    tokens, passes = sum(b.tokens for b in blocks), sum(b.forward_passes for b in blocks)
    assert tokens / passes > 1.0, (tokens, passes)
    calls = written_calls("".join(b.text for b in blocks))
    assert calls and calls[0].call is not None, "".join(b.text for b in blocks)
    registry = default_registry()
    assert not isinstance(registry.validate(calls[0].call.name, calls[0].call.arguments), str)


def test_the_demo_tokenizer_spells_package_names_in_several_tokens():
    # a compound package name as a token of its own is rare in training and does not copy
    # (tools/training/demo_model/split_names.py); the shipped tokenizer must not make one
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(demo_model())
    compounds = compound_names()
    pieces = {name: tokenizer.tokenize(f"{name}/") for name in compounds}
    assert all(len(p) >= 3 for p in pieces.values()), [n for n, p in pieces.items() if len(p) < 3]
    as_word_and_suffix = [n for n, (word, suffix) in compounds.items() if pieces[n] == [word, suffix, "/"]]
    assert len(as_word_and_suffix) >= 0.9 * len(compounds)
