"""A running command in the transcript: its live output in its card, and the user's own
commands (`!cmd`), which run through the agent (Agent.user_shell) like the model's.

A user's command has no ToolCallParsed before its ToolStarted (the model did not write it):
that is how it is told apart, live and when a log is replayed, and it gets a `!command` line
of its own above its card.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from clover_code.agent.events import (
    ErrorEvent,
    Event,
    ToolOutput,
    ToolStarted,
    TurnFinished,
    UserShell,
    error_source,
)
from clover_code.ui.tui.errors import describe_error
from clover_code.ui.tui.widgets.conversation import ConversationView
from clover_code.ui.tui.widgets.live_output import LiveOutput
from clover_code.ui.tui.widgets.tool_card import ToolCard

if TYPE_CHECKING:
    from clover_code.agent.loop import Agent

SHELL_TOOLS = ("run_shell",)
PREFIX = "!"


def is_user_command(text: str) -> bool:
    return text.startswith(PREFIX)


def started(view: ConversationView, event: ToolStarted, live: bool) -> ToolCard:
    """ToolStarted: the card says it runs; a command gets a live output area."""
    call = event.call
    if call.id not in view.cards:  # the user's own command
        command = event.touches.runs if event.touches is not None else None
        view.add_user(f"{PREFIX}{command or ''}")
    card = view.card(call, touches=event.touches)
    card.set_status("running")
    if live and call.name in SHELL_TOOLS and not card.query(LiveOutput):
        card.mount(LiveOutput())
    return card


def output(view: ConversationView, event: ToolOutput) -> None:
    card = view.cards.get(event.call.id)
    if card is None:
        return
    found = card.query(LiveOutput)
    live = found.first() if found else None
    if live is None:
        live = LiveOutput()
        card.mount(live)
    live.append(event.text)


def finished(card: ToolCard) -> None:
    """The result replaces the live output (it holds what the model read)."""
    card.query(LiveOutput).remove()


def user_shell_done(view: ConversationView, event: UserShell) -> None:
    card = view.card(event.call)
    finished(card)
    card.show_result(event.ok, event.output, event.seconds, event.data)
    card.collapsed = False  # its output is why the user ran it


class ShellHost(Protocol):
    @property
    def agent(self) -> Agent | None: ...

    def queue_event(self, event: Event) -> None: ...


async def user_command(app: ShellHost, text: str) -> None:
    """`!command`, run as the agent's worker runs a turn (so Esc cancels it the same way)."""
    agent = app.agent
    if agent is None:
        return
    try:
        async for event in agent.user_shell(text[len(PREFIX):].strip()):
            app.queue_event(event)
    except Exception as exc:  # as run_agent does: the screen says what failed, never a traceback
        app.queue_event(ErrorEvent(describe_error(exc), error_source(exc)))
        app.queue_event(TurnFinished("error", ""))
