"""Turning streamed model text into what the conversation shows.

- `ToolMarkupFilter` hides `<tool_call>...</tool_call>` spans (tool calls get their own
  cards), also when a tag is split across blocks.
- `safe_cut` finds where a growing Markdown text can be split into two documents that
  render like the whole: a blank line outside code fences, not inside a list or quote.
"""

from __future__ import annotations

import re

OPEN, CLOSE = "<tool_call>", "</tool_call>"
_CONTINUES = re.compile(r"^([ \t]|[-*+] |\d+[.)] |\||>)")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


class ToolMarkupFilter:
    def __init__(self) -> None:
        self._inside = False
        self._held = ""  # a possible partial tag at the end of the last chunk

    def feed(self, text: str) -> str:
        text, self._held = self._held + text, ""
        out: list[str] = []
        while text:
            tag = CLOSE if self._inside else OPEN
            at = text.find(tag)
            if at < 0:
                keep = _partial_suffix(text, tag)
                if not self._inside:
                    out.append(text[: len(text) - keep])
                self._held = text[len(text) - keep:] if keep else ""
                break
            if not self._inside:
                out.append(text[:at])
            text = text[at + len(tag):]
            self._inside = not self._inside
        return "".join(out)


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of `text` that is a proper prefix of `tag`."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


def safe_cut(text: str, min_len: int) -> int | None:
    """The last offset >= min_len where `text` splits into independently rendered Markdown."""
    cut = None
    in_fence = False
    offset = 0
    lines = text.split("\n")
    for i, line in enumerate(lines[:-1]):
        offset += len(line) + 1
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence or line.strip() or offset < min_len:
            continue
        nxt = lines[i + 1]
        if i > 0 and not lines[i - 1].strip():
            continue
        if nxt.strip() and not _CONTINUES.match(nxt) and not _FENCE.match(nxt):
            cut = offset
    return cut
