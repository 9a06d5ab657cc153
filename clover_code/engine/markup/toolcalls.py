"""Incremental tool-call parsing for the Qwen chat formats.

Two markups, both inside `<tool_call>...</tool_call>`:
    Qwen:        <tool_call>{"name": "read_file", "arguments": {"path": "a.py"}}</tool_call>
    Qwen3-Coder: <tool_call><function=read_file><parameter=path>a.py</parameter></function></tool_call>

Text arrives block by block. `feed` returns the text a user should see (everything
outside the markup) and every call whose closing tag has just arrived. A possible tag
prefix at the end of a chunk (`<tool_c`) is held back until the next chunk says what it
is, so visible text never contains markup. Every byte of a reply lands in exactly one
segment: text, a call (its markup as written), or debris: markup outside any call (a stray
`</tool_call>`, what is left of a call's JSON after its closing tag, a tag the reply's end
cut off), which no reader is shown. Lives in the engine layer so the server can turn model
text into structured `tool_calls` with the same rules as the agent.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from clover_code import jsonsafe
from clover_code.engine import ToolCall
from clover_code.engine.markup.partial_tags import partial_tag_length
from clover_code.jsonsafe import JSON, JSONObject

OPEN, CLOSE = "<tool_call>", "</tool_call>"
# Markup that is never prose outside a call: the closing tag, the chat template's tool-result
# tags and turn tokens, the XML format's closing tags. (The opening tag starts a call.)
STRAY_TAGS = (CLOSE, "<tool_response>", "</tool_response>", "</function>", "</parameter>",
              "<|im_start|>", "<|im_end|>", "<|endoftext|>")
_TAGS = (OPEN, *STRAY_TAGS)
_TAG = re.compile("|".join(map(re.escape, _TAGS)))
# What a model leaves of a call's JSON after the closing tag (`}}`, `"}}`, `] }`), spaces around it.
_LEFTOVER = re.compile(r'[\s"]*[}\]](?:[\s"]*[}\]])*\s*')
_MAYBE_LEFTOVER = re.compile(r'[\s"}\]]*')  # text the next chunk may yet make leftovers of
FORMAT_HINT = (
    'Write a tool call as <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call> '
    "with the arguments as a JSON object."
)

_FUNCTION = re.compile(r"<function=([^>\n]*)>")
_PARAMETER = re.compile(r"<parameter=([^>\n]*)>")
_NAME_GUESS = re.compile(r'"name"\s*:\s*"([^"\n]{1,100})"|<function=([^>\n]{1,100})>')


@dataclass(frozen=True)
class ParsedCall:
    call: ToolCall | None  # None when malformed
    error: str | None  # what was wrong (malformed JSON, missing name, cut off ...)
    raw: str  # the markup as written
    name: str | None = None  # best guess at the tool meant, when malformed


@dataclass(frozen=True)
class Debris:
    """Markup outside any call: never shown, never sent back to the model as prose."""

    text: str


Segment = str | ParsedCall | Debris


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"


def _string_params(tools: Iterable[JSONObject] | None) -> dict[str, set[str]]:
    """Per tool, the parameters whose schema type is string (kept verbatim, never JSON-decoded)."""
    out: dict[str, set[str]] = {}
    for tool in tools or ():
        fn = tool.get("function", tool)
        props = (fn.get("parameters") or {}).get("properties") or {}
        out[fn.get("name", "")] = {p for p, s in props.items() if s.get("type") == "string"}
    return out


class ToolCallParser:
    def __init__(self, tools: Iterable[JSONObject] | None = None):
        """`tools`: OpenAI function schemas; string parameters of the XML format then stay strings."""
        self._strings = _string_params(tools)
        self._buf = ""  # text not yet handed out
        self._inside = False  # between <tool_call> and </tool_call>
        # Just after markup (a call, a stray tag) or at the reply's start: a call's leftovers may come.
        self._after_markup = True

    def feed(self, text: str) -> tuple[str, list[ParsedCall]]:
        return _join(self.feed_segments(text))

    def finish(self) -> tuple[str, list[ParsedCall]]:
        return _join(self.finish_segments())

    def feed_segments(self, text: str) -> list[Segment]:
        """Like `feed`, keeping the order of text, calls and debris."""
        self._buf += text
        out: list[Segment] = []
        while self._close_call(out) if self._inside else self._outside(out):
            pass
        return out

    def finish_segments(self) -> list[Segment]:
        rest, self._buf = self._buf, ""
        inside, after_markup = self._inside, self._after_markup
        self._inside, self._after_markup = False, True
        if inside:
            return [_cut_off(rest, "the reply ended before </tool_call>")]
        if not rest:
            return []
        leftover = after_markup and _LEFTOVER.fullmatch(rest) is not None
        cut_tag = len(rest) > 1 and partial_tag_length(rest, _TAGS) == len(rest)  # a lone `<` stays text
        return [Debris(rest) if leftover or cut_tag else rest]

    def _outside(self, out: list[Segment]) -> bool:
        """Hand out the text, debris and opening tag the buffer settles; whether to go on."""
        if self._after_markup:
            if _MAYBE_LEFTOVER.fullmatch(self._buf):
                return False  # the next chunk says whether it is leftovers or text
            self._after_markup = False
            if m := _LEFTOVER.match(self._buf):
                out.append(Debris(m.group()))
                self._buf = self._buf[m.end():]
        tag = _TAG.search(self._buf)
        if tag is None:
            cut = len(self._buf) - partial_tag_length(self._buf, _TAGS)
            if cut:
                out.append(self._buf[:cut])
            self._buf = self._buf[cut:]
            return False
        if tag.start():
            out.append(self._buf[:tag.start()])
        self._buf = self._buf[tag.end():]
        if tag.group() == OPEN:
            self._inside = True
        else:
            out.append(Debris(tag.group()))
            self._after_markup = True
        return True

    def _close_call(self, out: list[Segment]) -> bool:
        """Hand out the call whose closing tag has come; whether to go on."""
        end = self._buf.find(CLOSE)
        reopen = self._buf.find(OPEN)
        if reopen >= 0 and (end < 0 or reopen < end):
            # A new call began before this one closed: this one was never finished.
            body, self._buf = self._buf[:reopen], self._buf[reopen:]
            out.append(_cut_off(body, "a new <tool_call> began before </tool_call>"))
        elif end >= 0:
            body, self._buf = self._buf[:end], self._buf[end + len(CLOSE):]
            out.append(self._parse(body))
        else:
            return False
        self._inside, self._after_markup = False, True
        return True

    def _parse(self, body: str) -> ParsedCall:
        raw = OPEN + body + CLOSE
        stripped = body.strip()
        if stripped.startswith("<function="):
            return self._parse_xml(stripped, raw)
        return _parse_json(stripped, raw)

    def _parse_xml(self, body: str, raw: str) -> ParsedCall:
        m = _FUNCTION.match(body)
        name = m.group(1).strip() if m else ""
        if m is None or not name:
            return _bad("the <function=NAME> tag has no name", raw)
        rest = body[m.end():]
        end = rest.rfind("</function>")
        rest = rest if end < 0 else rest[:end]
        strings = self._strings.get(name, set())
        args: JSONObject = {}
        params = list(_PARAMETER.finditer(rest))
        for i, p in enumerate(params):
            # Qwen3-Coder sometimes drops </parameter>: the next tag ends the value then.
            stop = params[i + 1].start() if i + 1 < len(params) else len(rest)
            value = rest[p.end():stop]
            close = value.rfind("</parameter>")
            value = value if close < 0 else value[:close]
            args[p.group(1).strip()] = _param_value(_trim_newline(value), p.group(1).strip() in strings)
        if not params and rest.strip():
            return _bad(f"text inside <function={name}> is not in <parameter=NAME> tags", raw, name)
        return _call(name, args, raw)


def _join(segments: list[Segment]) -> tuple[str, list[ParsedCall]]:
    text = "".join(s for s in segments if isinstance(s, str))
    return text, [s for s in segments if isinstance(s, ParsedCall)]


def split_text(text: str, tools: Iterable[JSONObject] | None = None) -> list[Segment]:
    """A whole reply cut into visible text, calls and debris, in order."""
    parser = ToolCallParser(tools)
    return parser.feed_segments(text) + parser.finish_segments()


def written_calls(text: str, tools: Iterable[JSONObject] | None = None) -> list[ParsedCall]:
    """The calls a whole reply writes, malformed ones included, in order."""
    return [s for s in split_text(text, tools) if isinstance(s, ParsedCall)]


def _guess_name(body: str) -> str | None:
    m = _NAME_GUESS.search(body)
    return (m.group(1) or m.group(2)).strip() if m else None


def _bad(error: str, raw: str, name: str | None = None) -> ParsedCall:
    return ParsedCall(None, error, raw, name or _guess_name(raw))


def _cut_off(body: str, why: str) -> ParsedCall:
    return _bad(f"the tool call was cut off: {why}", OPEN + body)


def _trim_newline(value: str) -> str:
    """Qwen writes each value on its own lines; one newline either side is markup."""
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def _param_value(value: str, is_string: bool) -> JSON:
    if is_string:
        return value
    try:
        return jsonsafe.loads(value)
    except json.JSONDecodeError:
        return value


def _call(name: str, args: JSONObject, raw: str) -> ParsedCall:
    """The call, unless its arguments hold text no tool, log or terminal can take."""
    arguments = json.dumps(args, ensure_ascii=False)
    if problem := _text_problem(name + arguments):
        return _bad(f"the arguments of {name} {problem}", raw, name)
    return ParsedCall(ToolCall(new_call_id(), name, arguments), None, raw)


def _text_problem(text: str) -> str | None:
    """Why `text` is not valid Unicode: a lone surrogate (a `\\ud800` escape without its pair)
    cannot be encoded as UTF-8 for a path, a command or a file."""
    if (surrogate := jsonsafe.lone_surrogate(text)) is not None:
        return (f"contain invalid Unicode: a lone surrogate ({jsonsafe.escape_char(surrogate)}); "
                "write the characters themselves, not \\uD800-\\uDFFF escapes")
    return None


def check_structured(call: ToolCall) -> ParsedCall:
    """A call a server parsed (OpenAI `tool_calls`), held to the rules of written markup:
    arguments a JSON object, not nested too deep, valid Unicode."""
    raw = call.arguments if isinstance(call.arguments, str) else ""
    try:
        args = jsonsafe.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return _bad(f'"arguments" of {call.name} is not valid JSON: {exc.msg}', raw, call.name)
    if not isinstance(args, dict):
        return _bad(f'"arguments" of {call.name} must be a JSON object', raw, call.name)
    if problem := _text_problem(call.name + json.dumps(args, ensure_ascii=False)):  # escapes decoded
        return _bad(f"the arguments of {call.name} {problem}", raw, call.name)
    return ParsedCall(call, None, raw)


def _parse_json(body: str, raw: str) -> ParsedCall:
    if not body:
        return _bad("the tool call is empty", raw)
    try:
        data = jsonsafe.loads(body)
    except json.JSONDecodeError as exc:
        return _bad(f"the tool call is not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", raw)
    if not isinstance(data, dict):
        return _bad('the tool call must be a JSON object with "name" and "arguments"', raw)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        return _bad('the tool call has no "name"', raw)
    args = data.get("arguments", data.get("parameters", {}))
    if isinstance(args, str):  # some models encode the arguments twice
        try:
            args = jsonsafe.loads(args) if args.strip() else {}
        except json.JSONDecodeError as exc:
            return _bad(f'"arguments" of {name} is not valid JSON: {exc.msg}', raw, name)
    if not isinstance(args, dict):
        return _bad(f'"arguments" of {name} must be a JSON object', raw, name)
    return _call(name.strip(), args, raw)
