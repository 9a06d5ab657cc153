"""Splitting the conversation's growing Markdown text.

`safe_cut` finds where a growing Markdown text can be split into two documents that
render like the whole: a blank line outside code fences, not inside a list or quote.
(The text comes without tool-call markup: the agent parsed it out, see agent/reply.py.)
"""

from __future__ import annotations

import re

_CONTINUES = re.compile(r"^([ \t]|[-*+] |\d+[.)] |\||>)")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")


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
