"""ApprovalPrompt: asks y (once) / a (always, this session) / n (no) for one tool call."""

from __future__ import annotations

from dataclasses import dataclass

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

from clover_code.agent.events import ApprovalNeeded
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.widgets.tool_card import clip_lines, diff_view, summarize

ANSWERS = {"y": "yes", "a": "always", "n": "no"}


class ApprovalPrompt(Static, can_focus=True):
    DEFAULT_CSS = """
    ApprovalPrompt { height: auto; max-height: 60%; display: none; }
    ApprovalPrompt.-open { display: block; }
    """
    BINDINGS = [
        Binding("y", "answer('y')", "yes, once"),
        Binding("a", "answer('a')", "always"),
        Binding("n", "answer('n')", "no"),
    ]

    @dataclass
    class Answered(Message):
        request: ApprovalNeeded
        answer: str  # "yes" | "always" | "no"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id)
        self.request: ApprovalNeeded | None = None

    def ask(self, request: ApprovalNeeded) -> None:
        self.request = request
        self.update(self._view(request))
        self.add_class("-open")
        self.focus()

    def close(self) -> None:
        self.request = None
        self.remove_class("-open")

    def _view(self, request: ApprovalNeeded) -> Group:
        call = request.call
        head = Text.assemble(("Allow ", "bold"), (visible(call.name), "bold yellow"),
                             f"  {summarize(call, 100)}", ("?", "bold"))
        parts = [head]
        preview = request.preview.strip()
        if preview and request.kind == "edit":
            parts.append(diff_view(preview))
        elif preview:
            parts.append(Syntax(visible(clip_lines(preview, 20)), "bash", theme="ansi_dark",
                                word_wrap=True, background_color="default"))
        parts.append(Text.assemble(("[y]", "bold green"), " yes once   ",
                                   ("[a]", "bold cyan"), f" always allow {visible(call.name)} this session   ",
                                   ("[n]", "bold red"), " no, tell the model"))
        return Group(*parts)

    def action_answer(self, key: str) -> None:
        if self.request is None:
            return
        request = self.request
        self.close()
        self.post_message(self.Answered(request, ANSWERS[key]))
