"""TranscriptTurns: which transcript widget starts each user turn, so a rewind can hide that
message and everything after it (ui/tui/rewind.py), and a redo show them again.

Turns are numbered as the conversation numbers them (agent/context.py: every UserMessage of
the session from 0, a rewind to N making the next one N again), live or replayed from a log.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from textual.widget import Widget

from clover_code.ui.tui.widgets.conversation import ConversationView

DOUBLE_ESCAPE_S = 0.8


@dataclass
class Hidden:
    """What one rewind hid, and the note that said so (gone on redo)."""

    widgets: list[Widget]
    marks: dict[int, Widget]
    note: Widget | None = None
    prompt: str | None = None  # the message it put back in the editor (a redo takes it out, unedited)


@dataclass
class TranscriptTurns:
    marks: dict[int, Widget] = field(default_factory=dict)
    hidden: list[Hidden] = field(default_factory=list)
    next_turn: int = 0  # the number the next replayed message gets
    _last_escape: float = 0.0

    def mark(self, widget: Widget, turn: int | None = None) -> None:
        """`widget` shows the user message of `turn` (None: the next one, when replaying)."""
        turn = self.next_turn if turn is None else turn
        self.marks[turn] = widget
        self.next_turn = turn + 1
        for group in self.hidden:  # a new message: what was rewound away cannot come back
            for hidden in group.widgets:
                hidden.remove()
        self.hidden.clear()

    def rewound(self, view: ConversationView, turn: int, hide: bool = True) -> Hidden:
        """A rewind to before `turn`; `hide=False`: the files only, the transcript stays (a
        redo still pairs with it)."""
        if not hide:
            self.hidden.append(Hidden([], {}))
            return self.hidden[-1]
        start = self.marks.get(turn)
        children = list(view.children)
        first = children.index(start) if start is not None and start in children else len(children)
        widgets = [w for w in children[first:] if w.display]
        for widget in widgets:
            widget.display = False
        later = {t: w for t, w in self.marks.items() if t >= turn}
        for t in later:
            del self.marks[t]
        self.hidden.append(Hidden(widgets, later))
        self.next_turn = turn
        return self.hidden[-1]

    def redone(self) -> Hidden | None:
        if not self.hidden:
            return None
        group = self.hidden.pop()
        for widget in group.widgets:
            widget.display = True
        self.marks.update(group.marks)
        self.next_turn = max(self.marks, default=-1) + 1
        if group.note is not None:
            group.note.remove()
        return group

    def escape_twice(self) -> bool:
        """Esc was pressed: whether it is the second of a quick pair."""
        now = time.monotonic()
        twice = now - self._last_escape < DOUBLE_ESCAPE_S
        self._last_escape = 0.0 if twice else now
        return twice
