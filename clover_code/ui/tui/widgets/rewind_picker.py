"""RewindPicker: choose the message to go back to (Esc Esc or /undo).

The session's user messages, oldest at the top and the latest chosen; Enter rewinds the
files and the conversation to just before the chosen one, Esc leaves everything as it is.
Dismisses with the chosen turn's index, or None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from clover_code.ui.terminal_text import visible

PREVIEW_CHARS = 160


@dataclass(frozen=True)
class TurnChoice:
    index: int  # the conversation's turn number (Conversation.turns())
    text: str  # what the user sent


class RewindPicker(ModalScreen[int | None]):
    DEFAULT_CSS = """
    RewindPicker { align: center bottom; }
    RewindPicker > Vertical { width: 100%; height: auto; max-height: 80%; border: round $accent;
                              background: $surface; padding: 0 1; }
    RewindPicker OptionList, RewindPicker OptionList:focus { height: auto; max-height: 20; border: none; }
    RewindPicker .legend { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "close")]

    def __init__(self, turns: list[TurnChoice]) -> None:
        super().__init__()
        self.turns = turns

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Rewind: go back to just before a message", style="bold"))
            yield OptionList(*(Option(self._label(i, t)) for i, t in enumerate(self.turns)))
            yield Static("Enter rewinds the files and the conversation (the message comes back to the editor) · "
                         "/redo takes it back · Esc keeps everything", classes="legend", markup=False)

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = len(self.turns) - 1
        options.focus()

    def _label(self, position: int, turn: TurnChoice) -> Text:
        flat = " ".join(turn.text.split())
        if len(flat) > PREVIEW_CHARS:
            flat = flat[: PREVIEW_CHARS - 1] + "…"
        later = len(self.turns) - position - 1
        text = Text(f"{turn.index + 1:>3}. ", style="dim")
        text.append(visible(flat))
        text.append(f"   (and {later} after)" if later else "   (the latest)", style="dim")
        return text

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.turns[event.option_index].index)
