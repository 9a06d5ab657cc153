"""Text files as the tools see them: binary sniffing, UTF-8 that round-trips, line endings,
and numbered lines read a capped line at a time (a 50 MB file never sits in memory to be shown).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from clover_code.errors import ToolError

MAX_LINE_CHARS = 2000  # longer lines are cut
MAX_OUTPUT_CHARS = 100_000  # read_file output cap
COUNT_LINES_LIMIT = 8 * 1024 * 1024  # above this, do not scan the whole file to count its lines
SNIFF_BYTES = 8192


def is_binary(head: bytes) -> bool:
    return b"\0" in head[:SNIFF_BYTES]


def decode(path_name: str, data: bytes) -> str:
    if is_binary(data):
        raise ToolError(f"{path_name} is a binary file; edit tools change text files only")
    return data.decode("utf-8", "surrogateescape")  # undecodable bytes survive the round trip


def encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def uses_crlf(text: str) -> bool:
    return text.count("\r\n") * 2 > text.count("\n")


def to_crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def numbered_lines(fh: BinaryIO, offset: int, limit: int) -> tuple[list[str], int | None, bool, bool]:
    """Lines offset..offset+limit-1 numbered `cat -n` style; the next line to read if cut short."""
    shown: list[str] = []
    cut = bad = False
    chars = 0
    number = _skip_lines(fh, offset - 1)
    for raw, truncated in _raw_lines(fh):
        number += 1
        if len(shown) >= limit or chars >= MAX_OUTPUT_CHARS:
            return shown, number, cut, bad
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text, bad = raw.decode("utf-8", "replace"), True
        text = text.rstrip("\r\n")
        if truncated or len(text) > MAX_LINE_CHARS:
            text, cut = text[:MAX_LINE_CHARS] + " [...]", True
        line = f"{number:>6}\t{text}"
        shown.append(line)
        chars += len(line) + 1
    return shown, None, cut, bad


def _skip_lines(fh: BinaryIO, count: int, chunk_size: int = 1 << 20) -> int:
    """Move past `count` lines a chunk at a time (counting in C); how many there were."""
    skipped = 0
    while skipped < count:
        at = fh.tell()
        chunk = fh.read(chunk_size)
        if not chunk:
            break
        newlines = chunk.count(b"\n")
        if skipped + newlines < count:
            skipped += newlines
            continue
        end = -1
        for _ in range(count - skipped):
            end = chunk.index(b"\n", end + 1)
        fh.seek(at + end + 1)
        skipped = count
    return skipped


def _raw_lines(fh: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """(line bytes, was cut) without ever holding more than one capped line in memory."""
    cap = MAX_LINE_CHARS * 4 + 1  # UTF-8 takes at most 4 bytes per character
    while True:
        line = fh.readline(cap)
        if not line:
            return
        truncated = False
        while not line.endswith(b"\n"):
            rest = fh.readline(1 << 20)
            if not rest:
                break
            truncated = True
            if rest.endswith(b"\n"):
                break
        yield line, truncated


def count_lines(path: Path, size: int) -> int | None:
    if size > COUNT_LINES_LIMIT:
        return None
    data = path.read_bytes()
    return data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
