"""JSON from untrusted sources (model output, session logs, servers), read and written safely.

Python's json module recurses once per nesting level: `[[[[...` 10,000 deep raises
RecursionError (not a JSONDecodeError), which escaped every handler written for bad
JSON. `loads` refuses such text up front with an ordinary JSONDecodeError, so callers
keep one `except json.JSONDecodeError` for every way JSON can be bad.

`dumps_line` writes one JSON line that any UTF-8 file, pipe or terminal takes: lone
surrogates (valid in a Python str, not encodable as UTF-8) and characters a terminal
may act on are written as \\uXXXX escapes, which read back to the same string.
Shared by the engine, the tools, the agent and the UIs, like `clover_code.tokens`.
"""

from __future__ import annotations

import json
import re
from typing import Any

# A value decoded from JSON (model output, session logs, servers, files): arbitrary by nature,
# checked where it is used. The names say so wherever such a value crosses a function boundary.
JSON = Any
JSONObject = dict[str, JSON]

# Far deeper than any tool's arguments or any session event; far below the ~1,000 levels
# at which the json module hits Python's recursion limit.
MAX_DEPTH = 64

_STRING = re.compile(r'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")
# Only ever inside JSON strings in json.dumps output, so escaping them keeps the JSON valid:
# DEL and C1 controls (0x9b is a one-byte CSI), line/paragraph separators, bidi controls,
# lone surrogates. json.dumps already escapes the C0 controls (ESC included).
_UNSAFE_IN_LINE = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> int:
    """How deep arrays and objects nest in `text` (brackets inside strings do not count);
    stops counting once past `limit`."""
    if text.count("[") + text.count("{") <= limit:
        return text.count("[") + text.count("{")  # cannot nest deeper than it opens
    depth = deepest = 0
    for bracket in _BRACKET.finditer(_STRING.sub('""', text)):
        depth += 1 if bracket.group() in "[{" else -1
        deepest = max(deepest, depth)
        if deepest > limit:
            break
    return deepest


def loads(text: str | bytes | bytearray, max_depth: int = MAX_DEPTH) -> JSON:
    """json.loads that raises JSONDecodeError (never RecursionError) for text nested too deep."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf-8")
    if nesting_depth(text, max_depth) > max_depth:
        raise json.JSONDecodeError(f"nested deeper than {max_depth} levels", text, 0)
    return json.loads(text)


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in `text` (e.g. from a `"\\ud800"` escape), or None."""
    found = _SURROGATE.search(text)
    return found.group() if found else None


def find_lone_surrogate(value: JSON, path: str = "") -> tuple[str, str] | None:
    """Where a decoded JSON value holds a lone surrogate, in a string or an object's key:
    (its path, e.g. `messages[0].content`, surrogates in it escaped; the surrogate), or None."""
    if isinstance(value, str):
        found = lone_surrogate(value)
        return (path, found) if found else None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        if isinstance(key, int):
            where = f"{path}[{key}]"
        else:
            shown = _SURROGATE.sub(lambda m: escape_char(m.group()), key)
            where = f"{path}.{shown}" if path else shown
            if found := lone_surrogate(key):
                return where, found
        if hit := find_lone_surrogate(item, where):
            return hit
    return None


def escape_char(ch: str) -> str:
    return f"\\u{ord(ch):04x}"


def dumps_line(value: JSON) -> str:
    """One line of JSON, readable (non-ASCII text kept), safe to write anywhere as UTF-8."""
    line = json.dumps(value, ensure_ascii=False, default=str)
    return _UNSAFE_IN_LINE.sub(lambda m: escape_char(m.group()), line)
