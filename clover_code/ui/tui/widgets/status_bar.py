"""StatusBar: engine and model, approval mode, context meter, last block, session speed.

It fits the terminal's width: each segment has forms from full to shortest and a priority;
when the line is too wide the least needed segment takes its next shorter form, and only
when none can shorten do segments go, least needed first. At 80 columns the model, the
state, the approval mode, the context, the block's tokens per pass and ms and the session's
tokens per second all still show.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import ProgressBar

from clover_code.engine.wire.window import ASSUMED
from clover_code.ui.terminal_text import visible

WARN_AT, DANGER_AT = 0.75, 0.9  # fractions of the context window
SEP = " │ "
MODEL_CHARS = 24  # a longer model name is cut in the middle: its start and its end say most
MODEL_CHARS_SHORT = 14


@dataclass
class StatusInfo:
    engine: str = "…"
    model: str = ""
    approval: str = "ask"
    context_used: int | None = 0  # None: not known yet (a model loading, a session resuming)
    context_window: int = 131_072
    context_source: str = "engine"  # EngineInfo.context_source: ASSUMED until a server says
    block_tokens: int | None = None
    block_forward_passes: int | None = None
    block_ms: float | None = None
    session_tokens: int = 0
    session_seconds: float = 0.0
    state: str = "starting"  # starting | loading[: what] | ready | working | error
    mcp: str = ""  # while MCP servers start: which ("" once all are up or failed)


@dataclass
class Segment:
    """One part of the line: `forms` from full to shortest; when space is short the segment
    with the lowest `keep` moves to its next form, and when none can, it goes (one with
    keep >= ALWAYS never goes)."""

    forms: list[Text]
    keep: int


ALWAYS = 100


def _k(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def plural(n: int, word: str) -> str:
    """`1 pass`, `3 passes`."""
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def short_model(model: str, chars: int = MODEL_CHARS) -> str:
    """A checkpoint path's folder name (what people call the model), a served name as is;
    cut in the middle past `chars`."""
    name = PurePath(model).name if "/" in model and not model.startswith(("http:", "https:")) else model
    name = visible(name or model)
    if len(name) <= chars:
        return name
    head = (chars - 1) // 2
    return f"{name[:head]}…{name[-(chars - 1 - head):]}"


def _engine(info: StatusInfo) -> Segment:
    model = info.model if info.model and info.model != info.engine else ""
    if not model:
        return Segment([Text(f" {info.engine}", style="bold")], ALWAYS)
    full = Text.assemble((f" {info.engine}", "bold"), (f" {short_model(model)}", "dim"))  # a server names its model
    return Segment([full, Text(f" {short_model(model)}", style="bold"),
                    Text(f" {short_model(model, MODEL_CHARS_SHORT)}", style="bold")], ALWAYS)


def _context(info: StatusInfo) -> Segment:
    if info.context_used is None:
        return Segment([Text("ctx …", style="dim")], ALWAYS)
    frac = info.context_used / info.context_window if info.context_window else 0.0
    colour = "red" if frac >= DANGER_AT else "yellow" if frac >= WARN_AT else "green"
    filled = min(8, round(frac * 8))
    guessed = "?" if info.context_source == ASSUMED else ""  # the server has not said its window yet
    numbers = f" {_k(info.context_used)}/{_k(info.context_window)}{guessed}"
    full = Text.assemble("ctx ", ("▮" * filled + "▯" * (8 - filled), colour), (numbers, colour))
    percent = f" {frac:.0%}" if frac >= 0.01 or not info.context_used else " <1%"
    return Segment([full, Text.assemble("ctx", (percent, colour))], ALWAYS)


def _state(info: StatusInfo) -> Segment | None:
    if info.state in ("ready", "starting"):
        return None
    style = {"working": "cyan", "error": "bold red"}.get(info.state, "yellow")
    forms = [Text(info.state, style=style)]
    if ":" in info.state:  # "loading: reading weights" -> "loading"
        forms.append(Text(info.state.split(":")[0], style=style))
    return Segment(forms, ALWAYS)


def _block(info: StatusInfo) -> Segment | None:
    if info.block_tokens is None:
        return None
    tokens, passes, ms = info.block_tokens, info.block_forward_passes, info.block_ms
    full = Text.assemble("block ", (f"{tokens} tok", "bold"))
    short = Text()
    if passes:
        full.append(f" · {plural(passes, 'pass')} · {tokens / passes:.1f} tok/pass")
        short.append(f"{tokens / passes:.1f} tok/pass")
    if ms is not None:
        full.append(f" · {ms:.0f} ms")
        short.append(f"{' ' if short else ''}{ms:.0f} ms")
    return Segment([full, short] if short else [full], 60)


def _speed(info: StatusInfo) -> Segment | None:
    if info.session_seconds <= 0:
        return None
    rate = _k(round(info.session_tokens / info.session_seconds))
    return Segment([Text(f"{rate} tok/s")], 50)


def _mcp(info: StatusInfo) -> Segment | None:
    return Segment([Text(info.mcp, style="yellow"), Text("MCP…", style="yellow")], 40) if info.mcp else None


def segments(info: StatusInfo) -> list[Segment]:
    approval = Segment([Text(info.approval, style="bold magenta")], ALWAYS)
    found = [_engine(info), approval, _context(info), _state(info), _mcp(info), _block(info), _speed(info)]
    return [s for s in found if s is not None]


def render_status(info: StatusInfo, width: int | None = None) -> Text:
    """The line for `info`, fitted to `width` cells (None: everything, in full)."""
    parts = segments(info)
    form = [0] * len(parts)  # the form each segment shows; len(forms): dropped
    by_need = sorted(range(len(parts)), key=lambda i: parts[i].keep)

    def chosen() -> list[Text]:
        return [p.forms[f] for p, f in zip(parts, form, strict=True) if f < len(p.forms)]

    def length() -> int:
        shown = chosen()
        return sum(t.cell_len for t in shown) + len(SEP) * (len(shown) - 1)

    while width is not None and length() > width:
        # Among equally needed segments the one shortened least so far goes next.
        shorter = sorted((i for i in by_need if form[i] < len(parts[i].forms) - 1),
                         key=lambda i: (parts[i].keep, form[i]))
        droppable = [i for i in by_need if form[i] < len(parts[i].forms) and parts[i].keep < ALWAYS]
        if not shorter and not droppable:
            break  # what is left is cut with an ellipsis
        form[(shorter or droppable)[0]] += 1
    text = Text(no_wrap=True, overflow="ellipsis")
    for n, part in enumerate(chosen()):
        if n:
            text.append(SEP)
        text.append_text(part)
    return text


class StatusLine(Widget):
    """One line of text whose size never changes: updating it repaints, never re-lays out
    the screen (a `Static.update` would, on every block). It renders for its own width."""

    def __init__(self, info: StatusInfo, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.info = info
        self._drawn: tuple[tuple[object, ...], int] | None = None  # what `_text` was fitted for
        self._text = Text()

    def show(self) -> None:
        self.refresh()

    def render(self) -> Text:
        # Fitting costs ~0.15 ms; a repaint that changed nothing here (a frame of the
        # transcript, a key) reuses the last line.
        key = (tuple(vars(self.info).values()), self.size.width)
        if key != self._drawn:
            self._drawn, self._text = key, render_status(self.info, self.size.width or None)
        return self._text


class StatusBar(Horizontal):
    DEFAULT_CSS = """
    StatusBar { height: 1; dock: bottom; }
    StatusBar > #status-text { width: 1fr; height: 1; }
    StatusBar > ProgressBar { width: 27; height: 1; display: none; }
    StatusBar > ProgressBar > Bar { width: 20; }
    StatusBar.-loading > ProgressBar { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.info = StatusInfo()

    def compose(self) -> ComposeResult:
        yield StatusLine(self.info, id="status-text")
        # The percentage is the bar's label; what is loading is the state segment's.
        yield ProgressBar(total=None, show_eta=False, show_percentage=True, id="loading")

    def show(self, **changes: object) -> None:
        for key, value in changes.items():
            setattr(self.info, key, value)
        self.set_class(self.info.state.startswith("loading"), "-loading")
        self.query_one(StatusLine).show()

    def show_progress(self, fraction: float, message: str) -> None:
        """A model load moved on: fraction from 0 to 1, and what it is doing."""
        self.query_one(ProgressBar).update(total=1.0, progress=fraction)
        self.show(state=f"loading: {message}" if fraction < 1 else "loading")
