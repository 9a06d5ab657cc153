"""A commit message drafted by the model (`/commit` without one): what a commit would take,
read through the git tools (sandboxed as the model's own calls are), and one line asked of the
model for it, outside the conversation (the turn history neither sees nor keeps it).
"""

from __future__ import annotations

from clover_code.agent.reply import ReplyReader
from clover_code.engine import ChatRequest, Engine
from clover_code.jsonsafe import JSONObject
from clover_code.tools import Registry, ToolContext, ToolError

COMMIT_SYSTEM = (
    "You write git commit messages. Given the changes of a commit, reply with its summary line "
    "only: imperative mood, at most 72 characters, no quotes, no prefix, no trailing period."
)
# What the model reads of the changes: the status, then the diffs, cut in the middle past this.
MAX_CHANGES_CHARS = 12_000
MAX_TOKENS = 64  # one line
MAX_LINE = 100  # cells of the line kept (a model that runs on is cut)
# What `git_commit` takes: every change in the work tree. Status names new files too.
READS: tuple[tuple[str, JSONObject], ...] = (("git_status", {}), ("git_diff", {"staged": True}), ("git_diff", {}))


async def changes_to_commit(registry: Registry, ctx: ToolContext) -> str:
    """The status and diffs of what a commit of the work tree would take; '' when there is nothing."""
    parts: list[str] = []
    for name, arguments in READS:
        if name not in registry.tools:
            raise ToolError(f"cannot draft a commit message: no {name} tool")
        result = await registry.call(name, arguments, ctx)
        if not result.ok:
            raise ToolError(result.output)
        if result.data.get("clean") is True:
            return ""
        diff = result.data.get("diff")
        parts.append(diff if isinstance(diff, str) else result.output)
    return cut_middle("\n".join(p.strip() for p in parts if p.strip()), MAX_CHANGES_CHARS)


async def draft_commit_message(engine: Engine, changes: str) -> str:
    """One line for a commit of `changes`, as the model writes it ('' when it writes none)."""
    request = ChatRequest([{"role": "system", "content": COMMIT_SYSTEM},
                           {"role": "user", "content": f"The changes:\n\n{changes}\n\nThe commit message:"}],
                          max_tokens=MAX_TOKENS)
    reply = ReplyReader()
    async for block in engine.stream(request):
        reply.add(block)
    reply.end(MAX_TOKENS)
    return first_line(reply.text)


def first_line(text: str) -> str:
    """The reply's first line of text, without the quotes, backticks or label a model may add,
    in printable characters only: it goes into git's history, which `git log` prints raw."""
    printable = ("".join(c for c in raw if c.isprintable()).strip() for raw in text.splitlines())
    line = next((part for part in printable if part.strip("`\"' ")), "")  # not a bare code fence
    for label in ("commit message:", "message:", "summary:"):
        if line.lower().startswith(label):
            line = line[len(label):].strip()
    line = line.strip("`\"' ").rstrip(".")
    return line if len(line) <= MAX_LINE else line[:MAX_LINE - 1].rstrip() + "…"


def cut_middle(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[-limit // 4:]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters left out ...]\n{tail}"
