"""`clover-code serve`: any Engine behind the wire formats agents speak.

POST /v1/chat/completions (OpenAI Chat Completions, chat.py), POST /v1/messages and
/v1/messages/count_tokens (Anthropic Messages, messages.py: Claude Code), POST /v1/responses
(OpenAI Responses, responses.py: Codex), GET /v1/models (with the context window), GET /health.
Every format takes the same path: authentication (`Authorization: Bearer KEY` or
`x-api-key: KEY`), the body's checks, the prompt's length against the window, the queue, and
one streamed event per committed block (reply.py splits blocks into text and tool calls; each
format's Writer renders them), with a keep-alive while the engine has nothing to say yet.

One generation runs at a time; requests wait their turn in arrival order, and a full queue
answers 429 with Retry-After (Messages: 529 overloaded_error, as Anthropic does). A client that
goes away cancels its generation: every wait on the engine races the connection's disconnect.

Whatever a client sends is answered in its format's error shape, never a traceback: a body that
is slow (408), too big (413), not JSON, holding a lone surrogate (which no tokenizer takes)
or a prompt the context window cannot hold (400). Connections themselves (header deadline,
cap) are held by engine/wire/http_guard.py, under uvicorn.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import logging
import os
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Protocol

from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from clover_code import jsonsafe
from clover_code.engine import Block, Engine, EngineError
from clover_code.engine.wire.chat import ChatDialect
from clover_code.engine.wire.gate import ClientGone, EventStream, Gate, race_disconnect, with_pings
from clover_code.engine.wire.messages import MessagesDialect, parse_count
from clover_code.engine.wire.openai import PromptTooLong, WireError, error_body
from clover_code.engine.wire.reply import Reply, Segment, WireCall, Writer, joined
from clover_code.engine.wire.responses import ResponsesDialect
from clover_code.jsonsafe import JSON, JSONObject

log = logging.getLogger("clover_code.server")
MAX_BODY_BYTES = 16 * 1024 * 1024
BODY_TIMEOUT = 60.0  # seconds for a whole request body, once its headers are in
PING_SECONDS = 5.0  # a keep-alive event after this long without a block
ROUTES = "POST /v1/chat/completions, /v1/messages, /v1/messages/count_tokens, /v1/responses, GET /v1/models"


class Dialect(Protocol):
    """A wire format's side of the server (chat.py, messages.py, responses.py)."""

    name: str
    busy_status: int  # a full queue's status
    strict_model: bool  # whether a model this server does not serve is a 404

    def parse(self, body: JSON, headers: Headers, window: int) -> WireCall: ...

    def writer(self, call: WireCall, model: str, prompt_tokens: int) -> Writer: ...

    def error(self, exc: WireError) -> JSONObject: ...


def _answer(dialect: Dialect, exc: WireError) -> JSONResponse:
    headers = dict(exc.headers or {})
    if exc.status in (408, 413):  # part of the body is unread: close rather than read on for the next request
        headers["Connection"] = "close"
    return JSONResponse(dialect.error(exc), status_code=exc.status, headers=headers or None)


class Server:
    def __init__(self, engine: Engine, *, api_key: str | None, max_queue: int, model_name: str,
                 max_body_bytes: int, body_timeout: float, ping_seconds: float = PING_SECONDS):
        self.engine, self.model_name = engine, model_name
        self._api_key = api_key
        self.gate = Gate(max_queue)
        self.max_body_bytes, self.body_timeout, self.ping_seconds = max_body_bytes, body_timeout, ping_seconds

    def _refusal(self, request: Request) -> WireError | None:
        """Why this request may not use the model, or None."""
        if not self._api_key:
            # Without a key the server is loopback-only; a foreign Host means DNS rebinding.
            if is_loopback((request.url.hostname or "").strip("[]")):
                return None
            return WireError("this server has no API key, so it only answers requests addressed to localhost; "
                             "start it with --api-key to serve other names", status=403, type="permission_error")
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        sent = token.strip() if scheme.lower() == "bearer" else request.headers.get("x-api-key", "").strip()
        if sent and hmac.compare_digest(sent.encode(), self._api_key.encode()):
            return None
        return WireError("missing or wrong API key: send 'Authorization: Bearer KEY' or 'x-api-key: KEY'",
                         status=401, type="authentication_error", code="invalid_api_key",
                         headers={"WWW-Authenticate": "Bearer"})

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "model": self.model_name, "busy": self.gate.busy,
                             "queued": self.gate.waiting})

    async def models(self, request: Request) -> Response:
        if refusal := self._refusal(request):
            return _answer(ChatDialect(), refusal)
        info = self.engine.info
        card = {"id": self.model_name, "object": "model", "created": 0, "owned_by": "clover-code",
                "context_window": info.context_window, "max_model_len": info.context_window,
                "block_size": info.block_size, "threshold": info.threshold, "policy": info.policy}
        return JSONResponse({"object": "list", "data": [card]})

    def endpoint(self, dialect: Dialect) -> Callable[[Request], Awaitable[Response]]:
        async def answer(request: Request) -> Response:
            return await self.generate(request, dialect)
        return answer

    async def count_tokens(self, request: Request) -> Response:
        """Messages' POST /v1/messages/count_tokens: the prompt's length, nothing generated."""
        dialect = MessagesDialect()
        try:
            if refusal := self._refusal(request):
                raise refusal
            tokens = self._count(parse_count(await self._body(request), request.headers), fits=False)
        except WireError as exc:
            return _answer(dialect, exc)
        except ClientGone:
            return Response(status_code=499)
        return JSONResponse({"input_tokens": tokens})

    async def generate(self, request: Request, dialect: Dialect) -> Response:
        try:
            call, prompt_tokens = await self._admit(request, dialect)
        except WireError as exc:
            return _answer(dialect, exc)
        except ClientGone:
            return Response(status_code=499)
        if not self.gate.admit():
            busy = WireError(f"the server is busy ({self.gate.waiting} requests queued); retry later",
                             status=dialect.busy_status, type="rate_limit_error",
                             headers={"Retry-After": str(self.gate.retry_after())})
            return _answer(dialect, busy)
        try:
            if self.gate.busy:  # a wait: give up the place if the client goes away meanwhile
                await race_disconnect(request.receive, self.gate.enter())
            else:
                await self.gate.enter()
        except ClientGone:
            return Response(status_code=499)
        writer = dialect.writer(call, self.model_name, prompt_tokens)
        if call.stream:
            return EventStream(self._events(call, writer, prompt_tokens), on_close=self.gate.leave)
        try:
            return await race_disconnect(request.receive, self._complete(call, writer, prompt_tokens, dialect))
        except ClientGone:
            log.info("client went away; generation cancelled")
            return Response(status_code=499)
        finally:
            self.gate.leave()

    async def _admit(self, request: Request, dialect: Dialect) -> tuple[WireCall, int]:
        """The request, checked (key, body, model, length) before it may queue; WireError if not."""
        if refusal := self._refusal(request):
            raise refusal
        call = dialect.parse(await self._body(request), request.headers, self.engine.info.context_window)
        if dialect.strict_model and call.model not in (None, self.model_name, self.engine.info.model):
            raise WireError(f"model {call.model!r} not found; this server serves {self.model_name!r}",
                            status=404, code="model_not_found")
        return call, self._count(call)
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

    def _count(self, call: WireCall, fits: bool = True) -> int:
        """The prompt's length in tokens; `fits`: refused (WireError) when it leaves no room for a reply."""
        try:
            tokens = self.engine.count_tokens(call.request)
        except EngineError as exc:  # e.g. the chat template refuses these messages
            raise WireError(str(exc), param="messages") from None
        if fits and tokens >= self.engine.info.context_window:
            raise PromptTooLong(tokens, self.engine.info.context_window)
        return tokens

    async def _events(self, call: WireCall, writer: Writer, prompt_tokens: int) -> AsyncGenerator[bytes, None]:
        reply, blocks = Reply(call.request, prompt_tokens), self.engine.stream(call.request)
        try:
            for data in writer.start():
                yield data
            async for block in with_pings(blocks, self.ping_seconds):
                if block is None:
                    yield writer.ping()
                    continue
                segments = reply.split(block)
                end = reply.end(block) if block.finish else None
                for data in writer.block(segments, block, end):
                    yield data
                if end:
                    return
            yield writer.fail("the engine ended the reply without saying why")
        except EngineError as exc:
            yield writer.fail(str(exc))
        except Exception:
            log.exception("generation failed")
            yield writer.fail("internal error while generating; see the server's log")
        finally:
            await blocks.aclose()

    async def _complete(self, call: WireCall, writer: Writer, prompt_tokens: int, dialect: Dialect) -> Response:
        reply, blocks, segments = Reply(call.request, prompt_tokens), list[Block](), list[Segment]()
        stream = self.engine.stream(call.request)
        try:
            async for block in stream:
                blocks.append(block)
                segments += reply.split(block)
                if block.finish:
                    break
        except EngineError as exc:
            return _answer(dialect, WireError(str(exc), status=500, type="server_error"))
        finally:
            await stream.aclose()
        if not blocks:
            return _answer(dialect, WireError("the engine produced no output", status=500, type="server_error"))
        return JSONResponse(writer.whole(joined(segments), blocks, reply.end(blocks[-1])))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)  # registered for HTTPException only (Starlette types handlers as Exception)
    code = "not_found" if exc.status_code == 404 else None
    message = f"{request.method} {request.url.path}: {exc.detail}; this server has {ROUTES} and GET /health"
    return JSONResponse(error_body(message, code=code), status_code=exc.status_code)


async def _internal_error(request: Request, exc: Exception) -> Response:
    # The traceback goes to the server's log (Starlette re-raises after this answer), not to the client.
    return JSONResponse(error_body("internal error; see the server's log", "server_error"), status_code=500)


async def _root(request: Request) -> Response:
    # Claude Code checks that the base URL answers (HEAD /) before its first request.
    return JSONResponse({"status": "ok", "api": "/v1"})


def create_app(engine: Engine, *, api_key: str | None = None, max_queue: int = 16,
               model_name: str | None = None, max_body_bytes: int = MAX_BODY_BYTES,
               body_timeout: float = BODY_TIMEOUT, ping_seconds: float = PING_SECONDS) -> Starlette:
    server = Server(engine, api_key=api_key, max_queue=max_queue, model_name=model_name or engine.info.model,
                    max_body_bytes=max_body_bytes, body_timeout=body_timeout, ping_seconds=ping_seconds)
    app = Starlette(routes=[
        Route("/", _root, methods=["GET", "HEAD"]),
        Route("/health", server.health, methods=["GET"]),
        Route("/v1/models", server.models, methods=["GET"]),
        Route("/v1/chat/completions", server.endpoint(ChatDialect()), methods=["POST"]),
        Route("/v1/messages", server.endpoint(MessagesDialect()), methods=["POST"]),
        Route("/v1/messages/count_tokens", server.count_tokens, methods=["POST"]),
        Route("/v1/responses", server.endpoint(ResponsesDialect()), methods=["POST"]),
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
