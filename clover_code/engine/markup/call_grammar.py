"""The grammar of a reply: free text, and tool calls in the checkpoint's layout with the
request's tools, one character at a time.

Outside a call anything goes; `<tool_call>` opens a call, which must then be written the
way the chat template writes one (call_format.py): a known tool's name, then its arguments
under its schema (json_grammar.py) or, in the XML family, `<parameter=NAME>` blocks of its
parameters with free values, then `</tool_call>`. States are stacks of frames (hashable);
`feed` runs text through, `allowed` lists the characters that may come next, `forced` is the
text every continuation starts with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from clover_code.engine.markup.call_format import CallFormat
from clover_code.engine.markup.json_grammar import (
    OPEN_OBJECT,
    WHITESPACE,
    Allowed,
    Enum,
    Feed,
    Frame,
    GStr,
    JsonRules,
    Key,
    Lit,
    Node,
    Num,
    Schemas,
    Stack,
    Step,
    Str,
    Value,
    _top,
    is_gap,
)
from clover_code.engine.markup.toolcalls import CLOSE, OPEN
from clover_code.engine.policies import Kind

FORCED_LIMIT = 256  # characters of forced text looked at once


@dataclass(frozen=True, slots=True)
class Top(Frame):  # free text; `matched` characters of <tool_call> seen
    matched: int = 0


@dataclass(frozen=True, slots=True)
class Name(Frame):  # a tool's name being written
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class Params(Frame):  # xml: another parameter or the end of the call; `i` characters of either matched
    tool: int
    used: frozenset[str] = frozenset()
    i: int = 0


@dataclass(frozen=True, slots=True)
class ParamName(Frame):  # xml: a parameter's name being written
    tool: int
    used: frozenset[str]
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class ParamValue(Frame):  # xml: free text until the closing tag; `matched` characters of it seen
    matched: int = 0


FREE_FRAMES = (Top, Str, ParamValue)  # where text is the model's own
CONTENT_FRAMES = (Str, GStr, ParamValue)  # inside a value's text: no added token lands there
VALUE_FRAMES = (Str, ParamValue, Num, Enum)  # a value's contents: the model's own text, more or less free
NAME_FRAMES = (Key, Name, ParamName)  # a key or a tool's name: one of the schema's, spelt out


class CallGrammar:
    """Replies with tool calls of `tools` (OpenAI function schemas) in the layout `fmt`;
    `required`: a reply that opens with a call (free text may follow it)."""

    def __init__(self, fmt: CallFormat, tools: Iterable[Mapping[str, object]], required: bool = False):
        schemas = Schemas()
        functions = [f for t in tools if isinstance(f := t.get("function", t), dict)
                     and isinstance(f.get("name"), str) and f["name"]]
        self.names = tuple(f["name"] for f in functions)
        self.index = {name: i for i, name in enumerate(self.names)}
        self.args = tuple(schemas.add(f.get("parameters") or {"type": "object", "properties": {}}) for f in functions)
        self.nodes: list[Node] = schemas.nodes
        self.fmt, self.end = fmt, fmt.tail + CLOSE
        self.json = JsonRules(self.nodes, fmt.item_sep, fmt.kv_sep, schemas.machines)
        self.feeds: dict[type, Feed] = {**self.json.feeds, Top: self._top, Name: self._name, Params: self._params,
                                        ParamName: self._param_name, ParamValue: self._param_value}
        self.lists: dict[type, Allowed] = {**self.json.lists, Top: _free, Name: self._name_chars,
                                           Params: self._params_chars, ParamName: self._param_name_chars,
                                           ParamValue: _free}
        # Required: the state just inside `<tool_call>`, with the tag itself still to write.
        self.start: Stack = (Top(), Name()) + _lit(fmt.head) + _lit(OPEN) if required and self.names else (Top(),)

    # -- the interface -------------------------------------------------------------------------
    def feed(self, stack: Stack, text: str, structural: bool = False, strict: bool = False) -> Stack | None:
        """The state after `text`, or None when the grammar rules it out. `structural`: text that
        may not land in free text inside a call (an added token such as `<|im_end|>`). `strict`:
        only the template's layout, none of the whitespace JSON adds (json_grammar.py), which is
        kept where the model wrote it but never picked for it."""
        for c in text:
            while True:
                frame = stack[-1]
                if structural and isinstance(frame, CONTENT_FRAMES):
                    return None
                if strict and c in WHITESPACE and is_gap(frame):
                    return None
                step = self.feeds[type(frame)](stack, c)
                if step is None:
                    return None
                stack, consumed = step
                if consumed:
                    break
        return stack

    def inside_call(self, stack: Stack) -> bool:
        return len(stack) > 1

    def kind(self, stack: Stack) -> Kind:
        """Where the next character falls: prose (outside a call), a value's contents, a key or
        tool name, or the call's structure (brackets, quotes, separators, tags)."""
        frame = stack[-1]
        if not self.inside_call(stack):
            return "prose"
        if isinstance(frame, VALUE_FRAMES):
            return "string"
        return "key" if isinstance(frame, NAME_FRAMES) else "structure"

    def allowed(self, stack: Stack) -> frozenset[str] | None:
        return self.lists[type(stack[-1])](stack)

    def forced(self, stack: Stack) -> tuple[str, frozenset[str] | None]:
        """The text every continuation of `stack` starts with, and what may follow it."""
        out: list[str] = []
        while len(out) < FORCED_LIMIT:
            chars = self.allowed(stack)
            if chars is None or len(chars) != 1:
                return "".join(out), chars
            (c,) = chars
            nxt = self.feed(stack, c)
            if nxt is None:  # cannot happen for a consistent grammar; stop forcing rather than loop
                return "".join(out), None
            out.append(c)
            stack = nxt
        return "".join(out), None

    # -- free text and the call's envelope -----------------------------------------------------
    def _top(self, stack: Stack, c: str) -> Step:
        m = _top(stack, Top).matched
        if c != OPEN[m]:
            return (Top(1 if c == OPEN[0] else 0),), True
        if m + 1 < len(OPEN):
            return (Top(m + 1),), True
        return (Top(), Name()) + _lit(self.fmt.head), True

    def _after_name(self, tool: int) -> Stack:
        if self.fmt.family == "xml":
            return (Params(tool),) + _lit(self.fmt.before_args)
        return _lit(self.end) + (Value(self.args[tool]),) + _lit(self.fmt.before_args)

    def _name(self, stack: Stack, c: str) -> Step:
        prefix = _top(stack, Name).prefix
        if any(n.startswith(prefix + c) for n in self.names):
            return stack[:-1] + (Name(prefix + c),), True
        if prefix in self.index:
            return stack[:-1] + self._after_name(self.index[prefix]), False
        return None

    def _name_chars(self, stack: Stack) -> frozenset[str] | None:
        prefix = _top(stack, Name).prefix
        chars = frozenset(n[len(prefix)] for n in self.names if n.startswith(prefix) and len(n) > len(prefix))
        if prefix not in self.index:
            return chars
        after = self.allowed(stack[:-1] + self._after_name(self.index[prefix]))
        return None if after is None else chars | after

    # -- xml parameters ------------------------------------------------------------------------
    def _schema(self, tool: int) -> Node:
        node = self.nodes[self.args[tool]]
        return node if node.kind == "object" else self.nodes[OPEN_OBJECT]

    def _options(self, p: Params) -> list[str]:
        node = self._schema(p.tool)
        more = not node.closed or any(k not in p.used for k in node.keys)
        return ([self.fmt.param_open] if more else []) + ([self.end] if node.required <= p.used else [])

    def _params(self, stack: Stack, c: str) -> Step:
        p = _top(stack, Params)
        matches = [o for o in self._options(p) if len(o) > p.i and o[p.i] == c]
        if not matches:
            return None
        if len(matches) > 1 or len(matches[0]) > p.i + 1:
            return stack[:-1] + (Params(p.tool, p.used, p.i + 1),), True
        if matches[0] == self.end:
            return stack[:-1], True  # the call is over: free text again
        return stack[:-1] + (ParamName(p.tool, p.used),), True

    def _params_chars(self, stack: Stack) -> frozenset[str]:
        p = _top(stack, Params)
        return frozenset(o[p.i] for o in self._options(p) if len(o) > p.i)

    def _param_names(self, n: ParamName) -> list[str] | None:
        node = self._schema(n.tool)
        if not node.closed:
            return None
        return [k for k in node.keys if k not in n.used and k.startswith(n.prefix)]

    def _param_name(self, stack: Stack, c: str) -> Step:
        n = _top(stack, ParamName)
        names, mid = self._param_names(n), self.fmt.param_mid
        extends = (any(k.startswith(n.prefix + c) for k in names) if names is not None
                   else c not in "<>\n" and c != mid[0])
        if extends:
            return stack[:-1] + (ParamName(n.tool, n.used, n.prefix + c),), True
        complete = n.prefix in names if names is not None else bool(n.prefix)
        if not complete:
            return None
        return stack[:-1] + (Params(n.tool, n.used | {n.prefix}), ParamValue()) + _lit(mid), False

    def _param_name_chars(self, stack: Stack) -> frozenset[str] | None:
        n = _top(stack, ParamName)
        names = self._param_names(n)
        if names is None:
            return None
        return frozenset(k[len(n.prefix)] if len(k) > len(n.prefix) else self.fmt.param_mid[0] for k in names)

    def _param_value(self, stack: Stack, c: str) -> Step:
        m, close = _top(stack, ParamValue).matched, self.fmt.param_close
        if c == close[m]:
            return (stack[:-1], True) if m + 1 == len(close) else (stack[:-1] + (ParamValue(m + 1),), True)
        return stack[:-1] + (ParamValue(1 if c == close[0] else 0),), True


def _lit(text: str) -> Stack:
    return (Lit(text),) if text else ()


def _free(stack: Stack) -> None:
    return None
