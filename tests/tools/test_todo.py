"""todo_write: a checklist the model keeps; it touches nothing, so every mode runs it."""

from __future__ import annotations

import asyncio
import json

from clover_code.agent.permissions import Permissions
from clover_code.agent.todos import todos_changed
from clover_code.tools import BoundCall, ToolContext, default_registry
from clover_code.tools.workspace import Workspace

REGISTRY = default_registry()
ITEMS = [{"content": "read", "status": "done"}, {"content": "fix", "status": "in_progress"}, {"content": "test"}]


def bound(tmp_path, todos) -> BoundCall | str:
    return REGISTRY.bind("todo_write", {"todos": todos}, ToolContext(Workspace(tmp_path)))


def test_touches_nothing_and_runs_in_every_mode(tmp_path):
    call = bound(tmp_path, ITEMS)
    assert isinstance(call, BoundCall)
    touches = call.touches
    assert touches.known and not touches.reads and not touches.writes and touches.runs is None
    assert touches.summary == "1/3 done"
    for mode in ("plan", "ask", "auto-edit", "full-auto"):
        assert Permissions(mode).decide("todo_write", call.kind, touches) == "allow"
    result = asyncio.run(call.run())
    assert result.ok and "[~] fix" in result.output
    event = todos_changed("todo_write", result)
    assert event is not None and [(i.content, i.status) for i in event.items] == [
        ("read", "done"), ("fix", "in_progress"), ("test", "pending")]
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_mistakes_are_told_to_the_model(tmp_path):
    two = bound(tmp_path, [{"content": "a", "status": "in_progress"}, {"content": "b", "status": "in_progress"}])
    assert isinstance(two, BoundCall)
    result = asyncio.run(two.run())
    assert not result.ok and "only one item may be in_progress" in result.output
    assert "todos.0.status" in str(bound(tmp_path, [{"content": "a", "status": "started"}]))


def test_schema_is_self_contained():
    (schema,) = [s for s in REGISTRY.schemas() if s["function"]["name"] == "todo_write"]
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and '"title"' not in text
    item = schema["function"]["parameters"]["properties"]["todos"]["items"]
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "done"]


def test_the_call_grammar_holds_a_todo_call_to_its_items():
    from clover_code.engine.markup.call_format import QWEN_JSON
    from clover_code.engine.markup.call_grammar import CallGrammar
    from tests.support.grammar import call

    grammar = CallGrammar(QWEN_JSON, REGISTRY.schemas())

    def accepts(text: str) -> bool:
        state = grammar.start
        for c in text:
            state = grammar.feed(state, c)
            if state is None:
                return False
        return not grammar.inside_call(state)

    assert accepts(call("todo_write", {"todos": ITEMS}, QWEN_JSON))
    assert not accepts(call("todo_write", {"todos": [{"content": "a", "status": "started"}]}, QWEN_JSON))
    assert not accepts(call("todo_write", {"todos": [{"text": "a"}]}, QWEN_JSON))
