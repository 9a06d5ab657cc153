"""ConversationView: the scrolling transcript: user messages, replies, tool cards, notes.

Stays anchored to the bottom while new text arrives, until the user scrolls up; what the
user sends (a message, a command) brings it back down, so its answer is seen.
"""

from __future__ import annotations

from typing import Literal

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from clover_code.engine import ToolCall
from clover_code.tools.touches import Touches
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.widgets.assistant_message import AssistantMessage
from clover_code.ui.tui.widgets.tool_card import ToolCard
from clover_code.ui.tui.widgets.user_message import UserMessage


class ConversationView(VerticalScroll, can_focus=False):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.current: AssistantMessage | None = None  # the reply being streamed
        self.cards: dict[str, ToolCard] = {}

    def on_mount(self) -> None:
        self.anchor()

    def add_user(self, text: str, shown: str | None = None) -> UserMessage:
        self.end_assistant()
        widget = UserMessage(text, shown)
        self.mount(widget)
        return widget

    def append_text(self, text: str) -> AssistantMessage:
        if self.current is None:
            self.current = AssistantMessage()
            self.mount(self.current)
        self.current.append(text)
        return self.current

    def end_assistant(self, note: str | None = None) -> None:
        if self.current is not None:
            self.current.freeze(note)
            self.current = None

    def card(self, call: ToolCall, new: bool = False, touches: Touches | None = None) -> ToolCard:
        """The card of `call`; `new` starts one even if an earlier call had the same id.
        `touches`: what the call touches, for a card started now."""
        card = self.cards.get(call.id)
        if card is None or new:
            self.end_assistant()
            card = self.cards[call.id] = ToolCard(call, touches)
            self.mount(card)
        return card

    def cancel_running(self) -> None:
        self.end_assistant("cancelled")
        for card in self.cards.values():
            if card.status in ("parsed", "approval", "running"):
                card.set_status("cancelled")

    def add_note(self, text: str, kind: str = "info") -> Static:
        widget = Static(Text(visible(text)), classes=f"note -{kind}")  # notes quote tools and git
        self.mount(widget)
        return widget

    def scroll_by_key(self, where: Literal["page_up", "page_down", "top", "bottom"]) -> None:
        """Keys from the editor. Reaching the bottom anchors the view again (scroll_end does)."""
        if where == "page_up":
            self.scroll_page_up(animate=False)
        elif where == "page_down":
            self.scroll_page_down(animate=False)
        elif where == "top":
            self.scroll_home(animate=False)
        else:
            self.scroll_end(animate=False)

    def clear(self) -> None:
        self.current = None
        self.cards.clear()
        self.remove_children()
