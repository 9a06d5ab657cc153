"""ToolCard: one tool call: name, arguments, status, duration; collapsible.

The heading names the call by what it touches, as its tool declares (the command, the paths,
a pattern), and fits its width: what the call acts on is cut to the room left, so the status
mark always shows. Edits show their diff syntax-highlighted, shell commands their output and
exit code (once, in the heading), other calls their arguments as `name: value` lines. A card
the program unfolds (a diff, a failure) leaves the transcript where it is; one the user
unfolds is scrolled into view.
Everything shown comes from the model or the workspace: it passes `visible` (no terminal
controls) and is never read as markup (the title is Content, not a markup string).
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from rich.cells import cell_len
from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.content import Content
from textual.widgets import Collapsible, Static

from clover_code import jsonsafe
from clover_code.engine import ToolCall
from clover_code.jsonsafe import JSONObject
from clover_code.tools.touches import Touches
from clover_code.ui.terminal_text import one_line, visible

MAX_OUTPUT_LINES = 60
MAX_VALUE_LINES = 12  # of one argument in a card (an edit's old/new text shows as its diff)
SUMMARY_CELLS = 60  # the most a heading gives what the call acts on, however wide the screen
TITLE_SYMBOL_CELLS = 2  # the title's "▶ " before the heading
MIN_SUMMARY_CELLS = 4  # less room than this: no summary rather than an ellipsis and a letter
# The shell's own status line (tools/shell.py): the heading says it, the output need not.
_EXIT_LINE = re.compile(r"\n?\[exit code (-?\d+)\]\s*$")
_EDIT_TEXTS = ("old_string", "new_string", "content", "patch")
_LABELS = {"run_shell": "shell"}
CardStatus = Literal["parsed", "approval", "running", "ok", "failed", "denied", "cancelled"]
_STATUS: dict[CardStatus, tuple[str, str]] = {
    "parsed": ("…", "dim"), "approval": ("? waiting for approval", "yellow"),
    "running": ("⟳ running", "cyan"), "ok": ("✓", "green"), "failed": ("✗", "red"),
    "denied": ("✗ denied", "red"), "cancelled": ("■ cancelled", "yellow"),
}


def parse_arguments(arguments: str) -> JSONObject | None:
    try:
        value = jsonsafe.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def tool_label(name: str) -> str:
    """A tool as the spinner names it: `shell` for run_shell, else its own name."""
    return visible(_LABELS.get(name, name))


def summarize(touches: Touches | None, limit: int = SUMMARY_CELLS) -> str:
    """What the call does, in a line: what its tool says it touches ("" when it says nothing)."""
    return one_line(visible(touches.summary), limit) if touches is not None else ""


def fit_heading(name: str, touches: Touches | None, mark: str, room: int | None) -> str:
    """A card's heading in `room` cells (None: not laid out yet): the tool's name, what the
    call acts on and the status mark. The mark is never cut: the summary gives way first, then
    the name."""
    room = room if room is not None else cell_len(name) + SUMMARY_CELLS + cell_len(mark) + 5
    for_name = room - cell_len(mark) - 3
    name = one_line(name, max(for_name, 1))
    for_summary = min(for_name - cell_len(name) - 2, SUMMARY_CELLS)
    what = summarize(touches, for_summary) if for_summary >= MIN_SUMMARY_CELLS else ""
    return f"{name}{'  ' + what if what else ''}   {mark}"


def clip_lines(text: str, limit: int = MAX_OUTPUT_LINES) -> str:
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    head, tail = lines[: limit // 2], lines[-limit // 2:]
    return "\n".join([*head, f"… {len(lines) - limit} more lines …", *tail])


def diff_view(diff: str, limit: int = 200) -> Syntax:
    return Syntax(visible(clip_lines(diff, limit)), "diff", theme="ansi_dark", word_wrap=True,
                  background_color="default")


def arguments_view(call: ToolCall, skip: tuple[str, ...] = ()) -> Text:
    """A call's arguments as `name: value` lines: strings as written (several lines indented),
    other values as JSON; null ones (a default the model left) are left out."""
    args = parse_arguments(call.arguments)
    if args is None:  # not a JSON object: shown as the model wrote it
        return Text(visible(clip_lines(call.arguments, 30)), style="dim")
    text = Text(style="dim")
    for key, value in args.items():
        if value is None or key in skip:
            continue
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        shown = visible(clip_lines(shown.rstrip("\n"), MAX_VALUE_LINES))
        if text:
            text.append("\n")
        text.append(f"{visible(key)}:", style="bold")
        text.append(f"\n  {shown.replace(chr(10), chr(10) + '  ')}" if "\n" in shown else f" {shown}")
    return text


def split_exit_line(output: str) -> tuple[str, int | None]:
    """The shell's output without its closing `[exit code N]` line, and N (None: no such line)."""
    match = _EXIT_LINE.search(output)
    if match is None:
        return output, None
    return output[: match.start()], int(match.group(1))


class ToolCard(Collapsible):
    DEFAULT_CSS = """
    ToolCard { height: auto; }
    """

    def __init__(self, call: ToolCall, touches: Touches | None = None) -> None:
        self.call, self.touches = call, touches
        self.status: CardStatus = "parsed"
        self.seconds: float | None = None
        self.exit_code: int | None = None
        self._room: int | None = None  # cells the heading has, once laid out
        self._unfolding = False  # the program unfolds it: the view is not to move
        self._body = Static(arguments_view(call), classes="tool-body")
        # Textual types title as str; Content is shown as it is, never parsed as markup.
        super().__init__(self._body, title=self._heading(), collapsed=True)  # type: ignore[arg-type]

    def _heading(self) -> Content:
        symbol, _ = _STATUS[self.status]
        code = f" exit {self.exit_code}" if self.exit_code not in (None, 0) else ""
        took = f" {self.seconds:.2f}s" if self.seconds is not None else ""
        return Content(fit_heading(visible(self.call.name), self.touches, f"{symbol}{code}{took}", self._room))

    def on_resize(self, event: events.Resize) -> None:
        title = self.query_one("CollapsibleTitle")  # Textual's, not exported: by its type's name
        room = self.content_size.width - title.styles.gutter.width - TITLE_SYMBOL_CELLS
        if room != self._room:
            self._room = room
            self.title = self._heading()  # type: ignore[assignment]  # Content, as in __init__

    def unfold(self) -> None:
        """Show the body without moving the transcript: Collapsible scrolls a card into view
        whenever it unfolds, which would pull an anchored transcript up to a long diff's top
        and leave the reply written below it unseen."""
        if self.collapsed:
            self._unfolding = self.is_mounted  # Collapsible scrolls only a mounted card
            self.collapsed = False

    def scroll_visible(self, *args: Any, **kwargs: Any) -> None:
        if self._unfolding:  # the scroll Collapsible asks for once the program unfolded it
            self._unfolding = False
            return
        super().scroll_visible(*args, **kwargs)

    def set_status(self, status: CardStatus, seconds: float | None = None) -> None:
        self.status = status
        if seconds is not None:
            self.seconds = seconds
        self.title = self._heading()  # type: ignore[assignment]  # Content, as in __init__
        for name in _STATUS:
            self.set_class(name == status, f"-{name}")

    def show_result(self, ok: bool, output: str, seconds: float, data: JSONObject) -> None:
        denied = self.status == "denied"  # the user said no: that is the news, not the failure
        code = data.get("exit_code")
        if isinstance(code, int):
            output, _ = split_exit_line(output)
            self.exit_code = code
        self.set_status("denied" if denied else "ok" if ok else "failed", seconds)
        diff = data.get("diff")
        has_diff = isinstance(diff, str) and bool(diff.strip())
        # An edit's old and new text are its diff: shown once, as the diff.
        parts: list[RenderableType] = [arguments_view(self.call, skip=_EDIT_TEXTS if has_diff else ())]
        if has_diff:
            parts.append(diff_view(str(diff)))
            self.unfold()
        transcript = data.get("transcript")  # a sub-agent's own work (the task tool): the card unfolds to it
        if isinstance(transcript, str) and transcript.strip():
            parts.append(Text(visible(clip_lines(transcript)), style="dim"))
        if output.strip() and not (has_diff and ok):
            parts.append(Text(visible(clip_lines(output.rstrip()))))
        if not ok and not denied:
            self.unfold()
        self._body.update(Group(*parts))
