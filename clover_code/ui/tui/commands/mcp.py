"""`/mcp`: the user's MCP servers, their state and tools; and their start in the background once
an agent is ready, with a line in the status bar until every one is up (or has failed).

A repository's `.mcp.json` is offered here, never started unasked: its command lines are shown
once per folder and content, and `/mcp allow` or `/mcp deny` answers (remembered in the user's
state, tools/mcp/project_servers.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clover_code.ui.tui.commands.host import CommandHost

if TYPE_CHECKING:
    from clover_code.agent.loop import Agent
    from clover_code.tools.mcp.servers import McpServers

NONE = ("No MCP servers. Add [mcp_servers.NAME] to your own config (command/args or url); "
        "a repository's config never adds one.")
OFFER = ("This repository asks to start these MCP servers (.mcp.json); they would run as you, outside "
         "the sandbox:\n{lines}\nAllow? /mcp allow starts them (and from now on, while the file stays "
         "as it is); /mcp deny never asks again about this file.")


def show(app: CommandHost, arg: str) -> None:
    agent = app.agent
    servers = agent.extensions.mcp if agent is not None else None
    if agent is not None and servers is not None and arg in ("allow", "deny"):
        _answer(app, agent, servers, arg == "allow")
    elif not servers:
        app.note(NONE, "info")
    else:
        app.note("MCP servers\n" + "\n".join(f"  {line}" for line in servers.status()), "info")


def start_servers(app: CommandHost, agent: Agent) -> None:
    """Start the agent's servers now (the screen is painted already); the status bar says which
    are starting, and a server that fails says so once."""
    servers = agent.extensions.mcp
    if servers is None:
        return
    _offer_project(app, servers, agent)
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


def _offer_project(app: CommandHost, servers: McpServers, agent: Agent) -> None:
    from clover_code.tools.mcp.project_servers import decision, read_project_servers

    try:
        project = read_project_servers(agent.ctx.workspace.root)
    except ValueError as exc:
        app.note(f"ignored {exc}", "error")
        return
    if project is None:
        return
    allowed = decision(project)
    if allowed:
        servers.add(project.specs)
    elif allowed is None:
        servers.offered = project
        app.note(OFFER.format(lines="\n".join(f"  {line}" for line in project.command_lines())), "warning")


def _answer(app: CommandHost, agent: Agent, servers: McpServers, allow: bool) -> None:
    from clover_code.tools.mcp.project_servers import remember

    project = servers.offered
    if project is None:
        app.note("No repository's MCP servers are waiting for an answer.", "info")
        return
    servers.offered = None
    remember(project, allow)
    if not allow:
        app.note("The repository's MCP servers stay off (not asked again while .mcp.json stays as it is).", "dim")
        return
    servers.add(project.specs)
    app.note(f"Starting the repository's MCP servers: {', '.join(project.specs)}", "dim")
    start_servers(app, agent)
