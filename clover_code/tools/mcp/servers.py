"""The user's MCP servers together: started in the background at session start, their tools
handed to the registry once they are up, each state for `/mcp` and the status bar, and a
server's failure said once (as a notice the agent shows).

The SDK takes a second or more to import on a busy machine: it is imported when the servers
start, in a thread, so neither building the agent nor the TUI's first paint waits for it."""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code.tools.mcp.spec import ServerSpec

if TYPE_CHECKING:
    from clover_code.tools.mcp.connection import McpConnection
    from clover_code.tools.mcp.project_servers import ProjectServers
    from clover_code.tools.mcp.tool import McpTool


class McpServers:
    def __init__(self, specs: dict[str, ServerSpec], cwd: Path) -> None:
        self.specs, self.cwd = list(specs.values()), cwd
        self.connections: list[McpConnection] = []  # made when they start
        self._said: set[str] = set()  # servers whose failure was told already
        self._starting: asyncio.Task[None] | None = None
        self.offered: ProjectServers | None = None  # a repository's .mcp.json the TUI asks about

    def add(self, specs: dict[str, ServerSpec]) -> None:
        """More servers (a repository's the user allowed); started at once if the rest have
        started. A name already in use is left out."""
        taken = {s.name for s in self.specs}
        new = [s for name, s in specs.items() if name not in taken]
        self.specs += new
        if self._starting is not None and self._starting.done():
            from clover_code.tools.mcp.connection import McpConnection

            started = [McpConnection(spec, self.cwd) for spec in new]
            self.connections += started
            for connection in started:
                connection.start()

    def __bool__(self) -> bool:
        return bool(self.specs)

    def start(self) -> None:
        """Start every enabled server in the background (in the running loop); once."""
        if self._starting is None:
            self._starting = asyncio.create_task(self._start(), name="mcp servers")

    async def _start(self) -> None:
        module = await asyncio.to_thread(importlib.import_module, "clover_code.tools.mcp.connection")
        self.connections = [module.McpConnection(spec, self.cwd) for spec in self.specs]
        for connection in self.connections:
            connection.start()

    @property
    def starting(self) -> list[str]:
        if not self.connections:
            return [s.name for s in self.specs if s.enabled]
        return [c.spec.name for c in self.connections if c.state == "starting"]

    async def settled(self) -> None:
        """Every server up or failed (each bounded by its startup_timeout_s)."""
        self.start()
        assert self._starting is not None
        await asyncio.shield(self._starting)
        await asyncio.gather(*(c.settled() for c in self.connections))

    def tools(self) -> list[McpTool]:
        """The tools of the servers that started (a server that died later keeps its tools:
        they answer why they cannot run)."""
        if not self.connections:
            return []
        from clover_code.tools.mcp.tool import McpTool

        return [McpTool(c, t) for c in self.connections for t in c.tools]

    def failures(self) -> list[str]:
        """What failed since last asked, one message per server, each said once."""
        new = [c for c in self.connections if c.state == "failed" and c.spec.name not in self._said]
        self._said.update(c.spec.name for c in new)
        return [c.unavailable() for c in new]

    def status(self) -> list[str]:
        """One line per server: name, state, transport, tools (or why it failed)."""
        if not self.connections:
            return [f"{s.name}  {'starting' if s.enabled else 'disabled'}  {s.transport}: {s.shown}"
                    for s in self.specs]
        lines = []
        for c in self.connections:
            detail = (", ".join(t.name for t in c.tools) or "no tools") if c.state == "ready" else c.error
            lines.append(f"{c.spec.name}  {c.state}  {c.spec.transport}: {c.spec.shown}"
                         + (f"\n    {detail}" if detail else ""))
        return lines

    async def stop(self) -> None:
        if self._starting is not None:
            await asyncio.gather(self._starting, return_exceptions=True)
        await asyncio.gather(*(c.stop() for c in self.connections))
