"""Rewind in the TUI: `/undo` (or Esc Esc on the editor) picks a message to go back to;
the files and the conversation go back to just before it; `/redo` takes that back.

The agent does the work (Agent.rewind / redo: checkpoints and the conversation, logged); this
module asks which turn, hides the transcript from that message on (shown again on redo, gone
for good once a new message is sent) and puts the message back in the editor to edit and resend.
"""

from __future__ import annotations

import asyncio

from clover_code.agent.events import Redone, Rewound
from clover_code.ui.tui.command_host import CommandHost


def open_picker(app: CommandHost, arg: str = "") -> None:
    """`/undo [N]`: the picker, or straight to message N (as the picker numbers them)."""
    from clover_code.ui.tui.widgets.rewind_picker import RewindPicker, TurnChoice  # not before first paint

    agent = app.agent
    if agent is None:
        return
    turns = [TurnChoice(t.index, t.text) for t in agent.conversation.turns()]
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
    app.push_screen(RewindPicker(turns), lambda turn: rewind(app, turn) if turn is not None else None)


def rewind(app: CommandHost, turn: int) -> None:
    agent = app.agent
    if agent is None or app.busy:
        return
    text = next((t.text for t in agent.conversation.turns() if t.index == turn), "")

    async def work() -> None:
        try:
            event = await agent.rewind(turn)
        except Exception as exc:
            app.report(exc, "rewind failed: ")
            return
        app.apply_events([event])
        app.restore_prompt(text)
        await _recount(app)

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
        await _recount(app)

    app.in_background(work())


def show(app: CommandHost, event: Rewound | Redone, live: bool) -> None:
    """Draw a Rewound or Redone (live, or replayed from a log)."""
    if isinstance(event, Rewound):
        hidden = app.turns.rewound(app.view, event.turn)
        if live:
            files = f"\n{event.files}" if event.files else ""
            hidden.note = app.view.add_note(f"Rewound to before message {event.turn + 1}; /redo takes it back."
                                            f"{files}", "info")
            app.view.scroll_end(animate=False)
    else:
        app.turns.redone()
        if live:
            app.note("Redone: back to where you were before the rewind." + (
                f"\n{event.files}" if event.files else ""), "info")


async def _recount(app: CommandHost) -> None:
    """The context meter for the conversation as it now stands."""
    agent = app.agent
    if agent is None:
        return
    used = await asyncio.to_thread(agent.conversation.tokens, agent.engine)
    app.stats.context_used = used
    app.status.show(context_used=used)
