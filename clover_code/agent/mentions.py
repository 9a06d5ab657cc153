"""`@path` in a user's message: the file (or folder) goes to the model with the message.

A mention is `@` at the start of the message or after white space, followed by a path of the
workspace that exists; anything else (`a@b.com`, `@decorator` where no such file is) stays
plain text. The content comes from the read tools (`read_file`, `list_files`), so a mention
obeys the workspace's rules as a model's read does (inside the root, text only, the usual
line limits) and counts as a read: the model may edit the file without reading it again.
"""

from __future__ import annotations

import os
import re

from clover_code.agent.events import Attachment
from clover_code.tools import Registry, ToolContext

MENTION = re.compile(r"(?:^|(?<=\s))@([^\s@]+)")
MAX_MENTIONS = 10  # per message: more is a paste of names, not a request for files
_TRAILING = ".,;:!?)]}'\""  # sentence punctuation after a path


def mentioned_paths(text: str) -> list[str]:
    """The `@path`s of `text` in order, each once (not checked against the workspace)."""
    seen: list[str] = []
    for match in MENTION.finditer(text):
        path = match.group(1)
        if path not in seen:
            seen.append(path)
    return seen


def _existing(root: str, path: str) -> str | None:
    """`path` or `path` without trailing punctuation, whichever names something in `root`."""
    for candidate in (path, path.rstrip(_TRAILING)):
        if candidate and os.path.lexists(os.path.join(root, candidate)):
            return candidate
    return None


async def attach_mentions(text: str, registry: Registry, ctx: ToolContext) -> tuple[Attachment, ...]:
    """An Attachment per mentioned path that exists; a read that fails is attached as its
    error, so the model knows what the user pointed at and why it is missing."""
    root = str(ctx.workspace.root)
    out: list[Attachment] = []
    for path in mentioned_paths(text)[:MAX_MENTIONS]:
        found = _existing(root, path)
        if found is None:
            continue
        folder = os.path.isdir(os.path.join(root, found))
        tool, arguments = ("list_files", {"path": found, "depth": 2, "limit": 200}) if folder else (
            "read_file", {"path": found})
        if tool not in registry.tools:
            continue
        result = await registry.call(tool, arguments, ctx)
        if result.ok:
            out.append(Attachment(found, result.output, "folder listing" if folder else ""))
        else:
            out.append(Attachment(found, "", f"not attached: {result.output.strip()}"))
    return tuple(out)
