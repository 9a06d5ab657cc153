"""Connections to `clover-code serve`: a deadline for each request's headers, a cap on how
many are open.

uvicorn has neither. Its keep-alive timer runs only after a response (and stops at the next
byte), and `limit_concurrency` is checked once a request's headers are complete, answering
503 to every request, /health included, while the connections stay open. So 1,100 clients
that each send half a header held 1,100 descriptors until the process ran out and nothing
was answered; authentication cannot help, it comes after the headers.

Here a connection on which no request is being answered (a new one, one kept alive between
requests, one still sending a body the server answered without reading, as a 401 does) is
closed unless a request's headers are complete within `header_timeout`. Past
`max_connections`, the connection that has waited longest is closed to make room (the
newcomer itself when every other one is busy with a request), so a flood of slow clients
evicts itself while a client that sends its request at once gets in.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass
from typing import Any

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

log = logging.getLogger("clover_code.server")


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = 256  # open at once; the listen backlog is the same number
    header_timeout: float = 10.0  # seconds a connection may wait before its request's headers are in


class GuardedConfig(uvicorn.Config):
    """uvicorn's Config, serving over GuardedH11Protocol (uvicorn hands its config to every
    connection: this is how the limits reach them)."""

    def __init__(self, app: Any, *, limits: ConnectionLimits, **options: Any):
        # ws="none": the API has no websocket route, and an upgrade would leave the guard's reach.
        super().__init__(app, http=GuardedH11Protocol, ws="none", backlog=limits.max_connections, **options)
        self.limits = limits
        self.arrivals = itertools.count()  # orders connections by when they began to wait


class GuardedH11Protocol(H11Protocol):
    """One HTTP/1.1 connection, closed when its request's headers are late or room is needed."""

    def __init__(self, config: uvicorn.Config, server_state: ServerState, app_state: dict[str, Any],
                 _loop: asyncio.AbstractEventLoop | None = None):
        super().__init__(config, server_state, app_state, _loop)
        assert isinstance(config, GuardedConfig), "served through GuardedConfig only"
        self.guard = config
        self.waiting_since: int | None = None  # arrival number while no request is answered, else None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]  # uvicorn types it as Transport
        self._watch_headers()
        open_now = [c for c in self.connections if isinstance(c, GuardedH11Protocol) and not c.transport.is_closing()]
        if len(open_now) > self.guard.limits.max_connections:
            waiting = [c for c in open_now if c.waiting_since is not None]
            oldest = min(waiting, key=lambda c: c.waiting_since or 0) if waiting else self
            oldest.drop(f"over {self.guard.limits.max_connections} connections")

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_headers()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch_headers()  # kept alive: it waits for the next request's headers now

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._stop_waiting()

    def drop(self, why: str) -> None:
        log.info("closing a connection from %s: %s", self.client, why)
        self._stop_waiting()
        self.transport.close()

    def _watch_headers(self) -> None:
        """Run the deadline while no request is being answered: only complete headers stop it.
        (Not h11's "their state is IDLE": bytes of a body already answered would keep it off.)"""
        answering = self.cycle is not None and not self.cycle.response_complete
        owing = not answering and not self.transport.is_closing()
        if owing and self._deadline is None:
            self.waiting_since = next(self.guard.arrivals)
            timeout = self.guard.limits.header_timeout
            self._deadline = self.loop.call_later(timeout, self.drop, f"no request headers within {timeout:g} s")
        elif not owing:
            self._stop_waiting()

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline, self.waiting_since = None, None
