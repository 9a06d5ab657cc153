"""RewindPicker: choose the message to go back to (Esc Esc or /undo), then what goes back.

Step one lists the session's user messages, oldest at the top and the latest chosen; Enter
takes the chosen one to step two, which asks what to rewind, as Claude Code does: the code
and the conversation (the default), the conversation only (the files stay), or the code only
(the conversation stays). A message whose files cannot be restored (its session began in a
clover-code that kept file checkpoints per run only) says so in both steps, and only its
conversation can go back. Keys only: Up/Down and Enter, 1 2 3 in step two, Esc goes back a
step (from the first, it keeps everything). Dismisses with (turn index, scope), or None.
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

from clover_code.agent.events import RewindScope
from clover_code.ui.terminal_text import one_line, visible

NOT_KEPT = "files not kept"  # step two says why, and offers the conversation only
SCOPES: list[tuple[RewindScope, str, str]] = [
    ("both", "Code and conversation", "both go back to before it"),
    ("conversation", "Conversation only", "the files stay as they are"),
    ("code", "Code only", "the conversation stays as it is"),
]
PICK_MESSAGE = "Enter: choose what to rewind · Esc: keep everything"
PICK_SCOPE = "Enter or 1-3 rewinds · /redo takes it back · Esc: back to the messages"


@dataclass(frozen=True)
class TurnChoice:
    index: int  # the conversation's turn number (Conversation.turns())
    text: str  # what the user sent
    files_kept: bool = True  # its file checkpoints exist: the files can go back too


class RewindPicker(ModalScreen[tuple[int, RewindScope] | None]):
    DEFAULT_CSS = """
    RewindPicker { align: center bottom; }
    RewindPicker > Vertical { width: 100%; height: auto; max-height: 80%; border: round $accent;
                              background: $surface; padding: 0 1; }
    RewindPicker OptionList, RewindPicker OptionList:focus { height: auto; max-height: 16; border: none; }
    RewindPicker #scopes { display: none; }
    RewindPicker.-scope #scopes { display: block; }
    RewindPicker.-scope #messages { display: none; }
    RewindPicker .legend { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "back / close"),
        Binding("1", "scope(0)", show=False),
        Binding("2", "scope(1)", show=False),
        Binding("3", "scope(2)", show=False),
    ]

    def __init__(self, turns: list[TurnChoice]) -> None:
        super().__init__()
        self.turns = turns
        self.chosen: TurnChoice | None = None  # step two's message

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Rewind: go back to just before a message", style="bold"), id="title")
            yield OptionList(*(Option(self._label(i, t)) for i, t in enumerate(self.turns)), id="messages")
            yield OptionList(id="scopes")
            yield Static(PICK_MESSAGE, id="legend", classes="legend", markup=False)

    def on_mount(self) -> None:
        options = self.query_one("#messages", OptionList)
        options.highlighted = len(self.turns) - 1
        options.focus()

    def _preview(self, text: str, room: int) -> str:
        return one_line(visible(text), room)

    def _label(self, position: int, turn: TurnChoice) -> Text:
        later = len(self.turns) - position - 1
        after = f"   (and {later} after)" if later else "   (the latest)"
        kept = "" if turn.files_kept else f" · {NOT_KEPT}"
        room = max(self.app.size.width - 16 - len(after) - len(kept), 10)  # one line each, at 80 columns too
        text = Text(f"{turn.index + 1:>3}. ", style="dim")
        text.append(self._preview(turn.text, room))
        text.append(after, style="dim")
        if kept:
            text.append(kept, style="yellow")
        return text

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option_list.id == "messages":
            self._ask_scope(self.turns[event.option_index])
        else:
            self.action_scope(event.option_index)

    def _ask_scope(self, turn: TurnChoice) -> None:
        """Step two: what goes back to before `turn`."""
        self.chosen = turn
        title = Text(f"Rewind to before message {turn.index + 1}: ", style="bold")
        title.append(self._preview(turn.text, max(self.app.size.width - 40, 20)))
        if not turn.files_kept:
            title.append("\nNo file checkpoint of this message was kept (made by an older clover-code, older "
                         "than 14 days, or no git sandbox here): only the conversation can go back.", style="yellow")
        self.query_one("#title", Static).update(title)
        scopes = self.query_one("#scopes", OptionList)
        scopes.clear_options()
        for number, (scope, name, what) in enumerate(SCOPES, 1):
            label = Text(f"{number}. {name:<22}", style="bold")
            label.append(what, style="dim")
            scopes.add_option(Option(label, disabled=scope != "conversation" and not turn.files_kept))
        scopes.highlighted = 0 if turn.files_kept else 1
        self.query_one("#legend", Static).update(PICK_SCOPE)
        self.add_class("-scope")
        scopes.focus()

    def action_scope(self, number: int) -> None:
        turn = self.chosen
        if turn is None or not 0 <= number < len(SCOPES):
            return
        scope = SCOPES[number][0]
        if scope != "conversation" and not turn.files_kept:
            return  # shown disabled: nothing of its files to restore
        self.dismiss((turn.index, scope))

    def action_back(self) -> None:
        if self.chosen is None:
            self.dismiss(None)
            return
        self.chosen = None
        self.remove_class("-scope")
        self.query_one("#title", Static).update(Text("Rewind: go back to just before a message", style="bold"))
        self.query_one("#legend", Static).update(PICK_MESSAGE)
        self.query_one("#messages", OptionList).focus()
