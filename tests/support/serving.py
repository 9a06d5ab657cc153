"""Real HTTP servers on 127.0.0.1 for the server and remote-engine tests:
`serve_app` runs any ASGI app under uvicorn in a thread, guarded as `clover-code serve` is
(engine/wire/http_guard.py); `RawServer` speaks HTTP/1.1 by hand (asyncio, on the test's loop) so
a test can send exactly the bytes it wants, broken ones included; `open_half_requests` and
`wait_closed` play the slow client."""

from __future__ import annotations

import asyncio
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import httpx
import uvicorn

from clover_code.engine.wire.http_guard import ConnectionLimits, GuardedConfig


@contextmanager
def serve_app(app, limits: ConnectionLimits | None = None) -> Iterator[str]:
    """Serve `app` on a free loopback port; yields the API root, e.g. http://127.0.0.1:PORT/v1."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    config = GuardedConfig(app, limits=limits or ConnectionLimits(), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def sse_body(*chunks: dict | str) -> list[bytes]:
    return [f"data: {c if isinstance(c, str) else json.dumps(c)}\n\n".encode() for c in chunks]


def delta_chunk(text: str = "", finish: str | None = None, **extra) -> dict:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}], **extra}


@dataclass
class Reply:
    """One scripted HTTP response."""

    status: int = 200  # 0: close the connection without answering
    parts: list[bytes] = field(default_factory=list)  # body pieces, sent as HTTP chunks
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "text/event-stream"})
    pause: float = 0.0  # before each part
    cut: bool = False  # close the connection instead of ending the body
    stall: float = 0.0  # after the parts, before ending


class RawServer:
    """An HTTP/1.1 server that answers each request with the next scripted Reply."""

    def __init__(self, replies: list[Reply]):
        self.replies = list(replies)
        self.requests: list[dict] = []  # {"path", "headers", "body"}
        self.dropped = 0  # responses the client hung up on
        self.url = ""

    async def __aenter__(self) -> RawServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/v1"
        return self

    async def __aexit__(self, *exc) -> None:
        self._server.close()

    async def _read_request(self, reader: asyncio.StreamReader) -> dict:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        lines = head.split("\r\n")
        headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:] if ln)}
        body = await reader.readexactly(int(headers.get("content-length", 0)))
        return {"path": lines[0].split()[1], "headers": headers, "body": json.loads(body) if body else None}

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            self.requests.append(await self._read_request(reader))
            reply = self.replies.pop(0)
            if reply.status == 0:
                return
            head = [f"HTTP/1.1 {reply.status} X", "Transfer-Encoding: chunked", "Connection: close"]
            head += [f"{k}: {v}" for k, v in reply.headers.items()]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
            for part in reply.parts:
                await asyncio.sleep(reply.pause)
                writer.write(f"{len(part):x}\r\n".encode() + part + b"\r\n")
                await writer.drain()
            await asyncio.sleep(reply.stall)
            if not reply.cut:
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except ConnectionError:
            self.dropped += 1
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()


HALF_REQUEST = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"  # the headers never end


def open_half_requests(url: str, count: int, start: bytes = HALF_REQUEST) -> list[socket.socket]:
    """`count` connections to the server at `url`, each having sent `start` and nothing more."""
    port = int(url.split(":")[2].split("/")[0])
    conns = []
    for _ in range(count):
        conn = socket.create_connection(("127.0.0.1", port))
        conn.sendall(start)
        conns.append(conn)
    return conns


def wait_closed(conns: list[socket.socket], count: int, timeout: float = 10) -> set[socket.socket]:
    """Wait until the server has closed `count` of `conns` (read to their end); returns those."""
    closed: set[socket.socket] = set()
    by_fd = {c.fileno(): c for c in conns}
    poll = select.poll()  # not select(): a test may hold descriptors past 1,024
    for fd in by_fd:
        poll.register(fd, select.POLLIN)
    deadline = time.monotonic() + timeout
    while len(closed) < count:
        left = deadline - time.monotonic()
        assert left > 0, f"the server closed {len(closed)} of {len(conns)} connections, not {count}"
        for fd, _ in poll.poll(left * 1000):
            try:
                ended = not by_fd[fd].recv(65536)
            except ConnectionResetError:
                ended = True
            if ended:
                closed.add(by_fd[fd])
                poll.unregister(fd)
    return closed


def still_open(conns: list[socket.socket]) -> bool:
    """None of `conns` has been closed by the server (or sent anything) so far."""
    poll = select.poll()
    for conn in conns:
        poll.register(conn, select.POLLIN)
    return not poll.poll(0)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve_process(*flags: str, env: dict | None = None) -> Iterator[str]:
    """`clover-code serve FLAGS` on a free port; yields its API root once /health answers."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "clover_code.cli", "serve", "--port", str(port), *flags],
                            env={**os.environ, **(env or {})}, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "serve never answered /health"
            try:
                httpx.get(url.removesuffix("/v1") + "/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
