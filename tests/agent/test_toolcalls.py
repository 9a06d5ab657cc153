"""The tool-call parser on both Qwen formats, fed a character or a block at a time."""

import json

import pytest

from clover_code.engine.markup.toolcalls import Debris, ParsedCall, ToolCallParser, split_text

QWEN = ('Let me look.\n<tool_call>\n{"name": "read_file", "arguments": {"path": "src/a.py", "limit": 20}}\n'
        '</tool_call>\nand then <tool_call>{"name": "run_shell", "arguments": {"command": "pytest -q"}}'
        '</tool_call> done.')
CODER = ('Reading it.\n<tool_call>\n<function=edit_file>\n<parameter=path>\nsrc/a.py\n</parameter>\n'
         '<parameter=old>\ndef f():\n    return 1\n</parameter>\n<parameter=count>\n2\n</parameter>\n'
         '</function>\n</tool_call>\nok')
SCHEMAS = [{"type": "function", "function": {"name": "edit_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "old": {"type": "string"}, "count": {"type": "integer"}}}}}]


def feed_all(text, size, tools=None):
    parser = ToolCallParser(tools)
    visible, calls = "", []
    for at in range(0, len(text), size):
        shown, done = parser.feed(text[at:at + size])
        visible += shown
        assert "<tool_call" not in visible and "<function" not in visible
        calls += done
    shown, done = parser.finish()
    return visible + shown, calls + done


@pytest.mark.parametrize("size", [1, 2, 7, 32, 10_000])
def test_qwen_json_format(size):
    visible, calls = feed_all(QWEN, size)
    assert visible == "Let me look.\n\nand then  done."
    assert [c.call.name for c in calls] == ["read_file", "run_shell"]
    assert json.loads(calls[0].call.arguments) == {"path": "src/a.py", "limit": 20}
    assert json.loads(calls[1].call.arguments) == {"command": "pytest -q"}
    assert all(c.error is None and c.raw.startswith("<tool_call>") and c.raw.endswith("</tool_call>") for c in calls)
    assert calls[0].call.id != calls[1].call.id


@pytest.mark.parametrize("size", [1, 3, 32, 10_000])
def test_qwen3_coder_format(size):
    visible, calls = feed_all(CODER, size, SCHEMAS)
    assert visible == "Reading it.\n\nok"
    (call,) = calls
    assert call.call.name == "edit_file"
    assert json.loads(call.call.arguments) == {"path": "src/a.py", "old": "def f():\n    return 1", "count": 2}


def test_xml_values_json_decoded_without_schema_and_missing_close_tag():
    text = ("<tool_call><function=grep><parameter=pattern>\n123\n<parameter=paths>[\"a\", \"b\"]"
            "</parameter><parameter=note>not json</parameter></function></tool_call>")
    (call,) = split_text(text)
    assert json.loads(call.call.arguments) == {"pattern": 123, "paths": ["a", "b"], "note": "not json"}
    # with a schema saying it is a string, "123" stays a string
    schema = [{"type": "function", "function": {"name": "grep", "parameters": {"properties": {
        "pattern": {"type": "string"}}}}}]
    (call,) = split_text(text, schema)
    assert json.loads(call.call.arguments)["pattern"] == "123"


def test_call_split_across_blocks_completes_on_closing_tag():
    parser = ToolCallParser()
    assert parser.feed("I will read <tool") == ("I will read ", [])
    assert parser.feed('_call>{"name": "read_file", "argu') == ("", [])
    assert parser.feed('ments": {"path": "x"}}</tool_') == ("", [])
    shown, calls = parser.feed("call> after")
    assert shown == " after" and calls[0].call.name == "read_file"
    assert parser.finish() == ("", [])


def test_held_prefix_that_is_not_a_tag_is_released():
    parser = ToolCallParser()
    assert parser.feed("if a <tool") == ("if a ", [])
    assert parser.feed("s> b") == ("<tools> b", [])
    assert parser.feed("x <") == ("x ", [])
    assert parser.finish() == ("<", [])


@pytest.mark.parametrize("body, error", [
    ('{"name": "read_file", "arguments": {"path": "x"}', "not valid JSON"),
    ('{"arguments": {}}', 'no "name"'),
    ('["read_file"]', "JSON object"),
    ('{"name": "read_file", "arguments": "{bad"}', "not valid JSON"),
    ('{"name": "read_file", "arguments": [1]}', "JSON object"),
    ("", "empty"),
    ("<function=>x</function>", "no name"),
    ("<function=read_file>just text</function>", "<parameter=NAME>"),
])
def test_malformed_calls_are_reported_not_raised(body, error):
    text = f"a<tool_call>{body}</tool_call>b"
    for size in (1, len(text)):
        visible, calls = feed_all(text, size)
        assert visible == "ab"
        (bad,) = calls
        assert bad.call is None and error in bad.error and bad.raw == f"<tool_call>{body}</tool_call>"


def test_name_guess_for_malformed_call():
    (_, bad, _) = split_text('x<tool_call>{"name": "edit_file", "arguments": {"path": </tool_call>y')
    assert bad.call is None and bad.name == "edit_file"


def test_parameters_key_and_double_encoded_arguments():
    (a,) = split_text('<tool_call>{"name": "glob", "parameters": {"pattern": "*.py"}}</tool_call>')
    (b,) = split_text('<tool_call>{"name": "glob", "arguments": "{\\"pattern\\": \\"*.py\\"}"}</tool_call>')
    assert json.loads(a.call.arguments) == json.loads(b.call.arguments) == {"pattern": "*.py"}


@pytest.mark.parametrize("size", [1, 5, 10_000])
def test_truncated_call_is_cut_off_at_finish(size):
    text = 'Editing now <tool_call>{"name": "write_file", "arguments": {"path": "a.py", "content": "def'
    visible, calls = feed_all(text, size)
    assert visible == "Editing now "
    (cut,) = calls
    assert cut.call is None and "cut off" in cut.error and cut.name == "write_file"
    assert cut.raw == text[len("Editing now "):]


def test_new_call_before_close_cuts_the_first_off():
    text = '<tool_call>{"name": "a", <tool_call>{"name": "glob", "arguments": {}}</tool_call>'
    first, second = split_text(text)
    assert first.call is None and "cut off" in first.error
    assert second.call.name == "glob"


def test_split_text_keeps_order():
    parts = split_text(QWEN)
    assert [type(p).__name__ for p in parts] == ["str", "ParsedCall", "str", "ParsedCall", "str"]


READ = '<tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>'


@pytest.mark.parametrize("text, visible", [
    (READ + '}}</tool_call>', ""),  # what the demo model wrote after a closed call
    ("Reading." + READ + '"}}\n</tool_call> Then more.', "Reading. Then more."),
    (READ + " }}", ""),  # a lone `}}` the reply ends on
    (READ + "\n]}\n" + READ + "}\nDone.", "Done."),
    ("}}" + READ, ""),  # a reply that opens on a call's leftovers
    ("Done.</tool_call>", "Done."),
    ("a </tool_response> b </function></parameter><|im_end|>", "a  b "),
    ("All done. </tool_c", "All done. "),  # a tag the reply's end cut off
    ("All done.<|im_", "All done."),
])
@pytest.mark.parametrize("size", [1, 2, 5, 10_000])
def test_markup_debris_is_never_shown(text, visible, size):
    shown, calls = feed_all(text, size)
    assert shown.strip() == visible.strip() and not [t for t in ("}", "</", "<|") if t in shown]
    assert all(c.call is not None and c.call.name == "read_file" for c in calls)


@pytest.mark.parametrize("size", [1, 3, 10_000])
def test_prose_after_a_call_stays(size):
    text = READ + '\n"Quoted" words, {braces} and a closing } stay; so does a <tag> and a < b.'
    shown, _ = feed_all(text, size)
    assert shown == text[len(READ):]


def segment_text(segment) -> str:
    return segment if isinstance(segment, str) else segment.raw if isinstance(segment, ParsedCall) else segment.text


@pytest.mark.parametrize("text", [
    QWEN, CODER, READ + '"}}\n</tool_call> Then', "x <tool_call>{bad</tool_call>}} y </tool_c",
    '<tool_call>{"name": "a", <tool_call>{"name": "b"}', "<tool_call> </tool_call>true 1 </tool_response> 1",
])
@pytest.mark.parametrize("size", [1, 4, 10_000])
def test_every_byte_of_a_reply_is_text_a_call_or_debris(text, size):
    parser, segments = ToolCallParser(), []
    for at in range(0, len(text), size):
        segments += parser.feed_segments(text[at:at + size])
    segments += parser.finish_segments()
    assert "".join(map(segment_text, segments)) == text
    assert all(not isinstance(s, Debris) or s.text.strip() for s in segments)
