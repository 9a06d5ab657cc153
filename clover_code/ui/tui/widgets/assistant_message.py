"""AssistantMessage: the model's reply, growing one committed block at a time.

A MarkdownBlock itself (no container around it: every nesting level is one more layer
of lines to paint per frame). Tool-call markup is hidden: calls get cards. After
`freeze()` the reply stays one cheap widget.
"""

from __future__ import annotations

from clover_code.ui.tui.display_text import ToolMarkupFilter
from clover_code.ui.tui.widgets.markdown_block import MarkdownBlock


class AssistantMessage(MarkdownBlock):
    def __init__(self, text: str = "", *, frozen: bool = False) -> None:
        self._filter = ToolMarkupFilter()
        shown = self._filter.feed(text)
        super().__init__(shown, live=not frozen)
        self.frozen = frozen
        self.display = bool(shown.strip()) or not frozen

    def append(self, raw: str) -> None:
        """Add the text of one or more committed blocks."""
        shown = self._filter.feed(raw)
        if shown and not self.frozen:
            self.set_text(self.text + shown)

    def freeze(self, note: str | None = None) -> None:
        """The reply is finished."""
        if self.frozen:
            return
        self.frozen = True
        if note:
            self.set_text(self.text.rstrip("\n") + f"\n\n*{note}*")
        super().freeze()
        if not self.text.strip():
            self.display = False
