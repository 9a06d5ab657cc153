"""PlanChoice: after a turn in plan mode, what to do with the plan: approve it and run in
auto-edit, approve it and run asking for each change, or keep planning."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Static

PlanAnswer = Literal["auto-edit", "ask", "keep"]
_KEYS: dict[str, PlanAnswer] = {"1": "auto-edit", "2": "ask", "3": "keep"}


class PlanChoice(Static, can_focus=True):
    DEFAULT_CSS = """
    PlanChoice { height: auto; display: none; }
    PlanChoice.-open { display: block; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,a", "choose('1')", "approve, auto-edit"),
        Binding("2", "choose('2')", "approve, ask"),
        Binding("3,k,n", "choose('3')", "keep planning"),
    ]

    @dataclass
    class Chosen(Message):
        answer: PlanAnswer

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    def open(self) -> None:
        self.update(Text.assemble(
            ("Plan ready. ", "bold"), "Approve it and run:\n",
            ("[1]", "bold green"), " in auto-edit (edits run, commands ask)  ",
            ("[2]", "bold cyan"), " in ask (each change asks)  ",
            ("[3]", "bold yellow"), " keep planning"))
        self.add_class("-open")
        self.focus()

    def close(self) -> None:
        self.remove_class("-open")

    def action_choose(self, key: str) -> None:
        if not self.is_open:
            return
        self.close()
        self.post_message(self.Chosen(_KEYS[key]))
