"""InputEditor: the multi-line prompt.

Enter sends, Ctrl+J (or Shift+Enter where the terminal reports it) adds a newline,
Up/Down on the first/last line walk the history, Tab completes `@path`, and a large paste
is kept out of the way as a placeholder that expands when sent. Keys that mean nothing to
an editor of a few lines (PageUp/PageDown; Home/End, Ctrl+Home/End and Ctrl+D when it is
empty) are passed on to the app as messages. Ctrl+Home/End on text are the editor's: its
start and end (a rewound message put back is edited there, not scrolled past).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from textual import events
from textual.content import Content
from textual.message import Message
from textual.widgets import TextArea

from clover_code.ui.terminal_text import visible

PASTE_LINES, PASTE_CHARS = 8, 800  # a paste larger than this becomes a placeholder
_AT_PATH = re.compile(r"@([\w./\-]*)$")
_PLACEHOLDER = "[pasted text #{n}: {lines} lines]"
ScrollTo = Literal["page_up", "page_down", "top", "bottom"]
# Keys the transcript takes from the editor; the Home/End ones only when the editor is empty.
_SCROLL_KEYS: dict[str, ScrollTo] = {"pageup": "page_up", "pagedown": "page_down"}
_SCROLL_KEYS_WHEN_EMPTY: dict[str, ScrollTo] = {"home": "top", "end": "bottom",
                                                "ctrl+home": "top", "ctrl+end": "bottom"}


def normalize_newlines(text: str) -> str:
    """Terminals send CR (or CR LF) between pasted lines; the document and the model want LF."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def line_count(text: str) -> int:
    return text.count("\n") + 1


class InputEditor(TextArea):
    DEFAULT_CSS = """
    InputEditor { height: auto; min-height: 3; max-height: 12; }
    """

    @dataclass
    class Submitted(Message):
        text: str  # what the model gets: pastes expanded
        shown: str  # what the transcript shows: pastes as their placeholders

    @dataclass
    class ScrollRequested(Message):
        """A scrolling key the editor does not use: the transcript's."""
        where: ScrollTo

    @dataclass
    class QuitRequested(Message):
        """Ctrl+D on an empty editor, as in a shell."""

    def __init__(self, *, paths: Callable[[], list[str]] | None = None, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, tab_behavior="focus", show_line_numbers=False,
                         compact=True, highlight_cursor_line=False)
        self.sent: list[str] = []
        self._history_at: int | None = None  # index into history while browsing
        self._draft = ""
        self._pastes: dict[str, str] = {}
        self._paths = paths or (lambda: [])
        # Keys an open popup takes before the editor (ui/tui/completion.py): whether it took it.
        self.key_filter: Callable[[str], bool] | None = None

    # --- sending -------------------------------------------------------------------------
    def expanded_text(self) -> str:
        text = self.text
        for placeholder, pasted in self._pastes.items():
            text = text.replace(placeholder, pasted)
        return text

    def submit(self) -> None:
        text = self.expanded_text()
        if not text.strip():
            return
        shown = self.text
        self.remember(shown)
        self.clear()
        self.border_subtitle = ""
        # The pastes stay known: history brings their placeholders back.
        self.post_message(self.Submitted(text, shown))

    def submit_alone(self, command: str) -> None:
        """Send `command` (a slash command picked in the popup) and leave the editor's text."""
        self.remember(command)
        self.post_message(self.Submitted(command, command))

    def remember(self, text: str) -> None:
        """Put `text` in the history (what was sent, or what Ctrl+C cleared away)."""
        if text.strip() and (not self.sent or self.sent[-1] != text):
            self.sent.append(text)
        self._history_at = None

    def restore(self, text: str) -> None:
        """Messages handed back (queued, then taken back): before what is being typed."""
        current = self.text
        self._show(text + ("\n\n" + current if current.strip() else ""))

    def take_text(self) -> str:
        """Empty the editor (into the history, so Up brings it back); what it held."""
        text = self.text
        self.remember(text)
        self.clear()
        self.border_subtitle = ""
        return text

    async def _on_key(self, event: events.Key) -> None:
        if self.key_filter is not None and self.key_filter(event.key):
            event.stop()
            event.prevent_default()
            return
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.submit()
            return
        if event.key in ("ctrl+j", "shift+enter"):
            event.stop()
            event.prevent_default()
            self.insert("\n")
            return
        if event.key == "tab" and self._complete():
            event.stop()
            event.prevent_default()
            return
        if self._pass_on(event.key) or self._to_an_end(event.key):
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)

    def _to_an_end(self, key: str) -> bool:
        """Ctrl+Home/End on text: the cursor to its start or end; whether it was one of them."""
        if key not in ("ctrl+home", "ctrl+end"):
            return False
        self.move_cursor((0, 0) if key == "ctrl+home" else self.document.end)
        return True

    def _pass_on(self, key: str) -> bool:
        """Post the app's message for a key the editor does not use; whether it was one."""
        empty = not self.text
        where = _SCROLL_KEYS.get(key) or (_SCROLL_KEYS_WHEN_EMPTY.get(key) if empty else None)
        if where is not None:
            self.post_message(self.ScrollRequested(where))
            return True
        if key == "ctrl+d" and empty:
            self.post_message(self.QuitRequested())
            return True
        return False

    # --- history -------------------------------------------------------------------------
    def action_cursor_up(self, select: bool = False) -> None:
        if select or self.cursor_location[0] > 0 or not self.sent:
            return super().action_cursor_up(select)
        if self._history_at is None:
            self._draft, self._history_at = self.text, len(self.sent)
        if self._history_at > 0:
            self._history_at -= 1
            self._show(self.sent[self._history_at])

    def action_cursor_down(self, select: bool = False) -> None:
        last = self.document.line_count - 1
        if select or self.cursor_location[0] < last or self._history_at is None:
            return super().action_cursor_down(select)
        self._history_at += 1
        if self._history_at >= len(self.sent):
            self._history_at = None
            self._show(self._draft)
        else:
            self._show(self.sent[self._history_at])

    def _show(self, text: str) -> None:
        self.load_text(text)
        self.move_cursor(self.document.end)

    # --- paste ---------------------------------------------------------------------------
    async def _on_paste(self, event: events.Paste) -> None:
        # Handled here, whole: Textual would also run TextArea's own handler after this one
        # (it dispatches to each class of the MRO) unless the default is prevented.
        event.stop()
        event.prevent_default()
        if self.read_only:
            return
        text = normalize_newlines(event.text)
        lines = line_count(text)
        if lines > PASTE_LINES or len(text) > PASTE_CHARS:
            placeholder = _PLACEHOLDER.format(n=len(self._pastes) + 1, lines=lines)
            self._pastes[placeholder] = text
            text = placeholder
        start, end = sorted(self.selection)
        self.move_cursor(self.replace(text, start, end).end_location)

    # --- @path completion ----------------------------------------------------------------
    def _complete(self) -> bool:
        row, col = self.cursor_location
        before = self.document[row][:col]
        match = _AT_PATH.search(before)
        if match is None:
            return False
        prefix = match.group(1)
        found = [p for p in self._paths() if p.startswith(prefix)] or [
            p for p in self._paths() if prefix and prefix in p]
        if not found:
            self.border_subtitle = _literal(f"no file matches @{prefix}")
            return True
        # a string prefix on purpose: completion extends what was typed, character by character
        common = os.path.commonprefix(found) if all(p.startswith(prefix) for p in found) else prefix  # noqa: RUF071
        if len(found) == 1:
            common = found[0] + " "
        if len(common) > len(prefix):
            self.insert(common[len(prefix):])
        self.border_subtitle = "" if len(found) == 1 else _literal("  ".join(found[:8]) + (
            f"  (+{len(found) - 8})" if len(found) > 8 else ""))
        return True


def _literal(text: str) -> Content:
    """File names come from the workspace: shown as written, not as markup or terminal codes."""
    return Content(visible(text))
