"""UserMessage: what the user sent, shown as typed."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class UserMessage(Static):
    DEFAULT_CSS = """
    UserMessage { height: auto; }
    """

    def __init__(self, text: str) -> None:
        super().__init__(Text(text))
        self.text = text
