"""JSON values under a tool's argument schema, one character at a time.

A recognizer state is a stack of frames (frozen dataclasses, so a state hashes and can be
memoized); the top frame is the last. Each frame kind has a `feed` (the next stack and
whether the character was consumed, or None when the character is ruled out) and an
`allowed` (the characters that may come next, or None when too many to list). JSON is
written the way the chat template writes it (`json.dumps`: no whitespace but the
separators `, ` and `: `), so separators, brackets and the keys' quotes are forced; the
contents of strings and numbers are free. More whitespace before a key (after an object's
"{" or a separator) is JSON too: it is accepted where the model writes it, never forced
(`is_gap` says where; the scaffold never picks it in place of the model's token). Ruled
out, it was withdrawn, and the model's committed text to its right stood a position off: the
quote that was to open a string closed it. Before a value a space stays ruled out: there a
model's space is as likely a string's first content (indentation) a position early.

What the schema rules out: a key it lacks (when it lists properties), a closing brace before
every required key, a value of the wrong type, an empty string where minLength >= 1, a value
outside an enum, and a string outside the Lark grammar an `x-lark` keyword gives it (a
freeform tool's input, lark_subset.py: its text is then written as `json.dumps` writes it).
Numeric bounds and longer minimum lengths are left to the tool's validator.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from clover_code.engine.markup.lark_subset import CharMachine, Unsupported, compile_lark

NodeKind = Literal["string", "integer", "number", "boolean", "null", "enum", "array", "object", "union"]
ANY = 0  # node id of "any JSON value"
OPEN_OBJECT = 3  # node id of "an object with any keys"
DIGITS = frozenset("0123456789")
WHITESPACE = frozenset(" \t\n\r")  # JSON's


@dataclass(frozen=True)
class Node:
    kind: NodeKind
    min_length: int = 0  # string: 0 or 1
    literals: tuple[str, ...] = ()  # enum: the JSON texts allowed
    item: int = ANY  # array: node of every item
    keys: tuple[str, ...] = ()  # object: property names as written (JSON-escaped)
    children: tuple[int, ...] = ()  # object: node per key; union: the members
    required: frozenset[str] = frozenset()
    closed: bool = False  # object: only `keys` (else any key, any value)
    machine: int = -1  # string: the automaton (Schemas.machines) of the grammar it follows, if any


# -- frames ------------------------------------------------------------------------------------

class Frame:
    """A recognizer frame; the kinds below (and call_grammar's) subclass it."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Value(Frame):  # a value of `node` starts here
    node: int


@dataclass(frozen=True, slots=True)
class Lit(Frame):  # `text`, of which `i` characters are matched
    text: str
    i: int = 0


@dataclass(frozen=True, slots=True)
class Str(Frame):  # string content; esc: 0 plain, 1 after a backslash, 10 + k with k + 1 hex digits to go
    need: int = 0  # characters still needed (a minimum length of one)
    esc: int = 0


@dataclass(frozen=True, slots=True)
class GStr(Frame):  # string content under a grammar; esc: 0 plain, 1 after a backslash, 2 in \uXXXX
    machine: int
    states: frozenset[int]
    esc: int = 0
    code: str = ""  # \u digits so far


@dataclass(frozen=True, slots=True)
class Num(Frame):
    # stage: "-", leading "0", integer digits "d", ".", fraction "f", "e", exponent sign "s", exponent "x"
    stage: str
    integer: bool


@dataclass(frozen=True, slots=True)
class Enum(Frame):  # the enum texts still possible, `i` characters matched
    literals: tuple[str, ...]
    i: int = 0


@dataclass(frozen=True, slots=True)
class Obj(Frame):  # stage 0: after "{", 1: after a member, 2: after a separator
    node: int
    used: frozenset[str] = frozenset()
    stage: int = 0


@dataclass(frozen=True, slots=True)
class Key(Frame):  # a key of a closed object being written (the Obj is the frame below)
    node: int
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class Arr(Frame):  # stage 0: after "[", 1: after an item, 2: after a separator
    node: int
    stage: int = 0


F = TypeVar("F", bound=Frame)
Stack = tuple[Frame, ...]
Step = tuple[Stack, bool] | None  # (next stack, character consumed), or None: ruled out
Feed = Callable[[Stack, str], Step]
Allowed = Callable[[Stack], frozenset[str] | None]


# -- schemas -----------------------------------------------------------------------------------

class Schemas:
    """JSON schemas compiled to nodes, which frames refer to by index."""

    def __init__(self) -> None:
        self.nodes: list[Node] = [Node("union")]  # ANY, filled in below
        self.machines: list[CharMachine] = []
        members = tuple(self._add(Node(k)) for k in ("string", "number", "object", "boolean", "null"))
        assert members[2] == OPEN_OBJECT
        self.nodes[ANY] = Node("union", children=members + (self._add(Node("array", item=ANY)),))

    def _add(self, node: Node) -> int:
        self.nodes.append(node)
        return len(self.nodes) - 1

    def add(self, schema: object) -> int:
        """The node of a JSON schema (the parts of it a grammar can hold)."""
        if not isinstance(schema, dict):
            return ANY
        if "const" in schema:
            return self._add(Node("enum", literals=(_dumps(schema["const"]),)))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self._add(Node("enum", literals=tuple(_dumps(v) for v in schema["enum"])))
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return self._union([self.add(s) for s in schema[key]])
        kind = schema.get("type")
        if isinstance(kind, list):
            return self._union([self.add({**schema, "type": k}) for k in kind])
        if kind == "string":
            return self._add(Node("string", min_length=min(1, int(schema.get("minLength") or 0)),
                                  machine=self._machine(schema.get("x-lark"))))
        if kind in ("integer", "number", "boolean", "null"):
            return self._add(Node(kind))
        if kind == "array":
            return self._add(Node("array", item=self.add(schema.get("items"))))
        if kind == "object" or "properties" in schema:
            return self._object(schema)
        return ANY

    def _machine(self, lark: object) -> int:
        """The automaton of a string's Lark grammar; -1 (plain text) without one in the subset."""
        if not isinstance(lark, str):
            return -1
        try:
            self.machines.append(compile_lark(lark))
        except Unsupported:
            return -1
        return len(self.machines) - 1

    def _object(self, schema: dict[str, object]) -> int:
        props, extra = schema.get("properties"), schema.get("additionalProperties")
        if not isinstance(props, dict) or extra is True or isinstance(extra, dict):
            return self._add(Node("object"))
        listed = schema.get("required")
        required: list[object] = listed if isinstance(listed, list) else []
        names = list(props)
        return self._add(Node("object", keys=tuple(_key_text(k) for k in names),
                              children=tuple(self.add(props[k]) for k in names),
                              required=frozenset(_key_text(k) for k in required if k in props), closed=True))

    def _union(self, members: list[int]) -> int:
        if ANY in members:
            return ANY
        members.sort(key=lambda m: self.nodes[m].kind != "number")  # "1.5" starts like an integer: try number first
        return members[0] if len(members) == 1 else self._add(Node("union", children=tuple(members)))


def _dumps(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def _key_text(key: object) -> str:
    return _dumps(str(key))[1:-1]


# -- rules -------------------------------------------------------------------------------------

class JsonRules:
    """How each JSON frame takes a character and what it allows, with the template's separators."""

    def __init__(self, nodes: list[Node], item_sep: str = ", ", kv_sep: str = ": ",
                 machines: list[CharMachine] | None = None):
        self.nodes, self.item_sep, self.kv_sep = nodes, item_sep, kv_sep
        self.machines = machines or []
        self.feeds: dict[type, Feed] = {Value: self._value, Lit: _literal, Str: _string, Num: _number,
                                        Enum: _enum, Obj: self._object, Key: self._key, Arr: self._array,
                                        GStr: self._grammar_string}
        self.lists: dict[type, Allowed] = {
            Value: lambda st: self.first_chars(_top(st, Value).node), Lit: _literal_chars, Str: _free,
            Num: _free, Enum: _enum_chars, Obj: self._object_chars, Key: self._key_chars, Arr: self._array_chars,
            GStr: self._grammar_string_chars}

    def begin(self, nid: int, c: str) -> tuple[Stack, bool] | None:
        """Frames that start a value of node `nid` with `c`, and whether they consumed it."""
        node = self.nodes[nid]
        if node.kind == "union":
            return next((r for m in node.children if (r := self.begin(m, c)) is not None), None)
        if node.kind == "string" and c == '"':
            if node.machine >= 0:
                return (GStr(node.machine, self.machines[node.machine].start),), True
            return (Str(node.min_length),), True
        if node.kind in ("integer", "number") and (c == "-" or c in DIGITS):
            return (Num("-" if c == "-" else "0" if c == "0" else "d", node.kind == "integer"),), True
        if node.kind == "boolean" and c in "tf":
            return (Lit("true" if c == "t" else "false", 1),), True
        if node.kind == "null" and c == "n":
            return (Lit("null", 1),), True
        if node.kind == "enum" and any(lit[0] == c for lit in node.literals):
            return (Enum(node.literals),), False
        if node.kind == "object" and c == "{":
            return (Obj(nid),), True
        if node.kind == "array" and c == "[":
            return (Arr(nid),), True
        return None

    def first_chars(self, nid: int) -> frozenset[str] | None:
        node = self.nodes[nid]
        if node.kind == "union":
            parts = [self.first_chars(m) for m in node.children]
            known = [p for p in parts if p is not None]
            return frozenset(c for p in known for c in p) if len(known) == len(parts) else None
        if node.kind == "enum":
            return frozenset(lit[0] for lit in node.literals)
        return {"string": frozenset('"'), "boolean": frozenset("tf"), "null": frozenset("n"),
                "object": frozenset("{"), "array": frozenset("[")}.get(node.kind)

    def _value(self, stack: Stack, c: str) -> Step:
        started = self.begin(_top(stack, Value).node, c)
        return None if started is None else (stack[:-1] + started[0], started[1])

    # -- objects -------------------------------------------------------------------------------
    def _more_keys(self, node: Node, used: frozenset[str]) -> bool:
        return not node.closed or any(k not in used for k in node.keys)

    def _object(self, stack: Stack, c: str) -> Step:
        obj = _top(stack, Obj)
        node, rest = self.nodes[obj.node], stack[:-1]
        if c == "}" and obj.stage != 2 and node.required <= obj.used:
            return rest, True
        if obj.stage != 1 and c in WHITESPACE:  # after "{" or a separator (is_gap)
            return stack, True
        if obj.stage != 1 and c == '"' and self._more_keys(node, obj.used):
            if node.closed:
                return stack + (Key(obj.node),), True
            return rest + (Obj(obj.node, obj.used, 1), Value(ANY), Lit(self.kv_sep), Str()), True
        if obj.stage == 1 and c == self.item_sep[0] and self._more_keys(node, obj.used):
            return rest + (Obj(obj.node, obj.used, 2),) + _rest_of(self.item_sep), True
        return None

    def _object_chars(self, stack: Stack) -> frozenset[str]:
        obj = _top(stack, Obj)
        node = self.nodes[obj.node]
        more = [self.item_sep[0] if obj.stage == 1 else '"'] if self._more_keys(node, obj.used) else []
        return frozenset(more + (["}"] if obj.stage != 2 and node.required <= obj.used else []))

    def _keys(self, stack: Stack) -> tuple[Key, Obj, list[str]]:
        key, obj = _top(stack, Key), stack[-2]
        assert isinstance(obj, Obj)
        node = self.nodes[key.node]
        return key, obj, [k for k in node.keys if k not in obj.used and k.startswith(key.prefix)]

    def _key(self, stack: Stack, c: str) -> Step:
        key, obj, keys = self._keys(stack)
        if c == '"' and key.prefix in keys:
            node = self.nodes[key.node]
            child = node.children[node.keys.index(key.prefix)]
            return stack[:-2] + (Obj(obj.node, obj.used | {key.prefix}, 1), Value(child), Lit(self.kv_sep)), True
        if any(k.startswith(key.prefix + c) for k in keys):
            return stack[:-1] + (Key(key.node, key.prefix + c),), True
        return None

    def _key_chars(self, stack: Stack) -> frozenset[str]:
        key, _, keys = self._keys(stack)
        n = len(key.prefix)
        return frozenset(k[n] if len(k) > n else '"' for k in keys)

    # -- arrays --------------------------------------------------------------------------------
    def _array(self, stack: Stack, c: str) -> Step:
        arr = _top(stack, Arr)
        if c == "]" and arr.stage != 2:
            return stack[:-1], True
        if arr.stage == 1:
            return (stack[:-1] + (Arr(arr.node, 2),) + _rest_of(self.item_sep), True) if c == self.item_sep[0] else None
        return stack[:-1] + (Arr(arr.node, 1), Value(self.nodes[arr.node].item)), False

    def _array_chars(self, stack: Stack) -> frozenset[str] | None:
        arr = _top(stack, Arr)
        if arr.stage == 1:
            return frozenset([self.item_sep[0], "]"])
        return self.first_chars(self.nodes[arr.node].item) if arr.stage == 2 else None


    # -- strings under a grammar: each character as json.dumps(ensure_ascii=False) spells it ------
    def _grammar_string(self, stack: Stack, c: str) -> Step:
        s, rest = _top(stack, GStr), stack[:-1]
        machine = self.machines[s.machine]
        if s.esc == 2:
            code = s.code + c if c in _HEX else ""
            if len(code) < 4:
                return (rest + (GStr(s.machine, s.states, 2, code),), True) if code else None
            decoded = chr(int(code, 16))
            return self._spelled(rest, s, decoded) if _spelling(decoded) == "\\u" + code.lower() else None
        if s.esc == 1:
            if c == "u" and self._escapes(s, "\\u"):
                return rest + (GStr(s.machine, s.states, 2),), True
            return self._spelled(rest, s, _UNESCAPE[c]) if c in _UNESCAPE else None
        if c == '"':
            return (rest, True) if machine.accepts(s.states) else None
        if c == "\\" and self._escapes(s, "\\"):
            return rest + (GStr(s.machine, s.states, 1),), True
        return self._spelled(rest, s, c) if _spelling(c) == c else None

    def _escapes(self, s: GStr, start: str) -> bool:
        """Whether a character the grammar allows next is spelled starting with `start` (else a
        backslash there would lead nowhere)."""
        nxt = self.machines[s.machine].next_chars(s.states)
        return nxt is None or any(_spelling(d).startswith(start) for d in nxt)

    def _spelled(self, rest: Stack, s: GStr, decoded: str) -> Step:
        states = self.machines[s.machine].step(s.states, decoded)
        return (rest + (GStr(s.machine, states),), True) if states else None

    def _grammar_string_chars(self, stack: Stack) -> frozenset[str] | None:
        s = _top(stack, GStr)
        nxt = self.machines[s.machine].next_chars(s.states)
        if nxt is None or s.esc == 2:
            return None
        spelled = [_spelling(d) for d in nxt]
        if s.esc == 1:
            return frozenset(sp[1] for sp in spelled if sp[0] == "\\")
        closing = ['"'] if self.machines[s.machine].accepts(s.states) else []
        return frozenset([sp[0] for sp in spelled] + closing)


_UNESCAPE = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_SPELLING = {v: "\\" + k for k, v in _UNESCAPE.items()}


def _spelling(c: str) -> str:
    """How json.dumps (ensure_ascii=False) writes a character inside a string."""
    if c in _SPELLING:
        return _SPELLING[c]
    return f"\\u{ord(c):04x}" if ord(c) < 0x20 else c


def is_gap(frame: Frame) -> bool:
    """Whether JSON whitespace beyond the template's may come at `frame`: before a key."""
    return isinstance(frame, Obj) and frame.stage != 1


def _top(stack: Stack, kind: type[F]) -> F:
    frame = stack[-1]
    assert isinstance(frame, kind)
    return frame


def _rest_of(sep: str) -> Stack:
    return (Lit(sep, 1),) if len(sep) > 1 else ()


def _free(stack: Stack) -> None:
    return None


def _literal(stack: Stack, c: str) -> Step:
    lit = _top(stack, Lit)
    if c != lit.text[lit.i]:
        return None
    return (stack[:-1] if lit.i + 1 == len(lit.text) else stack[:-1] + (Lit(lit.text, lit.i + 1),)), True


def _literal_chars(stack: Stack) -> frozenset[str]:
    lit = _top(stack, Lit)
    return frozenset(lit.text[lit.i])


_ESCAPES = frozenset('"\\/bfnrt')
_HEX = frozenset("0123456789abcdefABCDEF")


def _string(stack: Stack, c: str) -> Step:
    """JSON string content: escapes as JSON has them, no raw control characters."""
    s, rest = _top(stack, Str), stack[:-1]
    if s.esc == 1:
        if c == "u":
            return rest + (Str(s.need, 13),), True
        return (rest + (Str(),), True) if c in _ESCAPES else None
    if s.esc:
        return (rest + (Str(0, 0 if s.esc == 10 else s.esc - 1),), True) if c in _HEX else None
    if c == '"':
        return (rest, True) if s.need == 0 else None
    if c == "\\":
        return rest + (Str(s.need, 1),), True
    return None if ord(c) < 0x20 else (rest + (Str(),), True)


_NUMBER_ENDS = frozenset("0dfx")


def _number(stack: Stack, c: str) -> Step:
    num = _top(stack, Num)
    digit, stage = c in DIGITS, num.stage
    nxt = None
    if stage == "-":
        nxt = "0" if c == "0" else "d" if digit else None
    elif digit and stage in ("d", "f", "x", ".", "s"):
        nxt = {".": "f", "s": "x"}.get(stage, stage)
    elif stage == "e":
        nxt = "s" if c in "+-" else "x" if digit else None
    elif c == "." and stage in ("0", "d") and not num.integer:
        nxt = "."
    elif c in "eE" and stage in ("0", "d", "f") and not num.integer:
        nxt = "e"
    if nxt is not None:
        return stack[:-1] + (Num(nxt, num.integer),), True
    return (stack[:-1], False) if stage in _NUMBER_ENDS else None  # the number has ended: c is for the frame below


def _enum(stack: Stack, c: str) -> Step:
    e = _top(stack, Enum)
    matches = tuple(lit for lit in e.literals if len(lit) > e.i and lit[e.i] == c)
    if matches:
        return stack[:-1] + (Enum(matches, e.i + 1),), True
    return (stack[:-1], False) if any(len(lit) == e.i for lit in e.literals) else None


def _enum_chars(stack: Stack) -> frozenset[str] | None:
    e = _top(stack, Enum)
    if any(len(lit) == e.i for lit in e.literals):
        return None  # one is complete: what follows it may come next too
    return frozenset(lit[e.i] for lit in e.literals)
