"""A blocking producer on a worker thread, consumed as an async iterator.

Decoding runs in a worker thread (torch releases the GIL, so the event loop stays live);
every item it yields, and every callback it relays, is handed to the consumer's asyncio
loop with `call_soon_threadsafe`. Closing the async iterator sets the relay's `cancel`
flag; the producer checks it before each forward pass. One producer runs at a time.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
A = TypeVar("A")
_DONE = object()


class Relay:
    """What the worker holds: the cancel flag, and calls into the consumer's loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.cancel = threading.Event()

    def call(self, fn: Callable[[A], object], arg: A) -> None:
        try:
            self.loop.call_soon_threadsafe(fn, arg)
        except RuntimeError:  # the consumer's loop is closed (its app exited mid-decode): stop
            self.cancel.set()

    def forward(self, fn: Callable[[A], object] | None) -> Callable[[A], None] | None:
        """`fn` run on the loop thread for each call from the worker, until cancelled; None stays
        None (so a producer without a listener builds no reports at all)."""
        if fn is None:
            return None

        def relayed(arg: A) -> None:
            if not self.cancel.is_set():
                self.call(fn, arg)
        return relayed


class ThreadBridge(Generic[T]):
    """Runs one producer at a time on a named worker thread (`lock` is held while it runs)."""

    def __init__(self, name: str, wrap_error: Callable[[BaseException], BaseException] = lambda e: e):
        self.name = name
        self.wrap_error = wrap_error  # what the consumer raises for an error in the worker
        self.lock = threading.Lock()

    async def stream(self, produce: Callable[[Relay], Iterator[T]]) -> AsyncGenerator[T, None]:
        """Yield what `produce(relay)` yields on the worker, as it comes; its errors are raised here."""
        relay = Relay(asyncio.get_running_loop())
        queue: asyncio.Queue[object] = asyncio.Queue()

        def work() -> None:
            try:
                with self.lock:
                    for item in produce(relay):
                        relay.call(queue.put_nowait, item)
            except BaseException as e:  # handed to the consumer, raised there
                relay.call(queue.put_nowait, e)
            finally:
                relay.call(queue.put_nowait, _DONE)

        threading.Thread(target=work, name=self.name, daemon=True).start()
        try:
            while (item := await queue.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise self.wrap_error(item)
                yield item  # type: ignore[misc]  # anything else on the queue is a T
        finally:
            relay.cancel.set()  # the worker stops before its next forward pass

    async def run(self, fn: Callable[[], None]) -> None:
        """`fn` on a worker thread, once a producer still winding down has finished."""
        def locked() -> None:
            with self.lock:
                fn()
        await asyncio.to_thread(locked)
