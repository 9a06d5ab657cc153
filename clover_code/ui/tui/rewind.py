"""Rewind in the TUI: `/undo` (or Esc Esc on the editor) picks a message to go back to and
what goes back (the files and the conversation, or one of them); `/redo` takes that back.

The agent does the work (Agent.rewind / redo: checkpoints and the conversation, logged, the
checkpoints of earlier runs of a resumed session included); this module asks which turn,
hides the transcript from that message on (shown again on redo, gone for good once a new
message is sent) and puts the message back in the editor to edit and resend; a redo takes
it out again unless it was edited.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from clover_code.agent.events import Redone, Rewound
from clover_code.ui.tui.commands.host import CommandHost

if TYPE_CHECKING:
    from clover_code.agent.events import RewindScope


def open_picker(app: CommandHost, arg: str = "") -> None:
    """`/undo [N]`: the picker, or straight to message N (as the picker numbers them)."""
    agent = app.agent
    if agent is None:
        return
    turns = agent.conversation.turns()
    if not turns:
        app.note("Nothing to rewind: no message sent since the session (or /clear) began.", "info")
        return
    if arg:
        wanted = next((t.index for t in turns if arg.isdigit() and t.index + 1 == int(arg)), None)
        if wanted is None:
            app.note(f"no message {arg} to rewind to; /undo without a number lists them", "error")
            return
        rewind(app, wanted)
        return

    async def work() -> None:
        from clover_code.ui.tui.widgets.rewind_picker import RewindPicker, TurnChoice  # not before first paint

        try:
            kept = await agent.files_kept()  # an earlier run's checkpoints are read back (git)
        except Exception as exc:
            app.report(exc, "rewind failed: ")
            return
        choices = [TurnChoice(t.index, t.text, kept.get(t.index, False)) for t in turns]
        app.push_screen(RewindPicker(choices), lambda chosen: rewind(app, *chosen) if chosen is not None else None)

    app.in_background(work())


def rewind(app: CommandHost, turn: int, scope: RewindScope = "both") -> None:
    agent = app.agent
    if agent is None or app.busy:
        return
    text = next((t.text for t in agent.conversation.turns() if t.index == turn), "")

    async def work() -> None:
        try:
            event = await agent.rewind(turn, scope)
        except Exception as exc:
            app.report(exc, "rewind failed: ")
            return
        app.apply_events([event])
        if scope != "code" and app.restore_prompt(text) and app.turns.hidden:
            app.turns.hidden[-1].prompt = text  # a redo takes it out of the editor again

    app.in_background(work())


def redo(app: CommandHost, arg: str = "") -> None:
    agent = app.agent
    if agent is None:
        return
    if not agent.conversation.can_redo:
        app.note("Nothing to redo: no rewind since the last message.", "info")
        return

    async def work() -> None:
        try:
            event = await agent.redo()
        except Exception as exc:
            app.report(exc, "redo failed: ")
            return
        if event is not None:
            app.apply_events([event])

    app.in_background(work())


def show(app: CommandHost, event: Rewound | Redone, live: bool) -> None:
    """Draw a Rewound or Redone (live, or replayed from a log)."""
    if isinstance(event, Rewound):
        hidden = app.turns.rewound(app.view, event.turn, hide=event.scope != "code")
        if live:
            hidden.note = app.view.add_note(f"{headline(event)}; /redo takes it back."
                                            + (f"\n{event.files}" if event.files else ""), "info")
            app.view.scroll_end(animate=False)
    else:
        group = app.turns.redone()
        if live:
            if group is not None and group.prompt is not None:
                app.take_back_prompt(group.prompt)
            app.note("Redone: back to where you were before the rewind." + (
                f"\n{event.files}" if event.files else ""), "info")


def headline(event: Rewound) -> str:
    """What a rewind did, plainly: which of files and conversation went back."""
    where = f"before message {event.turn + 1}"
    if event.scope == "conversation":
        return f"Rewound the conversation only to {where} (the files stay as they are)"
    if not event.files_kept:
        if event.scope == "code":
            return f"Nothing rewound: no file checkpoint of message {event.turn + 1} was kept"
        return f"Rewound the conversation only to {where}: no file checkpoint of it was kept"
    if event.scope == "code":
        return f"Rewound the code only to {where} (the conversation stays as it is)"
    return f"Rewound to {where}"
