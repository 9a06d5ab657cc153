"""Commands on the session's figures, read from its ledger (ui/tui/ledger.py): `/stats`, and
`/cost` (tokens per turn, what fills the context, the estimated cost). What they show is
imported when first asked for: the app imports this module before its first paint."""

from __future__ import annotations

import asyncio

from clover_code.ui.tui.commands.host import CommandHost


def stats(app: CommandHost, arg: str) -> None:
    app.note(app.ledger.summary(), "info")


def cost(app: CommandHost, arg: str) -> None:
    """`/cost`. The context is counted afresh, and the status bar shows that count too: one figure."""
    from clover_code.agent.context_count import ContextCount, count_parts
    from clover_code.ui.tui.prices import prices_of
    from clover_code.ui.tui.widgets.usage_view import UsageView

    agent = app.agent
    prices = prices_of(app.settings)
    ledger = app.ledger
    if agent is None:
        app.view.mount(UsageView(ledger.turns, ledger.totals(), ContextCount(0, False), 0, prices))
        app.view.scroll_end(animate=False)
        return

    async def work() -> None:
        try:
            counted = await asyncio.to_thread(count_parts, agent.conversation, agent.engine)
        except Exception as exc:  # said, never lost in a worker
            app.report(exc, "/cost failed: ")
            return
        if not app.busy:  # during a turn the status bar follows the reply being written
            ledger.recounted(counted.tokens)
            app.status.show(context_used=counted.tokens)
        app.view.mount(UsageView(ledger.turns, ledger.totals(), counted, agent.engine.info.context_window, prices))
        app.view.scroll_end(animate=False)

    app.in_background(work())
