"""HistorySearch: Ctrl+R over the prompts sent before (this and earlier sessions).

A search line and the matching prompts, newest first, above the editor. Typing narrows,
Up/Down (or Ctrl+R again) move, Enter chooses, Esc closes without choosing; `done(text or
None)` is told which. The prompts come from a function, so the widget never reads a file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from clover_code.ui.terminal_text import one_line, visible

SHOWN = 8
PREVIEW_CHARS = 200


class HistorySearch(Vertical):
    DEFAULT_CSS = """
    HistorySearch { height: auto; display: none; border: round $accent; padding: 0 1; background: $surface; }
    HistorySearch.-open { display: block; }
    HistorySearch > Input, HistorySearch > Input:focus { border: none; height: 1; padding: 0; }
    HistorySearch > OptionList, HistorySearch > OptionList:focus { height: auto; max-height: 8; border: none;
                                                                   padding: 0; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", show=False), Binding("down", "move(1)", show=False),
        Binding("ctrl+r", "move(1)", show=False), Binding("escape", "close", show=False),
    ]

    def __init__(self, search: Callable[[str], list[str]], done: Callable[[str | None], None], *,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.search, self.done = search, done
        self.found: list[str] = []

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search the prompts you sent (Enter to use · Esc to close)")
        yield OptionList()

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self, query: str = "") -> None:
        self.border_title = "history search"
        self.add_class("-open")
        field = self.query_one(Input)
        field.value = query
        # Now, not on the next idle (focus() defers): keys already queued behind Ctrl+R are
        # routed when they are handled, and they belong to the search.
        self.screen.set_focus(field)
        self._show(query)

    def action_close(self) -> None:
        self._finish(None)

    def action_move(self, delta: int) -> None:
        options = self.query_one(OptionList)
        if self.found:
            options.highlighted = ((options.highlighted or 0) + delta) % len(self.found)

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self._show(event.value)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        highlighted = self.query_one(OptionList).highlighted
        self._finish(self.found[highlighted] if self.found and highlighted is not None else None)

    @on(OptionList.OptionSelected)
    def _clicked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self._finish(self.found[event.option_index])

    def _show(self, query: str) -> None:
        self.found = self.search(query)
        options = self.query_one(OptionList)
        options.set_options(Option(_preview(text, query)) for text in self.found[:50])
        options.highlighted = 0 if self.found else None
        self.border_subtitle = f"{len(self.found)} match{'es' if len(self.found) != 1 else ''}"

    def _finish(self, text: str | None) -> None:
        self.remove_class("-open")
        self.done(text)


def _preview(text: str, query: str) -> Text:
    """The prompt on one line, the match in bold."""
    shown = Text(one_line(visible(text), PREVIEW_CHARS))
    if query:
        shown.highlight_words([query], style="bold yellow", case_sensitive=False)
    return shown
