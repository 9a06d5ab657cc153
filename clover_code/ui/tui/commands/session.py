"""Commands and keys of the TUI's everyday features beyond commands.py: `/cost` (usage),
`/resume`'s session picker, and Shift+Tab through the approval modes.

Each is a function of the host (what it uses of the app) and its argument, like the
commands in commands.py, which lists them. What they show is imported when first asked for:
the app imports this module before its first paint.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from clover_code.settings import ApprovalMode
from clover_code.ui.tui.command_host import CommandHost

# Shift+Tab's round: asking, edits allowed, plan (read-only). full-auto joins it only in a
# session started in it: a key press should not switch off every question by surprise.
CYCLE: tuple[ApprovalMode, ...] = ("ask", "auto-edit", "read-only")


def next_mode(current: ApprovalMode, started_in: ApprovalMode) -> ApprovalMode:
    cycle = CYCLE if started_in != "full-auto" else (*CYCLE, "full-auto")
    return cycle[(cycle.index(current) + 1) % len(cycle)] if current in cycle else cycle[0]


def show_usage(app: CommandHost, arg: str) -> None:
    """`/cost`: tokens per turn, the context by part, and the estimated cost."""
    from clover_code.ui.tui.usage import context_breakdown, prices_of
    from clover_code.ui.tui.widgets.usage_view import UsageView

    agent = app.agent
    prices = prices_of(app.settings)
    turns = app.usage.turns
    if agent is None:
        app.view.mount(UsageView(turns, app.usage.totals(), [], 0, 0, prices))
        app.view.scroll_end(animate=False)
        return

    async def work() -> None:
        try:
            parts, used = await asyncio.to_thread(context_breakdown, agent.conversation, agent.engine)
        except Exception as exc:  # said, never lost in a worker
            app.report(exc, "/cost failed: ")
            return
        app.view.mount(UsageView(turns, app.usage.totals(), parts, used, agent.engine.info.context_window, prices))
        app.view.scroll_end(animate=False)

    app.in_background(work())


def pick_session(app: CommandHost, resume: Callable[[str], None]) -> None:
    """`/resume` without an id: the picker; `resume(id)` with the chosen session."""
    from clover_code.ui.tui.session_list import list_sessions, preview
    from clover_code.ui.tui.widgets.session_picker import SessionPicker

    session = app.agent.session if app.agent is not None else None
    sessions = list_sessions(app.cwd, exclude=session.id if session is not None else None)
    if not sessions:
        app.note("No earlier session to resume in this folder.", "info")
        return
    app.push_screen(SessionPicker(sessions, preview), lambda chosen: resume(chosen) if chosen else None)
