"""ApprovalPrompt: asks y (once) / a (always, this session) / n (no) for one tool call.

The legend names the rule "always" adds as the request carries it: the agent adds exactly that
rule, so what the user reads is what they allow.

What is asked about is shown whole: a long diff or command scrolls inside the prompt (arrow
keys, PgUp/PgDn, Home/End, the mouse wheel) between a heading and a legend that always stay
in view, and the legend says how much is below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Static

from clover_code.agent.events import ApprovalAnswer, ApprovalNeeded
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.widgets.tool_card import arguments_view, clip_lines, diff_view, summarize

ANSWERS: dict[str, ApprovalAnswer] = {"y": "yes", "a": "always", "n": "no"}
MAX_PREVIEW_LINES = 5_000  # past this a preview is cut in the middle (and says so)


class ApprovalPrompt(Vertical, can_focus=True):
    DEFAULT_CSS = """
    ApprovalPrompt { height: auto; display: none; }
    ApprovalPrompt.-open { display: block; }
    ApprovalPrompt > #approval-head { height: auto; }
    ApprovalPrompt > #approval-body { height: auto; max-height: 60vh; scrollbar-size-vertical: 1; }
    ApprovalPrompt > #approval-legend { height: auto; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer('y')", "yes, once"),
        Binding("a", "answer('a')", "always"),
        Binding("n", "answer('n')", "no"),
        Binding("up,k", "scroll('up')", "scroll up", show=False),
        Binding("down,j", "scroll('down')", "scroll down", show=False),
        Binding("pageup", "scroll('page_up')", "page up", show=False),
        Binding("pagedown,space", "scroll('page_down')", "page down", show=False),
        Binding("home", "scroll('home')", "top", show=False),
        Binding("end", "scroll('end')", "end", show=False),
    ]

    @dataclass
    class Answered(Message):
        request: ApprovalNeeded
        answer: ApprovalAnswer

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.request: ApprovalNeeded | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="approval-head")
        with VerticalScroll(id="approval-body", can_focus=False):
            yield Static(id="approval-preview")
        yield Static(id="approval-legend")

    def on_mount(self) -> None:
        body = self.query_one("#approval-body", VerticalScroll)
        # The legend follows the scroll position and the body's size (a resize re-wraps it).
        self.watch(body, "scroll_y", self._show_legend, init=False)
        self.watch(body, "virtual_size", self._show_legend, init=False)
        self.watch(body, "size", self._show_legend, init=False)

    def ask(self, request: ApprovalNeeded) -> None:
        self.request = request
        self.query_one("#approval-head", Static).update(self._heading(request))
        self.query_one("#approval-preview", Static).update(self._preview(request))
        self.query_one("#approval-body", VerticalScroll).scroll_home(animate=False, immediate=True)
        self._show_legend()
        self.add_class("-open")
        self.focus()

    def close(self) -> None:
        self.request = None
        self.remove_class("-open")

    # --- what is shown -------------------------------------------------------------------
    @staticmethod
    def _heading(request: ApprovalNeeded) -> Text:
        call = request.call
        return Text.assemble(("Allow ", "bold"), (visible(call.name), "bold yellow"),
                             f"  {summarize(request.touches, 100)}", ("?", "bold"))

    @staticmethod
    def _preview(request: ApprovalNeeded) -> RenderableType:
        preview = clip_lines(request.preview.strip(), MAX_PREVIEW_LINES)
        if preview and request.kind == "edit":
            return diff_view(preview, MAX_PREVIEW_LINES)
        if preview and request.kind == "shell":
            return Syntax(visible(preview), "bash", theme="ansi_dark", word_wrap=True,
                          background_color="default")
        # Other kinds (git_commit...): the arguments as the tool card shows them, not raw JSON.
        return arguments_view(request.call) if not preview or preview.startswith("{") else Text(visible(preview))

    def _show_legend(self, *_: object) -> None:
        if self.request is None:
            return
        name = visible(self.request.call.name)
        rule = visible(self.request.always) or name  # what "always" will allow
        legend = Text.assemble(("[y]", "bold green"), " yes once  ", ("[a]", "bold cyan"),
                               f" always, this session: {rule}  ", ("[n]", "bold red"), " no, tell the model")
        position = self._position()
        if position:
            legend.append("\n")
            legend.append(position, style="dim")
        self.query_one("#approval-legend", Static).update(legend)

    def _position(self) -> str:
        """Where the view of a long preview is ('' when it all shows)."""
        body = self.query_one("#approval-body", VerticalScroll)
        total, shown = body.virtual_size.height, body.size.height
        if not shown or total <= shown:
            return ""
        first = round(body.scroll_y) + 1
        last = min(total, first + shown - 1)
        below = total - last
        more = f" · {below} more below" if below else " · the end"
        return f"lines {first}–{last} of {total}{more} · ↑↓ PgUp PgDn Home End scroll"

    # --- keys ----------------------------------------------------------------------------
    def action_scroll(self, how: str) -> None:
        body = self.query_one("#approval-body", VerticalScroll)
        moves = {"up": body.scroll_up, "down": body.scroll_down, "page_up": body.scroll_page_up,
                 "page_down": body.scroll_page_down, "home": body.scroll_home, "end": body.scroll_end}
        moves[how](animate=False)

    def action_answer(self, key: str) -> None:
        if self.request is None:
            return
        request = self.request
        self.close()
        self.post_message(self.Answered(request, ANSWERS[key]))
