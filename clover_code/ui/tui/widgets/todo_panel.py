"""TodoPanel: the model's todo list (todo_write), pinned above the editor while a turn runs and
folded to one line when it ends (the count and the items, cut to the width), so a finished
list no longer takes the editor's rows.

Items come from the model: shown through `visible`, each cut to one line of the panel's width,
never read as markup.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from clover_code.agent.events import TodosChanged
from clover_code.agent.todos import checklist
from clover_code.ui.terminal_text import one_line, visible

MAX_LINES = 10  # of items shown unfolded; the rest is counted


class TodoPanel(Static):
    DEFAULT_CSS = """
    TodoPanel { height: auto; padding: 0 1; display: none; color: $text; }
    TodoPanel.-shown { display: block; }
    TodoPanel.-folded { color: $text-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.todos: TodosChanged | None = None
        self.folded = False

    def show(self, todos: TodosChanged) -> None:
        """The list as it now stands, unfolded."""
        self.todos, self.folded = todos, False
        self._draw()

    def fold(self) -> None:
        """The turn ended: one line, the count."""
        self.folded = True
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        todos = self.todos
        shown = todos is not None and bool(todos.items)
        self.set_class(shown, "-shown")
        self.set_class(self.folded, "-folded")
        if todos is None or not shown:
            return
        room = max(20, (self.size.width or 80) - 2)
        head = f"Todo {todos.done}/{len(todos.items)} done"
        if self.folded:
            self.update(Text(one_line(f"{head} · " + "; ".join(i.content for i in todos.items), room)))
            return
        lines = checklist(todos)
        first = next((n for n, i in enumerate(todos.items) if i.status != "done"), len(lines))
        start = max(0, min(first, len(lines) - MAX_LINES))
        text = Text(head, style="bold")
        for n, line in enumerate(lines[start:start + MAX_LINES], start):
            style = {"done": "dim strike", "in_progress": "bold cyan"}.get(todos.items[n].status, "")
            text.append("\n")
            text.append(one_line(visible(line), room), style=style)
        if len(lines) > MAX_LINES:
            text.append(f"\n… {len(lines) - MAX_LINES} more", style="dim")
        self.update(text)
