"""What the completion popup offers for the word at the editor's cursor, and its keys.

`/` at the start of the message offers the slash commands, as the command table lists them
when it is typed (commands/table.py: one registered later is offered too). Enter runs the
chosen one, Tab only completes it; typed before text already there, Enter runs the command
alone and leaves that text in the editor. A `/word` elsewhere (at the start of a line or
after a space, such as after a rewound message put back in the editor) is offered the same
commands and runs alone too, the text around it staying, but Enter runs it only once its
name is typed out (before that Enter completes it, and sends a lone `/` as text): prose that
ends in `/c` never becomes a `/commit`. `@` after a space
or at the start offers the workspace's files and folders (Enter or Tab completes; a folder
keeps the popup open on what is inside). Up/Down move, Esc closes (and Enter then sends the
text as it is). With the popup closed, every other key is the editor's as before.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from clover_code.ui.tui.widgets.completion_popup import (
    MAX_SHOWN,
    Completion,
    CompletionPopup,
)

_AT_WORD = re.compile(r"(?:^|(?<=\s))@([^\s@]*)$")
_COMMAND_WORD = re.compile(r"(?:^|(?<=\s))/([^\s/]*)$")  # not a path: /usr/bin is no command


@dataclass(frozen=True)
class Word:
    """The word being completed: where it starts on the cursor's row, and its kind."""

    kind: str  # "command" | "path"
    row: int
    start: int  # column of its `/` or `@`
    typed: str  # after the `/` or `@`, up to the cursor

    @property
    def leads(self) -> bool:
        """It starts the message: the whole message is the command."""
        return self.row == 0 and self.start == 0


class Editor(Protocol):
    """What the completer uses of the editor (widgets/input_editor.InputEditor)."""

    text: str

    @property
    def cursor_location(self) -> tuple[int, int]: ...

    def replace(self, insert: str, start: tuple[int, int], end: tuple[int, int]) -> object: ...

    def submit(self) -> None: ...

    def submit_alone(self, command: str) -> None: ...


def word_at(text_lines: list[str], row: int, col: int) -> Word | None:
    line = text_lines[row] if row < len(text_lines) else ""
    before = line[:col]
    if row == 0 and before.startswith("/") and not any(c.isspace() for c in before):
        return Word("command", 0, 0, before[1:])
    match = _COMMAND_WORD.search(before)
    if match is not None and not line[col:col + 1].strip():  # the word ends at the cursor
        return Word("command", row, match.start(), match.group(1))
    match = _AT_WORD.search(before)
    if match is not None:
        return Word("path", row, match.start(), match.group(1))
    return None


def with_folders(files: Iterable[str]) -> list[str]:
    """The files and every folder above them (`src/`), folders first."""
    files = list(files)
    folders = sorted({f[: i + 1] for f in files for i, c in enumerate(f) if c == "/"})
    return folders + files


def path_choices(typed: str, paths: Iterable[str]) -> list[Completion]:
    """Paths matching `typed`: one that starts with it first, then one whose name starts with
    it, then one holding it, then its letters in order; shorter first."""
    needle = typed.lower()
    if not needle:  # nothing typed yet: the top of the workspace
        paths = (p for p in paths if "/" not in p.rstrip("/"))
    ranked = ((rank, len(path), path) for path in paths if (rank := _rank(path.lower(), needle)) is not None)
    return [Completion(path, "", "" if path.endswith("/") else " ")
            for _, _, path in heapq.nsmallest(MAX_SHOWN, ranked)]


def _rank(path: str, needle: str) -> int | None:
    if path.startswith(needle):
        return 0
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith(needle):
        return 1
    if needle in path:
        return 2
    at = 0
    for char in needle:  # a subsequence: `tuiapp` finds ui/tui/app.py
        at = path.find(char, at) + 1
        if not at:
            return None
    return 3


class Completer:
    """Keeps the popup in step with the editor; takes the keys that move or pick in it."""

    def __init__(self, editor: Editor, popup: CompletionPopup, commands: Callable[[], list[Completion]],
                 files: Callable[[], list[str]], is_command: Callable[[str], bool]) -> None:
        self.editor, self.popup, self.commands, self.files = editor, popup, commands, files
        self.is_command = is_command  # a name the command table knows, aliases included
        self.word: Word | None = None
        self._dismissed = ""  # the text as it was when Esc closed the popup: Enter sends it
        self._text = ""  # the editor's text at the last change
        self._ours = False  # the next change is a completion being put in
        self._paths: tuple[list[str] | None, list[str]] = (None, [])  # (files, with their folders)

    def text_changed(self) -> None:
        text, before = self.editor.text, self._text
        self._text = text
        keyed = abs(len(text) - len(before)) <= 2 or self._ours  # a key, not a paste or a loaded prompt
        self._ours = False
        row, col = self.editor.cursor_location
        word = word_at(text.split("\n"), row, col) if keyed or self.popup.is_open else None
        self.word = word
        if word is None:
            self.popup.close()
        elif word.kind == "command":
            typed = word.typed.lower()
            found = [c for c in self.commands() if c.value[1:].startswith(typed)]
            found.sort(key=lambda c: c.value[1:] != typed)  # `/mode` typed out: /mode first, then /model
            self.popup.show(found)
        else:
            self.popup.show(path_choices(word.typed, self._workspace_paths()))

    def _workspace_paths(self) -> list[str]:
        files = self.files()
        if files is not self._paths[0]:  # the app's list is cached: folders are worked out once per list
            self._paths = (files, with_folders(files))
        return self._paths[1]

    def key(self, key: str) -> bool:
        """Whether `key` was the popup's (the editor then does nothing with it)."""
        if self.popup.is_open and self.editor.text != self._text:
            self.text_changed()  # keys typed faster than their Changed messages arrive: catch up first
        if not self.popup.is_open or self.word is None:
            return key == "enter" and self._run_typed_command()
        if key in ("up", "down"):
            self.popup.move(-1 if key == "up" else 1)
        elif key == "escape":
            self.popup.close()
            self._dismissed = self.editor.text
        elif key == "enter" and self.word.kind == "command" and not self.word.leads and not self.word.typed:
            self.popup.close()  # a lone `/` after text: Enter sends the text as it is
            return False
        elif key in ("tab", "enter"):
            self._accept(run=key == "enter" and self.word.kind == "command")
        else:
            return False
        return True

    def _run_typed_command(self) -> bool:
        """Enter with the popup closed (Esc closed it, or its Changed messages are still on the
        way): a command typed out after other text runs alone; whether one did."""
        row, col = self.editor.cursor_location
        text = self.editor.text
        word = word_at(text.split("\n"), row, col)
        if word is None or word.kind != "command" or word.leads or text == self._dismissed \
                or not self.is_command("/" + word.typed):
            return False
        self._run_alone(word, col, "/" + word.typed)
        return True

    def _accept(self, run: bool) -> None:
        word, chosen = self.word, self.popup.chosen()
        if word is None or chosen is None:
            return
        _, col = self.editor.cursor_location
        marker = "/" if word.kind == "command" else "@"
        if run and not word.leads and not self.is_command("/" + word.typed):
            run = False  # after other text only a name typed out runs: this completes it
        self.popup.close()
        if run and (not word.leads or self._text_after(word, col)):
            # beside a message (a rewound one put back): the command runs, the message stays
            self._run_alone(word, col, marker + chosen.value.lstrip("/"))
            return
        self._ours = True  # a folder keeps the popup open on what it holds
        # After other text a command takes no argument: no space after it, so Enter runs it next.
        then = "" if run or (word.kind == "command" and not word.leads) else chosen.then
        self.editor.replace(marker + chosen.value.lstrip("/") + then, (word.row, word.start), (word.row, col))
        if run:
            self.editor.submit()

    def _text_after(self, word: Word, col: int) -> bool:
        lines = self.editor.text.split("\n")
        return bool((lines[word.row][col:] + "".join(lines[word.row + 1:])).strip())

    def _run_alone(self, word: Word, col: int, command: str) -> None:
        """Take the command word out of the text and run it; the rest stays in the editor as it
        was before the command was typed (the spaces that led to a last word go with it)."""
        lines = self.editor.text.split("\n")
        start, end = (word.row, word.start), (word.row, col)
        if not self._text_after(word, col):
            end = (len(lines) - 1, len(lines[-1]))
            row, head = word.row, lines[word.row][:word.start].rstrip()
            while not head and row > 0:
                row -= 1
                head = lines[row].rstrip()
            start = (row, len(head))
        self.editor.replace("", start, end)
        self.editor.submit_alone(command)
