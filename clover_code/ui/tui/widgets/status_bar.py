"""StatusBar: engine and model, approval mode, context meter, last block, session speed."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import ProgressBar

from clover_code.engine.window import ASSUMED
from clover_code.ui.terminal_text import visible

WARN_AT, DANGER_AT = 0.75, 0.9  # fractions of the context window


@dataclass
class StatusInfo:
    engine: str = "…"
    model: str = ""
    approval: str = "ask"
    context_used: int = 0
    context_window: int = 131_072
    context_source: str = "engine"  # EngineInfo.context_source: ASSUMED until a server says
    block_tokens: int | None = None
    block_forward_passes: int | None = None
    block_ms: float | None = None
    session_tokens: int = 0
    session_seconds: float = 0.0
    state: str = "starting"  # starting | loading | ready | working | error


def _k(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def render_status(info: StatusInfo) -> Text:
    text = Text(no_wrap=True, overflow="ellipsis")
    text.append(f" {info.engine}", style="bold")
    if info.model:
        text.append(f" {visible(info.model)}", style="dim")  # a server names its model
    text.append("  │ ")
    text.append(info.approval, style="bold magenta")
    text.append(" │ ctx ")
    frac = info.context_used / info.context_window if info.context_window else 0.0
    colour = "red" if frac >= DANGER_AT else "yellow" if frac >= WARN_AT else "green"
    filled = min(8, round(frac * 8))
    text.append("▮" * filled + "▯" * (8 - filled), style=colour)
    guessed = "?" if info.context_source == ASSUMED else ""  # the server has not said its window yet
    text.append(f" {_k(info.context_used)}/{_k(info.context_window)}{guessed}", style=colour)
    if info.state not in ("ready", "starting"):
        style = {"working": "cyan", "error": "bold red"}.get(info.state, "yellow")
        text.append(" │ ")
        text.append(info.state, style=style)
    if info.block_tokens is not None:
        text.append(" │ block ")
        text.append(f"{info.block_tokens} tok", style="bold")
        if passes := info.block_forward_passes:
            text.append(f" · {passes} passes · {info.block_tokens / passes:.1f} tok/pass")
        if info.block_ms is not None:
            text.append(f" · {info.block_ms:.0f} ms")
    if info.session_seconds > 0:
        text.append(f" │ {info.session_tokens / info.session_seconds:.0f} tok/s")
    return text


class StatusLine(Widget):
    """One line of text whose size never changes: updating it repaints, never re-lays out
    the screen (a `Static.update` would, on every block)."""

    def __init__(self, text: Text, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = text

    def show(self, text: Text) -> None:
        self.text = text
        self.refresh()

    def render(self) -> Text:
        return self.text


class StatusBar(Horizontal):
    DEFAULT_CSS = """
    StatusBar { height: 1; dock: bottom; }
    StatusBar > #status-text { width: 1fr; height: 1; }
    StatusBar > ProgressBar { width: 30; height: 1; display: none; }
    StatusBar.-loading > ProgressBar { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.info = StatusInfo()

    def compose(self) -> ComposeResult:
        yield StatusLine(render_status(self.info), id="status-text")
        yield ProgressBar(total=None, show_eta=False, show_percentage=False, id="loading")

    def show(self, **changes) -> None:
        for key, value in changes.items():
            setattr(self.info, key, value)
        self.set_class(self.info.state.startswith("loading"), "-loading")
        self.query_one(StatusLine).show(render_status(self.info))

    def loading(self, fraction: float, message: str) -> None:
        """A model load moved on: fraction from 0 to 1, and what it is doing."""
        self.query_one(ProgressBar).update(total=1.0, progress=fraction)
        self.show(state=f"loading: {message}" if fraction < 1 else "loading")
