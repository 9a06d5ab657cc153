"""One MCP server, as one background task: it starts the server (a program over stdio, or a
streamable HTTP endpoint), initialises the session, lists the tools and then holds the session
open until told to stop. Calls from any task go through the held session.

A server that fails to start, or dies, is `failed` with a message saying why (its stderr's
last lines included); its tools then answer that message instead of running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import IO, Any, Literal

import anyio
import httpx2
from mcp import ClientSession, MCPError, types
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from clover_code.errors import ToolError
from clover_code.tools.mcp.spec import ServerSpec

State = Literal["starting", "ready", "failed", "stopped", "disabled"]
STDERR_TAIL = 600  # characters of a failed server's stderr quoted in its message
PING_EVERY_S = 2.0  # how often a held stdio server is asked whether it is still there


class McpConnection:
    def __init__(self, spec: ServerSpec, cwd: Path) -> None:
        self.spec, self.cwd = spec, cwd
        self.state: State = "starting" if spec.enabled else "disabled"
        self.error = ""
        self.tools: list[types.Tool] = []
        self._session: ClientSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._settled = asyncio.Event()
        self._stderr: IO[str] | None = None
        if not spec.enabled:
            self._settled.set()

    def start(self) -> None:
        """Start the server in the background (once); `settled()` waits for it to be up or failed."""
        if self._task is None and self.spec.enabled:
            self._task = asyncio.create_task(self._life(), name=f"mcp:{self.spec.name}")

    async def settled(self) -> None:
        await self._settled.wait()

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._task), 5)
            except (TimeoutError, asyncio.CancelledError):
                self._task.cancel()
                await asyncio.gather(self._task, return_exceptions=True)
        if self.state in ("ready", "starting"):
            self.state = "stopped"

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """The server's answer; ToolError when it is not running, times out or dies meanwhile."""
        session = self._session
        if self.state != "ready" or session is None:
            raise ToolError(self.unavailable())
        try:
            with anyio.fail_after(self.spec.tool_timeout_s):
                result = await session.call_tool(tool, arguments)
        except TimeoutError:
            raise ToolError(f"MCP server {self.spec.name}: {tool} gave no answer within "
                            f"{self.spec.tool_timeout_s:g} s (tool_timeout_s)") from None
        except Exception as exc:
            if isinstance(exc, MCPError) and exc.error.code == types.CONNECTION_CLOSED and not self._stop.is_set():
                self._fail(exc, f"stopped during a call of {tool}")
            if self.state != "ready":
                raise ToolError(self.unavailable()) from None
            raise ToolError(f"MCP server {self.spec.name}: {tool} failed: {_said(exc)}") from None
        if not isinstance(result, types.CallToolResult):
            raise ToolError(f"MCP server {self.spec.name}: {tool} asked for input this client cannot give")
        return result

    def unavailable(self) -> str:
        why = f": {self.error}" if self.error else ""
        return f"MCP server {self.spec.name} is not running ({self.state}{why}); its tools cannot run"

    async def _life(self) -> None:
        try:
            async with self._connected() as session:
                with anyio.fail_after(self.spec.startup_timeout_s):
                    await session.initialize()
                    self.tools = await _all_tools(session)
                self._session, self.state = session, "ready"
                self._settled.set()
                await self._serve_until_stopped(session)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # an ExceptionGroup from the SDK's task groups, a timeout...
            self._fail(exc)
        finally:
            self._session = None
            self._settled.set()
            if self._stderr is not None:
                self._stderr.close()

    async def _serve_until_stopped(self, session: ClientSession) -> None:
        """Hold the session until stop(); a stdio server that exits meanwhile ends it (failed)."""
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), PING_EVERY_S)
            if not self._stop.is_set() and self.spec.transport == "stdio":
                try:
                    with anyio.fail_after(self.spec.startup_timeout_s):
                        await session.send_ping()
                except Exception as exc:
                    self._fail(exc, "stopped answering")
                    return

    def _fail(self, exc: BaseException, doing: str = "") -> None:
        if self.state == "failed":  # said already: the first cause is the one to tell
            return
        if self._stop.is_set():
            self.state = "stopped"
            return
        if self.state == "starting":
            what = "did not start" if not isinstance(exc, TimeoutError) else (
                f"did not start within {self.spec.startup_timeout_s:g} s (startup_timeout_s)")
        else:
            what = doing or "stopped"
        self.state, self.error = "failed", f"{what}: {_said(exc)}{self._stderr_tail()}"

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            tail = self._stderr.read()[-STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends: {tail}" if tail else ""

    @contextlib.asynccontextmanager
    async def _connected(self) -> AsyncIterator[ClientSession]:
        async with contextlib.AsyncExitStack() as stack:
            if self.spec.transport == "http":
                read, write = await stack.enter_async_context(self._http())
            else:
                # kept open past the session: a failure quotes it; _life closes it
                self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
                params = StdioServerParameters(command=self.spec.command or "", args=list(self.spec.args),
                                               env={**os.environ, **dict(self.spec.env)},
                                               cwd=self.spec.cwd or str(self.cwd))
                read, write = await stack.enter_async_context(stdio_client(params, errlog=self._stderr))
            yield await stack.enter_async_context(ClientSession(read, write))

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[Any]:
        headers = dict(self.spec.headers)
        if self.spec.bearer_token_env_var:
            token = os.environ.get(self.spec.bearer_token_env_var)
            if not token:
                raise ValueError(f"the environment variable {self.spec.bearer_token_env_var} "
                                 "(bearer_token_env_var) is not set")
            headers["Authorization"] = f"Bearer {token}"
        # The SDK's own timeouts: a server may hold a response stream open for minutes.
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with httpx2.AsyncClient(headers=headers, timeout=timeout) as client, \
                streamable_http_client(self.spec.url or "", http_client=client) as streams:
            yield streams[0], streams[1]


async def _all_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _said(exc: BaseException) -> str:
    """The innermost message of `exc` (the SDK wraps failures in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return str(exc) or type(exc).__name__
