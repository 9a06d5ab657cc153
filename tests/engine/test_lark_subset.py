"""Freeform tool input under its Lark grammar (lark_subset.py, json_grammar.py's GStr): the
subset compiles to a character automaton, what lies outside it says so (the input is then plain
text), and inside a call the input is written as json.dumps writes it, under the grammar."""

import json

import pytest
from test_call_grammar import DEMO, accepts, call

from clover_code.engine.markup.call_grammar import CallGrammar
from clover_code.engine.markup.lark_subset import Unsupported, compile_lark

# A patch format in the shape of Codex's apply_patch grammar (a begin line, hunks, an end line).
PATCH = "\n".join([
    'start: begin_patch hunk+ end_patch',
    'begin_patch: "*** Begin Patch" LF',
    'end_patch: "*** End Patch" LF?',
    'hunk: add_hunk | delete_hunk | update_hunk',
    'add_hunk: "*** Add File: " filename LF add_line+',
    'delete_hunk: "*** Delete File: " filename LF',
    'update_hunk: "*** Update File: " filename LF change?',
    'filename: /(.+)/',
    'add_line: "+" /(.*)/ LF -> line',
    'change: (context | change_line)+',
    'context: ("@@" | "@@ " /(.+)/) LF',
    'change_line: ("+" | "-" | " ") /(.*)/ LF',
    '%import common.LF',
])
GOOD = ("*** Begin Patch\n*** Update File: a.py\n@@ def f\n-    x = 1\n+    x = 2\n*** Add File: b.txt\n+hi\n"
        "*** End Patch\n")
TOOL = {"type": "function", "function": {"name": "apply_patch", "parameters": {
    "type": "object", "properties": {"input": {"type": "string", "x-lark": PATCH}}, "required": ["input"]}}}


def language(definition: str, text: str) -> bool:
    machine = compile_lark(definition)
    states = machine.start
    for c in text:
        states = machine.step(states, c)
        if not states:
            return False
    return machine.accepts(states)


@pytest.mark.parametrize(("text", "ok"), [
    (GOOD, True), (GOOD[:-1], True),  # the last newline is optional
    ("*** Begin Patch\n*** End Patch\n", False),  # hunk+: at least one
    (GOOD.replace("+hi", "hi"), False),  # an added line without its "+"
    (GOOD.replace("a.py\n", "\n"), False),  # a file name of no characters
    ("diff --git a/x b/x\n", False),
])
def test_the_patch_grammar_as_a_language(text, ok):
    assert language(PATCH, text) is ok


def test_regexes_of_the_subset():
    assert language('start: /a[b-d]+(x|yz)?\\.[^\\n]*/', "abdcyz.any thing")
    assert not language('start: /a[b-d]+(x|yz)?\\.[^\\n]*/', "ae.")
    assert language('start: "a" ["b"] "c"*\n', "acc") and language('start: "a" ["b"] "c"*\n', "ab")


@pytest.mark.parametrize("definition", [
    'start: "(" start ")" | "x"',  # recursive: not regular
    'start: WORD\n%import common.WORD',  # an import the subset lacks
    'start: "a"\n%ignore " "',
    'start: /abc/i',  # regex flags
    'start: /\\d+/',  # classes by name
    'rule: "a"',  # no start
    'start: other',  # undefined
])
def test_what_lies_outside_the_subset_says_so(definition):
    with pytest.raises(Unsupported):
        compile_lark(definition)


def test_inside_a_call_the_input_follows_the_grammar_as_json_writes_it():
    grammar = CallGrammar(DEMO, [TOOL])
    tricky = GOOD.replace("+hi", '+say "hi"\\ \there')  # a quote, a backslash, a tab: escaped as json.dumps does
    assert accepts(grammar, call("apply_patch", {"input": tricky}))
    assert not accepts(grammar, call("apply_patch", {"input": GOOD.replace("+hi", "hi")}))
    written = call("apply_patch", {"input": GOOD})
    assert not accepts(grammar, written.replace("\\n", "\\u000a"))  # not how json.dumps spells a newline
    state = grammar.start
    for c in written[:written.index('"*** ')]:
        state = grammar.feed(state, c)
    assert grammar.forced(state)[0] == json.dumps("*** Begin Patch\n*** ")[:-1]  # the grammar writes it
    plain = CallGrammar(DEMO, [{"type": "function", "function": {"name": "apply_patch", "parameters": {
        "type": "object", "properties": {"input": {"type": "string", "x-lark": 'start: "(" start ")"'}}}}}])
    assert accepts(plain, call("apply_patch", {"input": "anything"}))  # outside the subset: plain text
