"""CompletionPopup: the choices for what is being typed (`/command`, `@path`), above the editor.

It never takes focus: the editor keeps it and hands the popup the keys that move or pick
(ui/tui/completion.py decides which). Entries come from the workspace and the commands:
shown as written, never read as markup.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from clover_code.ui.terminal_text import visible

MAX_SHOWN = 50


@dataclass(frozen=True)
class Completion:
    value: str  # what replaces the word being typed
    detail: str = ""  # shown dim beside it: what a command does
    then: str = " "  # typed after the value ("" keeps completing: a folder's files come next)


class CompletionPopup(OptionList, can_focus=False):
    DEFAULT_CSS = """
    CompletionPopup { height: auto; max-height: 8; display: none; border: none; padding: 0 1;
                      background: $surface; }
    CompletionPopup.-open { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.items: list[Completion] = []

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def show(self, items: list[Completion]) -> None:
        if not items:
            self.close()
            return
        if items == self.items and self.is_open:
            return  # a keystroke that changed nothing here: no redraw, no layout
        self.items = items[:MAX_SHOWN]
        self.set_options(Option(_label(item)) for item in self.items)
        self.highlighted = 0
        self.add_class("-open")

    def close(self) -> None:
        if self.is_open:
            self.remove_class("-open")
        self.items = []

    def move(self, delta: int) -> None:
        if self.items:
            self.highlighted = ((self.highlighted or 0) + delta) % len(self.items)

    def chosen(self) -> Completion | None:
        if not self.items or self.highlighted is None:
            return None
        return self.items[self.highlighted]


def _label(item: Completion) -> Text:
    text = Text(visible(item.value), style="bold")
    if item.detail:
        text.append(f"  {visible(item.detail)}", style="dim")
    return text
