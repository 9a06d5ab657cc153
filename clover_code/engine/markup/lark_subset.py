"""A freeform tool's input grammar, when it is simple Lark: compiled to a character automaton
so the scaffold can decode the input under it (Codex's apply_patch declares its patch format
this way).

The subset: rules and terminals (`name: ...`, `NAME: ...`, alternatives with `|`, also on
continuation lines), string literals, regular expressions of literal characters, `.`, escapes,
character classes, groups and `* + ?`, `(...)`, `[...]` (optional), `-> alias` (ignored), and
`%import common.LF` / `common.CR`. Every rule inlines into one automaton, so a recursive rule
is outside the subset, as are `%ignore`, `~`, templates and regex flags. Outside the subset:
`Unsupported`, and the input is decoded as plain text. Lark's lexer is not modelled: the
language is read character by character, which for line-based formats such as a patch is the
same language.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

IMPORTS = {"LF": "\n", "CR": "\r"}
_DEFINITION = re.compile(r"^\??([A-Za-z_][A-Za-z_0-9]*)(?:\.-?\d+)?\s*:(.*)$")
_TOKEN = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(/(?:[^/\\]|\\.)+/[a-z]*)|(->\s*\w+)|([A-Za-z_]\w*)|([|()\[\]*+?]))')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}


class Unsupported(ValueError):
    """A grammar outside the subset; the message says what."""


@dataclass(frozen=True)
class CharTest:
    chars: frozenset[str]
    negate: bool = False  # any character but `chars`

    def __call__(self, c: str) -> bool:
        return (c in self.chars) != self.negate


ANY_BUT_NEWLINE = CharTest(frozenset("\n"), negate=True)  # a regex's `.`


class CharMachine:
    """A nondeterministic automaton over characters; a state is a frozenset of node ids."""

    def __init__(self) -> None:
        self.edges: list[list[tuple[CharTest, int]]] = []
        self.eps: list[list[int]] = []
        self.accept = -1
        self.start: frozenset[int] = frozenset()

    def node(self) -> int:
        self.edges.append([])
        self.eps.append([])
        return len(self.edges) - 1

    def close(self, states: set[int]) -> frozenset[int]:
        todo, seen = list(states), set(states)
        while todo:
            for t in self.eps[todo.pop()]:
                if t not in seen:
                    seen.add(t)
                    todo.append(t)
        return frozenset(seen)

    def step(self, states: frozenset[int], c: str) -> frozenset[int]:
        """The states after `c` (empty: `c` is ruled out)."""
        return self.close({t for s in states for test, t in self.edges[s] if test(c)})

    def accepts(self, states: frozenset[int]) -> bool:
        return self.accept in states

    def next_chars(self, states: frozenset[int]) -> frozenset[str] | None:
        """The characters that may come next, or None when a test allows too many to list."""
        tests = [test for s in states for test, _ in self.edges[s]]
        if any(t.negate for t in tests):
            return None
        return frozenset(c for t in tests for c in t.chars)


@lru_cache(maxsize=32)
def compile_lark(definition: str) -> CharMachine:
    """The automaton of a Lark grammar's `start` rule; Unsupported outside the subset."""
    rules = _definitions(definition)
    if "start" not in rules:
        raise Unsupported("the grammar has no 'start' rule")
    machine = CharMachine()
    first, last = _Builder(machine, rules).rule("start", ())
    machine.accept, machine.start = last, machine.close({first})
    return machine


def _definitions(text: str) -> dict[str, str]:
    rules: dict[str, str] = {}
    name = None
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("//"):
            continue
        if line.lstrip().startswith("%"):
            _directive(line.strip(), rules)
        elif line[0].isspace() and line.lstrip().startswith("|") and name:
            rules[name] += " " + line.strip()
        elif m := _DEFINITION.match(line.strip()):
            name = m.group(1)
            rules[name] = m.group(2)
        else:
            raise Unsupported(f"cannot read the grammar line {raw.strip()!r}")
    return rules


def _directive(line: str, rules: dict[str, str]) -> None:
    m = re.fullmatch(r"%import\s+common\.(\w+)", line)
    if not m or m.group(1) not in IMPORTS:
        raise Unsupported(f"the directive {line!r}")
    rules[m.group(1)] = '"' + IMPORTS[m.group(1)].encode("unicode_escape").decode() + '"'


# -- expansions -> automaton ------------------------------------------------------------------------

Fragment = tuple[int, int]  # (entry node, exit node)


class _Builder:
    def __init__(self, machine: CharMachine, rules: dict[str, str]):
        self.m, self.rules = machine, rules

    def rule(self, name: str, inside: tuple[str, ...]) -> Fragment:
        if name in inside:
            raise Unsupported(f"the rule {name!r} is recursive")
        if name not in self.rules:
            raise Unsupported(f"the rule {name!r} is not defined")
        tokens = [t for t in _tokens(self.rules[name]) if not t.startswith("->")]
        frag, at = self._alternatives(tokens, 0, (*inside, name))
        if at != len(tokens):
            raise Unsupported(f"cannot read the rule {name!r} past {tokens[at]!r}")
        return frag

    def _alternatives(self, tokens: list[str], at: int, inside: tuple[str, ...]) -> tuple[Fragment, int]:
        options = []
        while True:
            frag, at = self._sequence(tokens, at, inside)
            options.append(frag)
            if at < len(tokens) and tokens[at] == "|":
                at += 1
                continue
            return _either(self.m, options), at

    def _sequence(self, tokens: list[str], at: int, inside: tuple[str, ...]) -> tuple[Fragment, int]:
        parts = []
        while at < len(tokens) and tokens[at] not in ("|", ")", "]"):
            frag, at = self._atom(tokens, at, inside)
            if at < len(tokens) and tokens[at] in "*+?":
                frag, at = _repeat(self.m, frag, tokens[at]), at + 1
            parts.append(frag)
        return _chain(self.m, parts), at

    def _atom(self, tokens: list[str], at: int, inside: tuple[str, ...]) -> tuple[Fragment, int]:
        token = tokens[at]
        if token in ("(", "["):
            frag, end = self._alternatives(tokens, at + 1, inside)
            if end >= len(tokens) or tokens[end] != {"(": ")", "[": "]"}[token]:
                raise Unsupported("an unclosed group")
            return (_repeat(self.m, frag, "?") if token == "[" else frag), end + 1
        if token.startswith('"'):
            return _literal(self.m, _unescape(token[1:-1])), at + 1
        if token.startswith("/"):
            return _Regex(self.m, token).fragment(), at + 1
        if token[0].isalpha() or token[0] == "_":
            return self.rule(token, inside), at + 1
        raise Unsupported(f"the token {token!r}")


def _tokens(expansion: str) -> list[str]:
    out, at = [], 0
    while at < len(expansion.rstrip()):
        m = _TOKEN.match(expansion, at)
        if not m:
            raise Unsupported(f"cannot read {expansion[at:].strip()!r}")
        out.append(next(g for g in m.groups() if g is not None))
        at = m.end()
    return out


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), text)


def _edge(m: CharMachine, test: CharTest) -> Fragment:
    a, b = m.node(), m.node()
    m.edges[a].append((test, b))
    return a, b


def _literal(m: CharMachine, text: str) -> Fragment:
    return _chain(m, [_edge(m, CharTest(frozenset(c))) for c in text])


def _chain(m: CharMachine, parts: list[Fragment]) -> Fragment:
    if not parts:
        a = m.node()
        return a, a
    for (_, end), (start, _) in itertools.pairwise(parts):
        m.eps[end].append(start)
    return parts[0][0], parts[-1][1]


def _either(m: CharMachine, options: list[Fragment]) -> Fragment:
    if len(options) == 1:
        return options[0]
    a, b = m.node(), m.node()
    for start, end in options:
        m.eps[a].append(start)
        m.eps[end].append(b)
    return a, b


def _repeat(m: CharMachine, frag: Fragment, how: str) -> Fragment:
    a, b = m.node(), m.node()
    m.eps[a].append(frag[0])
    m.eps[frag[1]].append(b)
    if how in "*?":
        m.eps[a].append(b)
    if how in "*+":
        m.eps[frag[1]].append(frag[0])
    return a, b


class _Regex:
    """The regular expressions of the subset: literal characters, `.`, escapes, classes,
    groups (also `(?:...)`), `|` and `* + ?`."""

    def __init__(self, m: CharMachine, token: str):
        body, _, flags = token[1:].rpartition("/")
        if flags:
            raise Unsupported(f"regex flags {flags!r}")
        self.m, self.text, self.at = m, body, 0

    def fragment(self) -> Fragment:
        frag = self._alternatives()
        if self.at != len(self.text):
            raise Unsupported(f"the regex /{self.text}/")
        return frag

    def _alternatives(self) -> Fragment:
        options = [self._sequence()]
        while self._peek() == "|":
            self.at += 1
            options.append(self._sequence())
        return _either(self.m, options)

    def _sequence(self) -> Fragment:
        parts = []
        while self._peek() not in ("", "|", ")"):
            frag = self._atom()
            if self._peek() in ("*", "+", "?"):
                frag, self.at = _repeat(self.m, frag, self.text[self.at]), self.at + 1
            parts.append(frag)
        return _chain(self.m, parts)

    def _atom(self) -> Fragment:
        c = self._take()
        if c == "(":
            if self.text.startswith("?:", self.at):
                self.at += 2
            frag = self._alternatives()
            if self._take() != ")":
                raise Unsupported(f"the regex /{self.text}/")
            return frag
        if c == ".":
            return _edge(self.m, ANY_BUT_NEWLINE)
        if c == "[":
            return _edge(self.m, self._char_class())
        if c == "\\":
            return _edge(self.m, CharTest(frozenset(self._escaped())))
        if c in "{}^$":
            raise Unsupported(f"{c!r} in the regex /{self.text}/")
        return _edge(self.m, CharTest(frozenset(c)))

    def _char_class(self) -> CharTest:
        negate = self._peek() == "^"
        self.at += negate
        chars: set[str] = set()
        while (c := self._take()) != "]":
            if c == "":
                raise Unsupported(f"an unclosed class in /{self.text}/")
            first = self._escaped() if c == "\\" else c
            if self._peek() == "-" and self.text[self.at + 1:self.at + 2] not in ("]", ""):
                self.at += 1
                last = self._take()
                last = self._escaped() if last == "\\" else last
                chars.update(chr(code) for code in range(ord(first), ord(last) + 1))
            else:
                chars.add(first)
        return CharTest(frozenset(chars), negate)

    def _escaped(self) -> str:
        c = self._take()
        if c in "dwsDWSbB":
            raise Unsupported(f"\\{c} in the regex /{self.text}/")
        return _ESCAPES.get(c, c)

    def _peek(self) -> str:
        return self.text[self.at:self.at + 1]

    def _take(self) -> str:
        c = self._peek()
        self.at += 1
        return c
