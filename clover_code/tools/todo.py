"""todo_write: the model's checklist for a task of several steps.

The list is the model's plan made visible, not state of the workspace: the call replaces the
whole list, touches no file and runs no command, so it runs in every mode (plan included).
The agent turns a result into a TodosChanged event (agent/todos.py): UIs pin it, the session
log keeps it.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, Field

from clover_code.tools import ToolContext, ToolError, ToolKind, ToolResult
from clover_code.tools.touches import Touches

MAX_ITEMS = 50  # a list longer than this is no longer a checklist anyone reads
_MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}


class TodoEntry(BaseModel):
    content: str = Field(min_length=1, max_length=500, description="the step, in a short sentence")
    status: Literal["pending", "in_progress", "done"] = "pending"


class TodoArgs(BaseModel):
    todos: list[TodoEntry] = Field(description="the whole list, in order; it replaces the earlier one")


class TodoWrite:
    name: ClassVar[str] = "todo_write"
    kind: ClassVar[ToolKind] = "read"  # it touches no file (touches() says so)
    Args: ClassVar[type[BaseModel]] = TodoArgs

    def touches(self, args: BaseModel) -> Touches:
        assert isinstance(args, TodoArgs)
        done = sum(t.status == "done" for t in args.todos)
        return Touches(label=f"{done}/{len(args.todos)} done")

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, TodoArgs)
        if len(args.todos) > MAX_ITEMS:
            raise ToolError(f"at most {MAX_ITEMS} items; merge small steps into larger ones")
        if sum(t.status == "in_progress" for t in args.todos) > 1:
            raise ToolError("only one item may be in_progress at a time: finish it (done) before the next")
        todos = [{"content": t.content, "status": t.status} for t in args.todos]
        lines = "\n".join(f"{_MARKS[t.status]} {t.content}" for t in args.todos)
        return ToolResult(True, f"Todo list updated:\n{lines}" if lines else "Todo list cleared.",
                          {"todos": todos})


TOOLS = [TodoWrite()]
