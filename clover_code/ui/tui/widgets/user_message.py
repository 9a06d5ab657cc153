"""UserMessage: what the user sent, shown as typed."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from clover_code.ui.terminal_text import visible


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage { height: auto; }
    """

    def __init__(self, text: str) -> None:
        super().__init__(Text(visible(text)))  # pasted text, or a resumed log's
        self.text = text
