"""`/mcp`: the user's MCP servers, their state and tools; and their start in the background once
an agent is ready, with a line in the status bar until every one is up (or has failed)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clover_code.ui.tui.commands.host import CommandHost

if TYPE_CHECKING:
    from clover_code.agent.loop import Agent

NONE = ("No MCP servers. Add [mcp_servers.NAME] to your own config (command/args or url); "
        "a repository's config never adds one.")


def show(app: CommandHost, arg: str) -> None:
    agent = app.agent
    servers = agent.extensions.mcp if agent is not None else None
    if not servers:
        app.note(NONE, "info")
        return
    app.note("MCP servers\n" + "\n".join(f"  {line}" for line in servers.status()), "info")


def start_servers(app: CommandHost, agent: Agent) -> None:
    """Start the agent's servers now (the screen is painted already); the status bar says which
    are starting, and a server that fails says so once."""
    servers = agent.extensions.mcp
    if not servers:
        return
    agent.extensions.start()
    app.status.show(mcp=f"MCP starting: {', '.join(servers.starting)}")

    async def watch() -> None:
        await servers.settled()
        app.status.show(mcp="")
        for failure in servers.failures():
            app.note(failure, "error")

    app.in_background(watch())
