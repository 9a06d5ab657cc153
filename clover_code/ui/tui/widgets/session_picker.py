"""SessionPicker: `/resume` without an id: the workspace's sessions, newest first, with a
preview of the highlighted one. Enter resumes it, Esc keeps the current session.

The list is given; the preview comes from a function run in a thread (it replays a whole
log), the latest highlight winning. Dismisses with the chosen session's id, or None.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.session_list import SessionSummary


class SessionPicker(ModalScreen[str | None]):
    DEFAULT_CSS = """
    SessionPicker { align: center middle; }
    SessionPicker > Vertical { width: 100%; height: 100%; border: round $accent; background: $surface;
                               padding: 0 1; }
    SessionPicker OptionList, SessionPicker OptionList:focus { height: auto; max-height: 40%; border: none; }
    SessionPicker VerticalScroll { height: 1fr; border-top: solid $panel-lighten-2; }
    SessionPicker .legend { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss(None)", "close")]

    def __init__(self, sessions: list[SessionSummary], preview: Callable[[Path], str]) -> None:
        super().__init__()
        self.sessions, self._preview = sessions, preview

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text("Resume a session of this folder", style="bold"))
            yield OptionList(*(Option(Text(visible(s.line()), no_wrap=True, overflow="ellipsis"))
                               for s in self.sessions))
            with VerticalScroll():
                yield Static("", id="preview", markup=False)
            yield Static("Enter resumes · Up/Down choose · Esc keeps this session", classes="legend", markup=False)

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = 0
        options.focus()

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()
        self.query_one("#preview", Static).update("loading…")
        self._load(self.sessions[event.option_index].path)

    @work(thread=True, exclusive=True, group="preview", exit_on_error=False)
    def _load(self, path: Path) -> None:
        text = self._preview(path)
        self.app.call_from_thread(self._show, path, text)

    def _show(self, path: Path, text: str) -> None:
        options = self.query_one(OptionList)
        current = options.highlighted
        if current is not None and self.sessions[current].path == path:  # a later highlight wins
            self.query_one("#preview", Static).update(Text(visible(text)))
            scroll = self.query_one(VerticalScroll)  # at the latest messages: where resuming goes on
            self.call_after_refresh(scroll.scroll_end, animate=False)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.sessions[event.option_index].id)
