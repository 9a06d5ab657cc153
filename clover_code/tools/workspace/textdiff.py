"""Text comparison for display: unified diffs of file changes, the region most like a lost snippet."""

from __future__ import annotations

import difflib
import re

from clover_code.tools.workspace.textfile import is_binary


def closest_region(lines: list[str], want: list[str], context: int = 2) -> str:
    """Names the region of `lines` most like `want`, numbered as read_file shows it."""
    span = len(want)
    if not lines or len(lines) > 50_000:  # too big to scan window by window
        return "Read the file again to see its current text."
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2("\n".join(want))  # seq2 is the one SequenceMatcher indexes once
    scored = []
    for i in range(max(1, len(lines) - span + 1)):
        matcher.set_seq1("\n".join(lines[i:i + span]))
        scored.append((matcher.quick_ratio(), i))
    best_ratio, best = 0.0, 0
    for _, i in sorted(scored, reverse=True)[:20]:  # the exact ratio only for the likeliest windows
        matcher.set_seq1("\n".join(lines[i:i + span]))
        if (ratio := matcher.ratio()) > best_ratio:
            best_ratio, best = ratio, i
    if best_ratio < 0.3:
        return "Nothing in the file looks like it."
    lo, hi = max(0, best - context), min(len(lines), best + span + context)
    shown = "\n".join(f"{n + 1:>6}\t{lines[n]}" for n in range(lo, hi))
    return f"The closest region (lines {best + 1}-{best + span}, {best_ratio:.0%} similar) is:\n{shown}"


def unified_diff(name: str, old: bytes | None, new: bytes | None, context: int = 3) -> str:
    """A git-style unified diff of one file, for UIs and approval prompts."""
    a, b = old or b"", new or b""
    if is_binary(a) or is_binary(b):
        return f"Binary file {name} changed ({len(a):,} -> {len(b):,} bytes)\n"
    # difflib is slow on big files: diff only the changed middle, then renumber the hunks.
    start, cut = _changed_span(a, b, context)
    shift = a.count(b"\n", 0, start)
    lines = difflib.unified_diff(
        _text(a[start:len(a) - cut]).splitlines(keepends=True), _text(b[start:len(b) - cut]).splitlines(keepends=True),
        "/dev/null" if old is None else f"a/{name}", "/dev/null" if new is None else f"b/{name}", n=context)
    out = []
    for line in lines:
        if line.startswith("@@ ") and shift:
            line = _HUNK.sub(lambda m: f"{m[1]}{int(m[2]) + shift}", line)
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


_HUNK = re.compile(r"([-+])(\d+)")


def _changed_span(a: bytes, b: bytes, context: int) -> tuple[int, int]:
    """(start, cut): a[:start] and a[-cut:] are whole lines shared with b, `context` lines kept."""
    same = _common_prefix(a, b)
    start = a.rfind(b"\n", 0, same) + 1  # start of the first line that differs
    for _ in range(context):
        if start:
            start = a.rfind(b"\n", 0, start - 1) + 1
    room = min(len(a), len(b)) - same  # the shared tail must not overlap the shared head
    tail = _common_prefix(a[::-1][:room], b[::-1][:room])
    end = len(a) - tail
    if end < len(a):  # skip the partial line the shared tail starts in
        end = a.find(b"\n", end) + 1 or len(a)
    for _ in range(context):
        if end < len(a):
            end = a.find(b"\n", end) + 1 or len(a)
    return start, len(a) - end


def _common_prefix(a: bytes, b: bytes, step: int = 4096) -> int:
    n, i = min(len(a), len(b)), 0
    while i < n and a[i:i + step] == b[i:i + step]:  # compared in C, a page at a time
        i += step
    while i < n and a[i] == b[i]:
        i += 1
    return min(i, n)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")
