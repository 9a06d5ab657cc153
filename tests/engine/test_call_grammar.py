"""The reply grammar (call_grammar.py, json_grammar.py) and the call layout probe, character
by character: both call families, schema keys and types, escapes, forced text."""

import pytest

from clover_code.engine.markup.call_format import QWEN_JSON, probe_call_format
from clover_code.engine.markup.call_grammar import CallGrammar
from tests.support.grammar import DEMO, READ, STATUS, TOOLS, XML, XML_TEMPLATE, call


def accepts(grammar: CallGrammar, text: str) -> bool:
    state = grammar.start
    for c in text:
        state = grammar.feed(state, c)
        if state is None:
            return False
    return not grammar.inside_call(state)  # every call closed


@pytest.mark.parametrize("fmt", [DEMO, QWEN_JSON, XML], ids=["demo", "qwen", "xml"])
def test_well_formed_calls_among_free_text_are_accepted(fmt):
    grammar = CallGrammar(fmt, TOOLS)
    text = ("Let me look. " + call("read_file", {"path": "src/ä b.py", "limit": 20}, fmt) + " then "
            + call("git_status", {}, fmt) + call("edit_file", {"path": "a", "old_string": 'x "q"\n\\'}, fmt) + " done")
    assert accepts(grammar, text)


@pytest.mark.parametrize("text", [
    call("read_files", {"path": "a"}),  # unknown tool
    call("read_file", {"pathx": "a"}),  # a key the schema lacks
    call("read_file", {}),  # a required key missing
    call("read_file", {"path": 3}),  # wrong type
    call("read_file", {"path": "a", "limit": 1.5}),  # not an integer
    call("run_shell", {"command": ""}),  # minLength 1
    call("run_shell", {"command": "ls", "mode": "medium"}),  # not in the enum
    call("run_shell", {"command": "ls", "env": ["A", 1]}),  # array item of the wrong type
    call("read_file", {"path": "a", "path2": "b"}),
    '<tool_call>{"name": "read_file", "arguments": {"path": "a\\q"}}</tool_call>',  # bad escape
    '<tool_call>{"name": "read_file", "arguments": {"path": "a\n"}}</tool_call>',  # raw control character
    '<tool_call>{"name": "read_file", "arguments": {"path":"a"}}</tool_call>',  # not the template's separators
    '<tool_call>{"name": "read_file", "arguments": {"path": "a"}</tool_call>',  # a brace short
])
def test_calls_the_grammar_rules_out(text):
    assert not accepts(CallGrammar(DEMO, TOOLS), text)


def test_values_of_every_kind_the_schemas_allow():
    grammar = CallGrammar(DEMO, TOOLS)
    assert accepts(grammar, call("run_shell", {"command": "ls", "timeout": -1.5e3, "mode": "slow", "env": []}))
    assert accepts(grammar, call("run_shell", {"command": "ls", "timeout": None, "env": ["a", "b"]}))
    assert accepts(grammar, call("edit_file", {"path": "a", "old_string": "\\u00e9\t", "replace_all": True}))


def test_xml_calls_need_known_names_and_parameters():
    grammar = CallGrammar(XML, TOOLS)
    assert accepts(grammar, call("read_file", {"path": "a\n</par\nb"}, XML))
    assert not accepts(grammar, call("read_file", {"paht": "a"}, XML))
    assert not accepts(grammar, call("reed_file", {"path": "a"}, XML))
    assert not accepts(grammar, call("read_file", {}, XML))  # path is required


@pytest.mark.parametrize("fmt", [DEMO, QWEN_JSON], ids=["demo", "qwen"])
def test_more_whitespace_before_a_key_is_accepted_but_never_forced(fmt):
    grammar = CallGrammar(fmt, TOOLS)
    spaced = call("edit_file", {"path": "a", "old_string": "b"}, fmt).replace(', "old', ',  "old')
    assert accepts(grammar, spaced.replace('{"path', '{ \n"path'))
    assert not accepts(grammar, spaced.replace('"a",', '"a" ,'))  # before a separator: not the template's
    assert not accepts(grammar, spaced.replace(': "a"', ':  "a"'))  # before a value: a string's content?
    state = grammar.feed(grammar.start, spaced[:spaced.index('"a"') + 3] + ",")
    assert grammar.forced(state) == (' "', frozenset("or"))  # old_string, replace_all: the template's space only


def test_forced_text_is_the_template_between_choices():
    grammar = CallGrammar(DEMO, TOOLS)
    state = grammar.feed(grammar.start, "<tool_call>")
    assert grammar.forced(state) == ('{"name": "', frozenset("regr"))  # read_file, edit_file, run_shell, git_status
    state = grammar.feed(state, '{"name": "read_f')
    assert grammar.forced(state) == ('ile", "arguments": {"', frozenset("pol"))  # path, offset, limit
    state = grammar.feed(grammar.start, call("git_status", {})[:-len('}}</tool_call>')])
    assert grammar.forced(state)[0] == "}}</tool_call>"
    xml = CallGrammar(XML, TOOLS)
    state = xml.feed(xml.start, "<tool_call>\n<function=read_file>\n<parameter=path>\nx\n</parameter")
    assert xml.forced(state) == (">\n<", frozenset("p/"))


def test_the_layout_comes_from_the_chat_template():
    from transformers import AutoTokenizer

    from clover_code.models import demo_model

    tokenizer = AutoTokenizer.from_pretrained(demo_model())
    assert probe_call_format(tokenizer) == DEMO
    tokenizer.chat_template = XML_TEMPLATE
    assert accepts(CallGrammar(probe_call_format(tokenizer), TOOLS), call("read_file", {"path": "a"}, XML))


@pytest.mark.parametrize("fmt", [DEMO, QWEN_JSON, XML], ids=["demo", "qwen", "xml"])
def test_a_required_call_opens_the_reply_and_free_text_may_follow(fmt):
    grammar = CallGrammar(fmt, [READ, STATUS], required=True)
    assert grammar.forced(grammar.start)[0].startswith("<tool_call>" + fmt.head)  # the scaffold writes it
    assert accepts(grammar, call("git_status", {}, fmt) + " done")
    assert not accepts(grammar, "Sure. " + call("git_status", {}, fmt))  # text first: ruled out
    only = CallGrammar(fmt, [READ], required=True)  # one tool: its name is forced too
    assert only.forced(only.start)[0].startswith("<tool_call>" + fmt.head + "read_file")
