"""The status bar's context meter against servers: a window said only by refusing is marked
as assumed until the first request teaches the real one; and the meter and `/cost` show one
count of the context, however the server's tokenizer differs from clover-code's estimate."""

from __future__ import annotations

import re

from clover_code.engine.wire.remote import RemoteEngine
from clover_code.settings import Settings
from clover_code.ui.tui.app import make_app
from clover_code.ui.tui.widgets.status_bar import render_status
from clover_code.ui.tui.widgets.usage_view import UsageView
from clover_code.wiring.assemble import build_agent
from tests.support.tui import idle, plain, ready, send, wait_for
from tests.support.window_servers import WindowServer, serve_app


async def test_the_status_bar_shows_the_window_the_server_teaches(repo):
    server = WindowServer("silent", 6144, replies=["Hello."])
    settings = Settings(engine="remote", approval="ask", sandbox=False)
    with serve_app(server.app()) as url:
        def factory(approver, resume_id):
            engine = RemoteEngine(url, backoff=0.01)
            return build_agent(settings, repo, approver, resume=resume_id, engine=engine)

        app = make_app(settings, repo, agent_factory=factory)
        async with app.run_test(size=(120, 30)) as pilot:
            await ready(pilot)
            assert "/131.1k?" in render_status(app.status.info).plain  # not said yet: marked as a guess
            await send(pilot, "say hello")
            await idle(pilot)
            info = app.status.info
    line = render_status(info).plain
    assert [s.refused for s in server.seen] == [True, False]
    assert info.context_window == 6144 and "/6.1k" in line and "?" not in line, line


async def shown_cost(pilot) -> str:
    """Run /cost and read the view it adds."""
    app = pilot.app
    before = len(app.query(UsageView))
    await send(pilot, "/cost")
    await wait_for(pilot, lambda: len(app.query(UsageView)) > before)
    return plain(app.query(UsageView).last().content)


def part(cost: str, name: str) -> str:
    found = re.search(rf"^{name} +(\S+)", cost, re.MULTILINE)
    assert found, cost
    return found.group(1)


async def test_after_clear_the_status_bar_and_cost_show_one_count(repo):
    """Issue 42 item 12: after /clear the meter said 4.5k and /cost 228, two counts of one context.
    The server counts 4 bytes a token, not clover-code's estimate: both show the one count, marked as
    estimated, and /cost's parts are the same before and after the server's count is learned."""
    server = WindowServer("vllm", 32768, replies=["Hello."])
    settings = Settings(engine="remote", approval="ask", sandbox=False)
    with serve_app(server.app()) as url:
        def factory(approver, resume_id):
            return build_agent(settings, repo, approver, resume=resume_id, engine=RemoteEngine(url, backoff=0.01))

        app = make_app(settings, repo, agent_factory=factory)
        async with app.run_test(size=(120, 40)) as pilot:
            await ready(pilot)
            first = await shown_cost(pilot)  # nothing learned from the server yet
            await send(pilot, "say hello")
            await idle(pilot)
            talked = app.status.info.context_used
            await send(pilot, "/clear")
            await wait_for(pilot, lambda: app.status.info.context_used < talked)
            shown = app.status.info.context_used
            cost = await shown_cost(pilot)
            assert app.status.info.context_used == shown  # /cost counted it again: the same
    assert [s.refused for s in server.seen] == [False]
    figure = f"{shown:,}" if shown < 10_000 else f"{shown / 1000:.1f}k"
    assert f"Context: ~{figure} of 32.8k tokens" in cost and "estimated" in cost, cost
    for name in ("system prompt", "tool descriptions"):
        assert part(first, name) == part(cost, name) and part(cost, name).startswith("~")
    assert part(cost, "your messages") == "~0"
