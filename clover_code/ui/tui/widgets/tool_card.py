"""ToolCard: one tool call: name, arguments, status, duration; collapsible.

Edits show their diff syntax-highlighted, shell commands their output and exit code.
Everything shown comes from the model or the workspace: it passes `visible` (no terminal
controls) and is never read as markup (the title is Content, not a markup string).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from rich.console import Group
from rich.syntax import Syntax
from rich.text import Text
from textual.content import Content
from textual.widgets import Collapsible, Static

from clover_code import jsonsafe
from clover_code.engine import ToolCall
from clover_code.ui.terminal_text import visible

MAX_OUTPUT_LINES = 60
_KEY_ARGS = ("path", "command", "pattern", "message", "query", "file")
CardStatus = Literal["parsed", "approval", "running", "ok", "failed", "denied", "cancelled"]
_STATUS: dict[CardStatus, tuple[str, str]] = {
    "parsed": ("…", "dim"), "approval": ("? waiting for approval", "yellow"),
    "running": ("⟳ running", "cyan"), "ok": ("✓", "green"), "failed": ("✗", "red"),
    "denied": ("✗ denied", "red"), "cancelled": ("■ cancelled", "yellow"),
}


def parse_arguments(arguments: str) -> dict[str, Any] | None:
    try:
        value = jsonsafe.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def summarize(call: ToolCall, limit: int = 60) -> str:
    """The one argument that says what the call does (a path, a command...)."""
    args = parse_arguments(call.arguments) or {}
    for key in _KEY_ARGS:
        if isinstance(args.get(key), str):
            value = visible(" ".join(args[key].split()))
            return value if len(value) <= limit else value[: limit - 1] + "…"
    return ""


def clip_lines(text: str, limit: int = MAX_OUTPUT_LINES) -> str:
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    head, tail = lines[: limit // 2], lines[-limit // 2:]
    return "\n".join([*head, f"… {len(lines) - limit} more lines …", *tail])


def diff_view(diff: str) -> Syntax:
    return Syntax(visible(clip_lines(diff, 200)), "diff", theme="ansi_dark", word_wrap=True,
                  background_color="default")


class ToolCard(Collapsible):
    DEFAULT_CSS = """
    ToolCard { height: auto; }
    """

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.status: CardStatus = "parsed"
        self.seconds: float | None = None
        self._body = Static(self._arguments_view(), classes="tool-body")
        super().__init__(self._body, title=self._heading(), collapsed=True)

    def _heading(self) -> Content:
        symbol, _ = _STATUS[self.status]
        took = f" {self.seconds:.2f}s" if self.seconds is not None else ""
        what = summarize(self.call)
        return Content(f"{visible(self.call.name)}{'  ' + what if what else ''}   {symbol}{took}")

    def _arguments_view(self) -> Text:
        args = parse_arguments(self.call.arguments)
        if args is None:
            return Text(visible(self.call.arguments), style="dim")
        body = json.dumps(args, indent=2, ensure_ascii=False)
        return Text(visible(clip_lines(body, 30)), style="dim")

    def set_status(self, status: CardStatus, seconds: float | None = None) -> None:
        self.status = status
        if seconds is not None:
            self.seconds = seconds
        self.title = self._heading()
        for name in _STATUS:
            self.set_class(name == status, f"-{name}")

    def show_result(self, ok: bool, output: str, seconds: float, data: dict[str, Any]) -> None:
        denied = self.status == "denied"  # the user said no: that is the news, not the failure
        self.set_status("denied" if denied else "ok" if ok else "failed", seconds)
        parts: list[Any] = [self._arguments_view()]
        diff = data.get("diff")
        if isinstance(diff, str) and diff.strip():
            parts.append(diff_view(diff))
            self.collapsed = False
        code = data.get("exit_code")
        if code is not None:
            style = "green" if code == 0 else "red"
            parts.append(Text(f"exit code {code}", style=f"bold {style}"))
        if output.strip() and not (isinstance(diff, str) and diff.strip() and ok):
            parts.append(Text(visible(clip_lines(output.rstrip()))))
        if not ok and not denied:
            self.collapsed = False
        self._body.update(Group(*parts))
