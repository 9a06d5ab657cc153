"""Markdown files that a user or a repository hands clover-code as text (custom commands,
skills): found under a folder, read without trusting them, their front matter parsed.

A repository's files were written by whoever wrote the repository, so a name there is only
followed while it stays inside the folder it was found in (a symlink out of it could lead to the
user's own config and its api key, which would then be sent to the model), only a regular
file is read (a FIFO would hang the read), and only its first MAX_BYTES. Nothing is ever run.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_BYTES = 64 * 1024  # a prompt template or a skill's body; more is cut, with a note


@dataclass(frozen=True)
class DocFile:
    path: Path  # the real path, inside the folder it was found in
    meta: dict[str, str]  # the front matter's `key: value` lines, keys lower-cased
    body: str  # the text after the front matter
    truncated: bool = False


def read_doc(path: Path, inside: Path | None, max_bytes: int = MAX_BYTES) -> DocFile | None:
    """The file at `path` if it is a regular file whose real path lies in the folder `inside`
    (a real path, as its name says: the workspace's real root joined with `.clover/commands`, so
    that folder itself as a symlink out, to the home folder, holds nothing); else None.
    `inside=None`: the user's own file, wherever their links lead."""
    try:
        real = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if inside is not None and not real.is_relative_to(inside):
        return None
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return None
        data = fh.read(max_bytes + 1)
    text = data[:max_bytes].decode("utf-8", errors="replace").replace("\r\n", "\n")
    meta, body = front_matter(text)
    return DocFile(real, meta, body, truncated=len(data) > max_bytes)


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """(`key: value` pairs of a leading `---` block, the rest); ({}, text) without one.
    The fields these files use are names and descriptions, so no YAML parser is needed: a value
    is its line (quotes taken off), and indented lines below a key continue it (a description
    written as a `>` or `|` block reads as one line)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            break
    else:
        return {}, text
    meta: dict[str, str] = {}
    last = ""
    for line in lines[1:end]:
        if line[:1].isspace() and last:
            meta[last] = f"{meta[last]} {line.strip()}".strip()
            continue
        key, colon, value = line.partition(":")
        last = key.strip().lower() if colon and key.strip() else ""
        if last:
            value = value.strip()
            meta[last] = "" if value in (">", "|", ">-", "|-") else _unquoted(value)
    return meta, "\n".join(lines[end + 1:]).lstrip("\n")


def markdown_files(top: Path, pattern: str) -> list[Path]:
    """The files under `top` matching `pattern` (a glob relative to it), sorted; [] if `top` is
    not a folder. Symlinked folders are not walked (`**` does not follow them)."""
    if not top.is_dir():
        return []
    try:
        return sorted(p for p in top.glob(pattern) if p.is_file())
    except OSError:
        return []


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value
