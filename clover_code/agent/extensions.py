"""What the user brings to a session from their own config: MCP servers (their tools join the
registry once the servers are up) and hooks (fired at points of the loop, their HookRan events
logged and shown). Neither ever comes from the workspace (clover_code.config drops both from a
repository's config), nor from a session log."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from clover_code.agent.context import Conversation
from clover_code.agent.events import Event, Notice
from clover_code.agent.hooks import HookOutcome, Hooks
from clover_code.jsonsafe import JSON, JSONObject
from clover_code.tools import Registry

if TYPE_CHECKING:  # the mcp SDK loads only where servers are configured (wiring builds them)
    from clover_code.tools.mcp.servers import McpServers


class Extensions:
    def __init__(self, hooks: Hooks | None, mcp: McpServers | None, emit: Callable[[Event], None],
                 session: Callable[[], JSONObject]) -> None:
        """`session`: the fields every hook gets (session_id, transcript_path, cwd, permission_mode)."""
        self.hooks, self.mcp, self.emit, self.session = hooks, mcp, emit, session

    def start(self) -> None:
        """Start the MCP servers in the background (the running loop's); nothing waits for them."""
        if self.mcp:
            self.mcp.start()

    async def tools_ready(self, registry: Registry, conversation: Conversation) -> None:
        """Before a request: the servers up (or failed), their tools in the registry and in what
        the model is told; each failure said once."""
        if not self.mcp:
            return
        await self.mcp.settled()
        if registry.add(list(self.mcp.tools())):
            conversation.tools = registry.schemas()
        for failure in self.mcp.failures():
            self.emit(Notice(failure))

    async def hook(self, event: str, tool_name: str | None = None, *, emit: bool = True,
                   **fields: JSON) -> HookOutcome:
        """Run the event's hooks; their HookRan events are emitted unless `emit` is False (the
        caller emits `outcome.events` where they belong)."""
        if not self.hooks:
            return HookOutcome()
        payload: JSONObject = {**self.session(), **fields}
        if tool_name is not None:
            payload["tool_name"] = tool_name
        outcome = await self.hooks.fire(event, payload, tool_name)
        if emit:
            for ran in outcome.events:
                self.emit(ran)
        return outcome

    async def close(self) -> None:
        if self.mcp:
            await self.mcp.stop()
