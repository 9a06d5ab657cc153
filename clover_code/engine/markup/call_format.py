"""How the checkpoint's chat template writes a tool call, learned by rendering one.

The scaffold (scaffold.py) decodes a call under the exact layout the model was trained on,
so the layout comes from the checkpoint's own template, not from a guess: a probe call
`probe_fn(alpha="xval", beta=...)` is rendered and cut around its known parts. Two families,
the two the tool-call parser reads (toolcalls.py):

    json:  <tool_call>{head}NAME{before_args}{"alpha": "xval", "beta": "yval"}{tail}</tool_call>
           (Qwen: head '\\n{"name": "', before_args '", "arguments": ', tail '}\\n')
    xml:   <tool_call>{head}NAME{before_args}{open}alpha{mid}xval{close}{open}beta{mid}...{close}{tail}</tool_call>
           (Qwen3-Coder: head '\\n<function=', mid '>\\n', and before_args + open '>\\n<parameter=',
            close + open '\\n</parameter>\\n<parameter=', close + tail '\\n</parameter>\\n</function>\\n':
            where one piece ends and the next begins does not matter, only the text they make)
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, cast

from clover_code.engine.markup.toolcalls import CLOSE, OPEN

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

log = logging.getLogger("clover_code.engine")
Family = Literal["json", "xml"]
_NAME, _KEYS, _VALUES = "probe_fn", ("alpha", "beta"), ("xval", "yval")


@dataclass(frozen=True)
class CallFormat:
    family: Family
    head: str  # after <tool_call>, before the tool's name
    before_args: str  # after the name, before the arguments
    tail: str  # after the arguments, before </tool_call>
    item_sep: str = ", "  # json: between members and items
    kv_sep: str = ": "  # json: between a key and its value
    param_open: str = ""  # xml: before a parameter's name
    param_mid: str = ""  # xml: between a parameter's name and its value
    param_close: str = ""  # xml: after a parameter's value


QWEN_JSON = CallFormat("json", '\n{"name": "', '", "arguments": ', "}\n")


def probe_call_format(tokenizer: PreTrainedTokenizerBase) -> CallFormat | None:
    """The layout the tokenizer's chat template gives a tool call, or None when it writes none
    that the parser would read."""
    args = {_KEYS[0]: _VALUES[0], _KEYS[1]: _VALUES[1]}
    tool = {"type": "function", "function": {"name": _NAME, "description": "probe", "parameters": {
        "type": "object", "properties": {k: {"type": "string"} for k in _KEYS}}}}
    messages = [{"role": "user", "content": "u"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_0", "type": "function", "function": {"name": _NAME, "arguments": args}}]}]
    try:
        text = tokenizer.apply_chat_template(cast(Any, messages), tools=[tool], tokenize=False)
    except Exception as e:  # a template without tool calls, or one that wants other fields
        log.info("no tool-call layout from the chat template (%s); scaffolding off", e)
        return None
    if not isinstance(text, str):
        return None
    at = text.rfind(_NAME)
    start, end = text.rfind(OPEN, 0, at), text.find(CLOSE, at)
    if at < 0 or start < 0 or end < 0:
        return None
    return _cut(text[start + len(OPEN):end])


def _cut(body: str) -> CallFormat | None:
    """The layout from a rendered probe call's body (between <tool_call> and </tool_call>)."""
    head, _, rest = body.partition(_NAME)
    a, b = (f'"{k}"' for k in _KEYS)
    if a in rest:  # json: the arguments object is written out
        before, _, after_a = rest.partition(a)
        if not before.endswith("{"):
            return None
        kv_sep, _, after_kv = after_a.partition(f'"{_VALUES[0]}"')
        item_sep, _, after_b = after_kv.partition(b)
        if not after_b.startswith(kv_sep + f'"{_VALUES[1]}"}}'):
            return None
        tail = after_b[len(kv_sep + f'"{_VALUES[1]}"}}'):]
        return CallFormat("json", head, before[:-1], tail, item_sep, kv_sep)
    pieces = _split(rest, [_KEYS[0], _VALUES[0], _KEYS[1], _VALUES[1]])
    if pieces is None:
        return None
    s1, mid, s3, mid2, s5 = pieces  # before_args+open, mid, close+open, mid, close+tail
    open_ = _common_suffix(s1, s3)
    close = s3[:len(s3) - len(open_)]
    if not open_ or mid != mid2 or not s5.startswith(close):
        return None
    return CallFormat("xml", head, s1[:len(s1) - len(open_)], s5[len(close):],
                      param_open=open_, param_mid=mid, param_close=close)


def _split(text: str, marks: list[str]) -> list[str] | None:
    out = []
    for mark in marks:
        before, found, text = text.partition(mark)
        if not found:
            return None
        out.append(before)
    return out + [text]


def _common_suffix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return a[len(a) - n:]
