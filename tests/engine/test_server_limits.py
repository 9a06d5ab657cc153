"""`clover-code serve` against slow and crowding clients, over real sockets on 127.0.0.1:
connections that never finish their headers (or their body) are closed, and past the
connection cap the longest-waiting one makes room, so /health and real requests still answer."""

from __future__ import annotations

import json
import socket
import time

import httpx

from clover_code.engine.scripted import ScriptedEngine
from clover_code.engine.wire.http_guard import ConnectionLimits
from clover_code.engine.wire.server import create_app
from tests.support.serving import open_half_requests, serve_app, still_open, wait_closed

WORDS = " ".join(f"w{i}" for i in range(20))
USER = [{"role": "user", "content": "hi"}]


def scripted(*replies, **kw) -> ScriptedEngine:
    return ScriptedEngine(list(replies), model="tiny", block_size=8, **kw)


def read_to_end(conn: socket.socket, timeout: float = 10) -> bytes:
    """Everything the server sends on `conn` until it closes the connection."""
    conn.settimeout(timeout)
    data = b""
    while chunk := conn.recv(65536):
        data += chunk
    return data


def test_half_sent_requests_past_the_cap_do_not_stop_health():
    cap = 20
    with serve_app(create_app(scripted(WORDS)), ConnectionLimits(max_connections=cap, header_timeout=60)) as url:
        conns = open_half_requests(url, cap + 50)
        closed = wait_closed(conns, 50)
        assert closed == set(conns[:50])  # the longest-waiting made room, one for each newcomer
        assert still_open(conns[50:])
        health = httpx.get(url.removesuffix("/v1") + "/health", timeout=5)
        assert wait_closed(conns[50:], 1) == {conns[50]}  # room for /health's connection
        reply = httpx.post(f"{url}/chat/completions", json={"messages": USER}, timeout=5)
    assert health.status_code == 200 and health.json()["status"] == "ok"
    assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] == WORDS


def test_connections_whose_headers_are_late_are_closed():
    limits = ConnectionLimits(header_timeout=0.5)
    with serve_app(create_app(scripted(WORDS)), limits) as url:
        t0 = time.monotonic()
        silent, half = open_half_requests(url, 1, b"") + open_half_requests(url, 1)
        # uvicorn's own keep-alive timer stops at the first byte of the next request: not this deadline.
        (kept,) = open_half_requests(url, 1, b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /heal")
        wait_closed([silent, half], 2)
        answered = read_to_end(kept)
        waited = time.monotonic() - t0
    assert b"200 OK" in answered and b'"status":"ok"' in answered
    assert 0.45 <= waited < 5


def test_a_body_still_coming_after_a_refusal_does_not_hold_the_connection():
    # Refused before its body is read (no key): the bytes that follow would stop uvicorn's keep-alive timer.
    app = create_app(scripted(WORDS), api_key="k-1")
    with serve_app(app, ConnectionLimits(header_timeout=0.5)) as url:
        start = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 1000000\r\n\r\n{")
        (conn,) = open_half_requests(url, 1, start)
        conn.settimeout(10)
        refused = conn.recv(65536)
        conn.sendall(b" ")  # and on, a byte at a time
        wait_closed([conn], 1)
    assert refused.startswith(b"HTTP/1.1 401")


def test_the_header_deadline_spares_slow_clients_within_it_and_long_generations():
    slow = scripted(WORDS, WORDS, delay=0.4)  # 3 blocks: 1.2 s, past the header deadline
    with serve_app(create_app(slow), ConnectionLimits(header_timeout=0.5)) as url:
        body = json.dumps({"messages": USER}).encode()
        (conn,) = open_half_requests(url, 1, b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        conn.sendall(b"Content-Type: application/json\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        raw = read_to_end(conn)
        streamed = httpx.post(f"{url}/chat/completions", json={"messages": USER, "stream": True}, timeout=10)
    assert raw.startswith(b"HTTP/1.1 200") and WORDS.encode() in raw
    assert streamed.status_code == 200 and streamed.text.rstrip().endswith("data: [DONE]")


def test_a_body_that_never_arrives_whole_gets_a_408_and_the_connection_closes():
    with serve_app(create_app(scripted(WORDS), body_timeout=0.5)) as url:
        start = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: 100\r\n\r\n" + b'{"messages": ')
        (conn,) = open_half_requests(url, 1, start)
        raw = read_to_end(conn)
        after = httpx.post(f"{url}/chat/completions", json={"messages": USER}, timeout=5)
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408") and b"connection: close" in head.lower()
    assert json.loads(body)["error"]["code"] == "request_timeout"
    assert after.status_code == 200
