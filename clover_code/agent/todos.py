"""The todo list as an agent event: what a todo_write result (tools/todo.py) says, checked again
here because a result's data is only JSON, and a session log read back is anyone's."""

from __future__ import annotations

from clover_code.agent.events import TodoItem, TodosChanged, TodoStatus
from clover_code.tools import ToolResult

TODO_TOOL = "todo_write"
_STATUSES: tuple[TodoStatus, ...] = ("pending", "in_progress", "done")


def todos_changed(tool: str, result: ToolResult) -> TodosChanged | None:
    """The list a successful todo_write call set; None for any other call."""
    if tool != TODO_TOOL or not result.ok or not isinstance(todos := result.data.get("todos"), list):
        return None
    items = []
    for entry in todos:
        if isinstance(entry, dict) and isinstance(text := entry.get("content"), str):
            status = entry.get("status")
            items.append(TodoItem(text, next((s for s in _STATUSES if s == status), "pending")))
    return TodosChanged(tuple(items))


MARKS: dict[TodoStatus, str] = {"pending": "☐", "in_progress": "▸", "done": "✔"}


def checklist(todos: TodosChanged) -> list[str]:
    """The list as lines a UI shows: a mark for the status, then the step."""
    return [f"{MARKS[item.status]} {item.content}" for item in todos.items]
