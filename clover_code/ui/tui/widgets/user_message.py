"""UserMessage: what the user sent, shown as typed (a large paste as its placeholder)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from clover_code.ui.terminal_text import visible


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage { height: auto; }
    """

    def __init__(self, text: str, shown: str | None = None) -> None:
        super().__init__(Text(visible(shown or text)))  # pasted text, or a resumed log's
        self.text = text  # what the model got
