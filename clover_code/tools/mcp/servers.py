"""The user's MCP servers together: started in the background at session start, their tools
handed to the registry once they are up, each state for `/mcp` and the status bar, and a
server's failure said once (as a notice the agent shows)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from clover_code.tools.mcp.connection import McpConnection
from clover_code.tools.mcp.spec import ServerSpec
from clover_code.tools.mcp.tool import McpTool


class McpServers:
    def __init__(self, specs: dict[str, ServerSpec], cwd: Path) -> None:
        self.connections = [McpConnection(spec, cwd) for spec in specs.values()]
        self._said: set[str] = set()  # servers whose failure was told already
        self._started = False

    def __bool__(self) -> bool:
        return bool(self.connections)

    def start(self) -> None:
        """Start every enabled server in the background (in the running loop); once."""
        if not self._started:
            self._started = True
            for connection in self.connections:
                connection.start()

    @property
    def starting(self) -> list[str]:
        return [c.spec.name for c in self.connections if c.state == "starting"]

    async def settled(self) -> None:
        """Every server up or failed (each bounded by its startup_timeout_s)."""
        self.start()
        await asyncio.gather(*(c.settled() for c in self.connections))

    def tools(self) -> list[McpTool]:
        """The tools of the servers that started (a server that died later keeps its tools:
        they answer why they cannot run)."""
        return [McpTool(c, t) for c in self.connections for t in c.tools]

    def failures(self) -> list[str]:
        """What failed since last asked, one message per server, each said once."""
        new = [c for c in self.connections if c.state == "failed" and c.spec.name not in self._said]
        self._said.update(c.spec.name for c in new)
        return [c.unavailable() for c in new]

    def status(self) -> list[str]:
        """One line per server: name, state, transport, tools (or why it failed)."""
        lines = []
        for c in self.connections:
            detail = (", ".join(t.name for t in c.tools) or "no tools") if c.state == "ready" else c.error
            lines.append(f"{c.spec.name}  {c.state}  {c.spec.transport}: {c.spec.shown}"
                         + (f"\n    {detail}" if detail else ""))
        return lines

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.connections))
