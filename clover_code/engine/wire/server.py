"""`clover-code serve`: any Engine behind an OpenAI-compatible HTTP API.

POST /v1/chat/completions (streaming: one SSE chunk per committed block, with the
block's stats in a "clover" extension object; the last chunk carries usage),
GET /v1/models (with the context window), GET /health.

One generation runs at a time; requests wait their turn in arrival order, and a full
queue answers 429 with Retry-After. A client that goes away cancels its generation:
every wait on the engine races the connection's disconnect message.

Whatever a client sends is answered in OpenAI's error shape, never a traceback: a body that
is slow (408), too big (413), not JSON, holding a lone surrogate (which no tokenizer takes)
or a prompt the context window cannot hold (400). Connections themselves (header deadline,
cap) are held by engine/wire/http_guard.py, under uvicorn.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import math
import os
import time
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from clover_code import jsonsafe
from clover_code.engine import Block, Engine, EngineError
from clover_code.engine.markup.toolcalls import Debris, ParsedCall, Segment, ToolCallParser
from clover_code.engine.wire.openai import (
    ChatCall,
    WireError,
    chunk_json,
    completion_id,
    completion_json,
    error_body,
    parse_chat,
    sse,
    tool_call_json,
    usage_json,
)
from clover_code.jsonsafe import JSON, JSONObject

log = logging.getLogger("clover_code.server")
MAX_BODY_BYTES = 16 * 1024 * 1024
BODY_TIMEOUT = 60.0  # seconds for a whole request body, once its headers are in
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


def _error(status: int, message: str, type: str = "invalid_request_error", code: str | None = None,
           headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(message, type, code=code), status_code=status, headers=headers)


def _refused(exc: WireError) -> JSONResponse:
    # 408 and 413 leave part of the body unread: close rather than read on for the next request.
    headers = {"Connection": "close"} if exc.status in (408, 413) else None
    return JSONResponse(exc.body(), status_code=exc.status, headers=headers)


class Reply:
    """Blocks from the engine -> visible text and OpenAI tool_calls, block by block."""

    def __init__(self, call: ChatCall, engine: Engine, prompt_tokens: int):
        self.call, self.engine, self.prompt_tokens = call, engine, prompt_tokens
        self.parser = ToolCallParser(call.request.tools) if call.request.tools else None
        self.calls: list[JSONObject] = []
        self.completion_tokens = 0

    def split(self, block: Block) -> tuple[str, list[JSONObject]]:
        segments: list[Segment] = [block.text]
        if self.parser is not None:
            segments = self.parser.feed_segments(block.text)
            if block.finish:
                segments += self.parser.finish_segments()
        text, new = [], []
        for seg in [*segments, *block.tool_calls]:
            if isinstance(seg, str):
                text.append(seg)
                continue
            if isinstance(seg, Debris):  # markup, not content
                continue
            call = seg.call if isinstance(seg, ParsedCall) else seg
            if call is None:
                text.append(seg.raw if isinstance(seg, ParsedCall) else "")  # malformed: show what the model wrote
            else:
                new.append(tool_call_json(call, len(self.calls)))
                self.calls.append(new[-1])
        self.completion_tokens += block.tokens
        return "".join(text), new

    def finish(self, block: Block) -> tuple[str, JSONObject]:
        reason = block.finish or "stop"
        if self.calls and reason == "stop":
            reason = "tool_calls"
        prompt = block.prompt_tokens if block.prompt_tokens is not None else self.prompt_tokens
        cached = block.prompt_reused if block.prompt_tokens is not None else None
        return reason, usage_json(prompt, self.completion_tokens, cached)


class Server:
    def __init__(self, engine: Engine, *, api_key: str | None, max_queue: int, model_name: str,
                 max_body_bytes: int, body_timeout: float):
        self.engine, self.model_name = engine, model_name
        self._api_key = api_key
        self.gate = Gate(max_queue)
        self.max_body_bytes, self.body_timeout = max_body_bytes, body_timeout

    def _refusal(self, request: Request) -> Response | None:
        """Why this request may not use the model, or None."""
        if not self._api_key:
            # Without a key the server is loopback-only; a foreign Host means DNS rebinding.
            if is_loopback((request.url.hostname or "").strip("[]")):
                return None
            return _error(403, "this server has no API key, so it only answers requests addressed to "
                          "localhost; start it with --api-key to serve other names", "permission_error")
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self._api_key.encode()):
            return None
        return _error(401, "missing or wrong API key: send 'Authorization: Bearer KEY'",
                      "authentication_error", "invalid_api_key", {"WWW-Authenticate": "Bearer"})

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "model": self.model_name, "busy": self.gate.busy,
                             "queued": self.gate.waiting})

    async def models(self, request: Request) -> Response:
        if refusal := self._refusal(request):
            return refusal
        info = self.engine.info
        card = {"id": self.model_name, "object": "model", "created": 0, "owned_by": "clover-code",
                "context_window": info.context_window, "max_model_len": info.context_window,
                "block_size": info.block_size, "threshold": info.threshold}
        return JSONResponse({"object": "list", "data": [card]})

    async def _body(self, request: Request) -> JSON:
        # JSON only: a web page cannot send that cross-origin without a CORS preflight (which
        # this server never grants), so a browser tab cannot drive a local server.
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            raise WireError("send the request body as JSON with 'Content-Type: application/json'", status=415)
        try:
            body = jsonsafe.loads(await self._read(request))  # never RecursionError
        except (ValueError, UnicodeDecodeError) as exc:
            raise WireError(f"the request body is not valid JSON: {exc}") from None
        # A lone surrogate is valid JSON and a valid Python str, but no tokenizer takes it.
        if hit := jsonsafe.find_lone_surrogate(body):
            where, surrogate = hit
            raise WireError(f"invalid Unicode in {where or 'the request body'}: a lone surrogate "
                            f"({jsonsafe.escape_char(surrogate)}, half of a UTF-16 pair); escape both halves "
                            "of the pair, or send the character itself as UTF-8", param=where or None)
        return body

    async def _read(self, request: Request) -> bytearray:
        """The raw body: at most max_body_bytes (else 413), whole within body_timeout (else 408)."""
        declared = request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise WireError(f"request body over {self.max_body_bytes} bytes", status=413)
        raw = bytearray()
        try:
            async with asyncio.timeout(self.body_timeout):
                async for part in request.stream():
                    raw += part
                    if len(raw) > self.max_body_bytes:
                        raise WireError(f"request body over {self.max_body_bytes} bytes", status=413)
        except TimeoutError:
            raise WireError(f"the request body did not arrive within {self.body_timeout:g} s", status=408,
                            code="request_timeout") from None
        except ClientDisconnect:
            raise ClientGone() from None
        return raw

    def _prompt_tokens(self, call: ChatCall) -> int:
        """The prompt's length in tokens, refused (WireError) when it leaves no room for a reply."""
        try:
            tokens = self.engine.count_tokens(call.request)
        except EngineError as exc:  # e.g. the chat template refuses these messages
            raise WireError(str(exc), param="messages") from None
        window = self.engine.info.context_window
        if tokens >= window:  # worded as OpenAI does, so clients (RemoteEngine too) read both numbers
            raise WireError(f"This model's maximum context length is {window} tokens (prompt plus reply); "
                            f"this request has {tokens} input tokens, which leaves no room for a reply: "
                            "shorten the conversation", param="messages", code="context_length_exceeded")
        return tokens

    async def chat(self, request: Request) -> Response:
        if refusal := self._refusal(request):
            return refusal
        try:
            call = parse_chat(await self._body(request), max_tokens_limit=self.engine.info.context_window)
            if call.model not in (None, self.model_name, self.engine.info.model):
                raise WireError(f"model {call.model!r} not found; this server serves {self.model_name!r}",
                                status=404, code="model_not_found")
            prompt_tokens = self._prompt_tokens(call)
        except WireError as exc:
            return _refused(exc)
        except ClientGone:
            return Response(status_code=499)
        if not self.gate.admit():
            return _error(429, f"the server is busy ({self.gate.waiting} requests queued); retry later",
                          "rate_limit_error", headers={"Retry-After": str(self.gate.retry_after())})
        try:
            if self.gate.busy:  # a wait: give up the place if the client goes away meanwhile
                await race_disconnect(request.receive, self.gate.enter())
            else:
                await self.gate.enter()
        except ClientGone:
            return Response(status_code=499)
        if call.stream:
            return EventStream(self._events(call, prompt_tokens), on_close=self.gate.leave)
        try:
            return await race_disconnect(request.receive, self._complete(call, prompt_tokens))
        except ClientGone:
            log.info("client went away; generation cancelled")
            return Response(status_code=499)
        finally:
            self.gate.leave()

    async def _events(self, call: ChatCall, prompt_tokens: int) -> AsyncGenerator[bytes, None]:
        cid, created, reply = completion_id(), int(time.time()), Reply(call, self.engine, prompt_tokens)
        blocks = self.engine.stream(call.request)
        try:
            block = None
            async for block in blocks:
                text, calls = reply.split(block)
                finish, usage = reply.finish(block) if block.finish else (None, None)
                yield sse(chunk_json(cid, self.model_name, created, text=text, calls=calls, finish=finish,
                                     block=block, first=block.index == 0, usage=usage))
                if block.finish:
                    break
            yield b"data: [DONE]\n\n"
        except EngineError as exc:
            yield sse(error_body(str(exc), "server_error"))
        except Exception:
            log.exception("generation failed")
            yield sse(error_body("internal error while generating; see the server's log", "server_error"))
        finally:
            await blocks.aclose()

    async def _complete(self, call: ChatCall, prompt_tokens: int) -> Response:
        reply, blocks, texts = Reply(call, self.engine, prompt_tokens), [], []
        stream = self.engine.stream(call.request)
        try:
            async for block in stream:
                blocks.append(block)
                texts.append(reply.split(block)[0])
                if block.finish:
                    break
        except EngineError as exc:
            return _error(500, str(exc), "server_error")
        finally:
            await stream.aclose()
        if not blocks:
            return _error(500, "the engine produced no output", "server_error")
        finish, usage = reply.finish(blocks[-1])
        return JSONResponse(completion_json(completion_id(), self.model_name, text="".join(texts),
                                            calls=reply.calls, finish=finish, usage=usage, blocks=blocks))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)  # registered for HTTPException only (Starlette types handlers as Exception)
    code = "not_found" if exc.status_code == 404 else None
    return _error(exc.status_code, f"{request.method} {request.url.path}: {exc.detail}; this server has "
                  "POST /v1/chat/completions, GET /v1/models and GET /health", code=code)


async def _internal_error(request: Request, exc: Exception) -> Response:
    # The traceback goes to the server's log (Starlette re-raises after this answer), not to the client.
    return _error(500, "internal error; see the server's log", "server_error")


def create_app(engine: Engine, *, api_key: str | None = None, max_queue: int = 16,
               model_name: str | None = None, max_body_bytes: int = MAX_BODY_BYTES,
               body_timeout: float = BODY_TIMEOUT) -> Starlette:
    server = Server(engine, api_key=api_key, max_queue=max_queue, model_name=model_name or engine.info.model,
                    max_body_bytes=max_body_bytes, body_timeout=body_timeout)
    app = Starlette(routes=[
        Route("/health", server.health, methods=["GET"]),
        Route("/v1/models", server.models, methods=["GET"]),
        Route("/v1/chat/completions", server.chat, methods=["POST"]),
    ], exception_handlers={HTTPException: _http_error, Exception: _internal_error})
    app.state.server = server
    return app


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name: it may resolve anywhere


def served_name(model: str) -> str:
    """The id /v1/models shows: a checkpoint folder's name, not its full path."""
    return Path(model).name if os.sep in model else model
