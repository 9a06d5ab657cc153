"""The status bar's context meter against a server that says its window only by refusing:
an assumed window is marked until the first request teaches the real one."""

from __future__ import annotations

from clover_code.engine.wire.remote import RemoteEngine
from clover_code.settings import Settings
from clover_code.ui.tui.app import make_app
from clover_code.ui.tui.widgets.status_bar import render_status
from clover_code.wiring.assemble import build_agent
from tests.support.tui import idle, ready, send
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
