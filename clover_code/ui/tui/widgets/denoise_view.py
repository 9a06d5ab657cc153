"""DenoiseView: the block being decoded, one cell per position, filling step by step."""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget

from clover_code.engine import DenoiseStep

IDLE = "denoise view: waiting for the embedded engine's steps (remote and scripted engines send none)"


def cells(step: DenoiseStep) -> Text:
    newly = set(step.newly)
    text = Text()
    for i, done in enumerate(step.resolved):
        if i in newly:
            text.append("█", style="bold #f0c674")
        elif done:
            text.append("█", style="#5f9f6f")
        else:
            text.append("░", style="#555555")
    resolved = sum(step.resolved)
    text.append(f"  block {step.block_index}  pass {step.step}  "
                f"{resolved}/{len(step.resolved)} resolved  (+{len(step.newly)})", style="dim")
    return text


class DenoiseView(Widget):
    """One line of fixed size: a step repaints it without re-laying out the screen."""

    DEFAULT_CSS = """
    DenoiseView { height: 1; display: none; }
    DenoiseView.-open { display: block; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.last: DenoiseStep | None = None
        self.text = Text(IDLE, style="dim")

    def render(self) -> Text:
        return self.text

    def update(self, text: Text) -> None:
        self.text = text
        self.refresh()

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def toggle(self) -> bool:
        self.toggle_class("-open")
        if self.is_open and self.last is not None:
            self.update(cells(self.last))
        return self.is_open

    def show_step(self, step: DenoiseStep) -> None:
        self.last = step
        if self.is_open:
            self.update(cells(step))
