"""The transcript: the agent's events drawn in the conversation view, live or replayed from a
session log; where each user turn starts (for rewinds); which tool runs now (for the spinner).

It only draws: what the events count is the ledger's (ledger.py). The text is the agent's
parse of the reply (TextDelta): tool-call markup never reaches the screen, however the blocks
cut it.
"""

from __future__ import annotations

import time

from clover_code.agent.events import (
    ApprovalAnswered,
    ApprovalNeeded,
    BlockCommitted,
    Compacted,
    ErrorEvent,
    Event,
    HookRan,
    Notice,
    Redone,
    Rewound,
    TextDelta,
    ToolCallParsed,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnFinished,
    UserMessage,
    UserShell,
)
from clover_code.engine import ToolCall
from clover_code.ui.tui import live_shell, rewind
from clover_code.ui.tui.commands.host import CommandHost
from clover_code.ui.tui.transcript_turns import TranscriptTurns


class Transcript:
    def __init__(self, host: CommandHost) -> None:
        self.host = host
        self.turns = TranscriptTurns()  # which transcript widget starts each turn
        self.running_tool: tuple[ToolCall, float] | None = None  # the call running now, since when

    def apply_events(self, events: list[Event], live: bool = True) -> None:
        """Draw a batch of events; the reply text of consecutive blocks becomes one write."""
        text: list[str] = []
        view = self.host.view

        def write_text() -> None:
            if text:
                view.append_text("".join(text))
                text.clear()

        for event in events:
            if isinstance(event, TextDelta):
                text.append(event.text)
                continue
            write_text()
            if isinstance(event, BlockCommitted):
                if event.block.index == 0:  # a new reply: the previous one's text is finished
                    view.end_assistant()
            else:
                self.apply_event(event, live)
        write_text()

    def apply_event(self, event: Event, live: bool) -> None:
        view = self.host.view
        if isinstance(event, UserMessage):
            if not live:
                self.turns.mark(view.add_user(event.text))
            if event.attachments:  # what @path put in the message, as the model got it
                view.add_note("attached " + ", ".join(a.path + (f" ({a.note})" if a.note else "")
                                                      for a in event.attachments), "dim")
        elif isinstance(event, ToolCallParsed):
            view.card(event.call, new=True, touches=event.touches)
        elif isinstance(event, ApprovalNeeded):
            view.card(event.call).set_status("approval")
        elif isinstance(event, ApprovalAnswered):
            if event.answer == "no":
                view.card(event.call).set_status("denied")
        elif isinstance(event, (ToolStarted, ToolOutput, ToolFinished, UserShell)):
            self._tool_event(event, live)
        elif isinstance(event, (Rewound, Redone)):
            rewind.show(self.host, event, live)
        elif isinstance(event, Compacted):
            self._compacted(event)
        elif isinstance(event, Notice):
            view.add_note(event.text, "dim")
            if live:
                self.host.say(event.text)
        elif isinstance(event, HookRan) and event.outcome != "ok":  # a block or a failure: the user sees why
            kind = "dim" if event.outcome == "blocked" else "error"
            view.add_note(f"hook {event.event} {event.outcome.replace('_', ' ')}: {event.message}", kind)
        elif isinstance(event, ErrorEvent):
            view.add_note(event.message, "error")
            if live:
                self.host.say(event.message, severity="error", timeout=15)
        elif isinstance(event, TurnFinished):
            note = None if event.reason in ("done", "error") else event.reason.replace("_", " ")
            view.end_assistant(note)
            if not live:
                view.cancel_running()

    def _tool_event(self, event: ToolStarted | ToolOutput | ToolFinished | UserShell, live: bool) -> None:
        view = self.host.view
        if isinstance(event, ToolStarted):
            live_shell.started(view, event, live)
            if live:
                self.running_tool = (event.call, time.monotonic())  # the spinner names it
        elif isinstance(event, ToolOutput):
            live_shell.output(view, event)
        elif isinstance(event, ToolFinished):
            self.running_tool = None
            card = view.card(event.call)
            live_shell.finished(card)
            card.show_result(event.ok, event.output, event.seconds, event.data)
        else:
            self.running_tool = None
            live_shell.user_shell_done(view, event)

    def _compacted(self, event: Compacted) -> None:
        if not event.dropped_messages:
            self.host.view.add_note("nothing to compact yet: the conversation is short", "dim")
            return
        self.host.view.add_note(f"compacted: {event.dropped_messages} messages summarised, "
                                f"{event.tokens_before} → {event.tokens_after} tokens", "dim")
