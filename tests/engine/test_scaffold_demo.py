"""Scaffolded decoding on the demo checkpoint, its head pushed toward a wrong tool name or a key
the schema lacks: never committed with the scaffold (embedded and served); with
--no-scaffold (or without tools) the ids are the plain decoder's."""

import asyncio

import openai
import pytest
import torch

from clover_code.engine import ChatRequest
from clover_code.engine.embedded.engine import EmbeddedEngine
from clover_code.engine.markup.toolcalls import written_calls
from clover_code.engine.wire.server import create_app
from clover_code.models import demo_model
from clover_code.tools import default_registry
from tests.support.reference import reference_decode
from tests.support.serving import serve_app

# The tools the demo model was trained with (the todo list came later): the pushes below are
# tuned to what its head prefers under that prompt.
TOOLS = [t for t in default_registry().schemas() if t["function"]["name"] != "todo_write"]
NAMES = {t["function"]["name"] for t in TOOLS}
ASK = [{"role": "system", "content": "You are Clover Code."},
       {"role": "user", "content": "Fix the median function in stats/core.py; the tests fail."}]


class Biased(torch.nn.Module):
    """The output head plus a constant push toward one token."""

    def __init__(self, head: torch.nn.Module, token: int, strength: float):
        super().__init__()
        self.head = head
        self.bias = torch.zeros(head.weight.shape[0])
        self.bias[token] = strength

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.head(hidden) + self.bias


def engine(push: str | None = None, strength: float = 0.0, **options) -> EmbeddedEngine:
    # the threshold rule, as the cache-free reference decodes (the demo's own policy is faster)
    e = EmbeddedEngine(demo_model(), policy="threshold", **options)
    if push:
        e.denoiser.head = Biased(e.denoiser.head, e.tokenizer.convert_tokens_to_ids(push), strength)
    return e


def reply(e: EmbeddedEngine, tools=TOOLS, max_tokens: int = 96) -> str:
    async def go():
        return "".join([b.text async for b in e.stream(ChatRequest(ASK, tools, max_tokens=max_tokens))])
    return asyncio.run(go())


def calls(text: str):
    return written_calls(text)


def valid(call) -> bool:
    if call.call is None:
        return False
    return not isinstance(default_registry().validate(call.call.name, call.call.arguments), str)


@pytest.mark.parametrize("push, strength, wrong", [
    ("git", 7.0, lambda c: c.call is not None and c.call.name not in NAMES),  # a tool no one has
    ("files", 8.0, lambda c: c.call is not None and '"files"' in c.call.arguments),  # a key run_shell lacks
])
def test_what_the_head_prefers_is_never_committed_inside_a_call(push, strength, wrong):
    plain = calls(reply(engine(push, strength, scaffold=False)))
    assert any(wrong(c) for c in plain)  # the pushed head really writes it
    scaffolded = calls(reply(engine(push, strength)))
    assert scaffolded and all(valid(c) and not wrong(c) for c in scaffolded)


def test_no_scaffold_and_no_tools_decode_as_the_plain_loop():
    for e, tools in ((engine(scaffold=False), TOOLS), (engine(), [])):
        prompt = e.template.encode(ChatRequest(ASK, tools))
        blocks = reference_decode(e.denoiser.model, e.denoiser.props, prompt, 96, e.stop_ids)
        ids = [t for b in blocks for t in b if t not in e.stop_ids]
        assert reply(e, tools) == e.tokenizer.decode(ids)


def test_serve_scaffolds_requests_that_carry_tools():
    with serve_app(create_app(engine("git", 7.0), model_name="demo")) as url:
        client = openai.OpenAI(base_url=url, api_key="unused")
        answer = client.chat.completions.create(model="demo", messages=ASK, tools=TOOLS, max_tokens=96)
    made = answer.choices[0].message.tool_calls
    assert made and all(c.function.name in NAMES for c in made)
    assert answer.choices[0].finish_reason == "tool_calls"
