"""Holding back the end of a chunk that may be the start of a tag.

Streamed text arrives cut at arbitrary places: `<tool_c` at the end of one block may become
`<tool_call>` with the next, or stay plain text. Whoever looks for tags in a stream (the
tool-call parser, the embedded engine's stop strings) holds such an end back until the next
chunk says which it is.
"""

from __future__ import annotations

from collections.abc import Iterable


def partial_tag_length(text: str, tags: Iterable[str]) -> int:
    """Length of the longest end of `text` that is the start, not the whole, of one of `tags`."""
    longest = 0
    for tag in tags:
        for n in range(min(len(tag) - 1, len(text)), longest, -1):
            if tag.startswith(text[-n:]):
                longest = n
                break
    return longest
