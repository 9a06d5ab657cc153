"""The queue and the connection's life, for `serve`: one generation at a time in arrival
order (Gate), every wait raced against the client's disconnect (race_disconnect), and an SSE
response whose producer is cancelled the moment the client goes (EventStream)."""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import TypeVar

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

log = logging.getLogger("clover_code.server")
T = TypeVar("T")


class ClientGone(Exception):
    """The client closed its connection."""


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def race_disconnect(receive: Receive, work: Awaitable[T]) -> T:
    """Run `work` until done or until the client disconnects (then cancel it: ClientGone)."""
    task, watch = asyncio.ensure_future(work), asyncio.ensure_future(_disconnected(receive))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()
        if not task.done():
            task.cancel()
        await asyncio.gather(task, watch, return_exceptions=True)
    if task.cancelled():
        raise ClientGone()
    return task.result()


class Gate:
    """Generations run one at a time, in arrival order, with at most `max_queue` waiting."""

    def __init__(self, max_queue: int):
        self.max_queue = max_queue
        self.waiting = 0
        self._lock = asyncio.Lock()  # asyncio.Lock wakes waiters first in, first out
        self._durations: deque[float] = deque([1.0], maxlen=8)
        self._started = 0.0

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    def admit(self) -> bool:
        """Reserve a place in the queue, or say it is full."""
        if (self.busy or self.waiting) and self.waiting >= self.max_queue:
            return False
        self.waiting += 1
        return True

    async def enter(self) -> None:
        """Wait for the engine (after `admit`); the place is given up even if cancelled."""
        try:
            await self._lock.acquire()
        finally:
            self.waiting -= 1
        self._started = time.monotonic()

    def leave(self) -> None:
        self._durations.append(time.monotonic() - self._started)
        self._lock.release()

    def retry_after(self) -> int:
        mean = sum(self._durations) / len(self._durations)
        return max(1, min(60, math.ceil(mean * (self.waiting + 1))))


class EventStream(Response):
    """SSE whose producer is cancelled the moment the client disconnects."""

    media_type = "text/event-stream"

    def __init__(self, events: AsyncGenerator[bytes, None], on_close: Callable[[], None]):
        # Not Response.__init__: that would set content-length: 0 for the empty body.
        self.status_code, self.background = 200, None
        self.init_headers({"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        self.events, self.on_close = events, on_close

    async def _send_all(self, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        async for data in self.events:
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await race_disconnect(receive, self._send_all(send))
        except (ClientGone, OSError):
            log.info("client went away; generation cancelled")
        finally:
            await self.events.aclose()
            self.on_close()


async def with_pings(items: AsyncIterator[T], every: float) -> AsyncGenerator[T | None, None]:
    """`items`, with a None each time `every` seconds pass without one (a client's keep-alive
    while a long prompt encodes: nothing else would reach it for that long)."""
    while True:
        nxt = asyncio.ensure_future(anext(items))
        try:
            while not (await asyncio.wait({nxt}, timeout=every))[0]:
                yield None
        finally:
            if not nxt.done():
                nxt.cancel()
                await asyncio.gather(nxt, return_exceptions=True)
        try:
            item = nxt.result()
        except StopAsyncIteration:
            return
        yield item
