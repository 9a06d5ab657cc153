"""AssistantMessage: the model's reply, growing one committed block at a time.

A MarkdownBlock itself (no container around it: every nesting level is one more layer
of lines to paint per frame). It is given the reply's visible text (the agent's TextDelta
events: tool calls get cards, their markup never comes here). After `freeze()` the reply
stays one cheap widget.
"""

from __future__ import annotations

from clover_code.ui.tui.widgets.markdown_block import MarkdownBlock


class AssistantMessage(MarkdownBlock):
    def __init__(self, text: str = "", *, frozen: bool = False) -> None:
        super().__init__(text, live=not frozen)
        self.frozen = frozen
        self.display = bool(text.strip()) or not frozen

    def append(self, text: str) -> None:
        """Add the visible text of one or more committed blocks."""
        if text and not self.frozen:
            self.set_text(self.text + text)

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
