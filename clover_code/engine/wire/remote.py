"""RemoteEngine: any OpenAI-compatible server (clover-code serve, SGLang, vLLM, llama.cpp)
over streaming /v1/chat/completions.

Each SSE chunk with text becomes a Block at once; tool-call deltas are gathered by index
and delivered, whole, on the block that carries the finish reason. Connection errors
and 429/503 are retried with backoff until the response starts; after that a failure
keeps the blocks already delivered and raises EngineError. The API key is sent in the
Authorization header and nowhere else: not in reprs, logs or error messages.

The context window is learned once per endpoint (engine.window says where servers state it):
from GET /models, else the server's own metadata routes, else the HTTP 400 that refuses an
over-long request, which is then sent once more with a reply that fits. Each request's
max_tokens is capped to the room the prompt leaves; prompt sizes are estimates scaled by
what the server last counted (its usage), so they track the server's own tokenizer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import json
import logging
import math
import os
import ssl
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlsplit, urlunsplit

import httpx

from clover_code import jsonsafe
from clover_code.credentials import mask_url_credentials
from clover_code.engine import (
    CLOVER_CONTEXT_WINDOW,
    Block,
    ChatRequest,
    EngineError,
    EngineInfo,
    estimate_tokens,
)
from clover_code.engine.wire.chunk_fold import ChunkFold, chunk_json_object
from clover_code.engine.wire.openai import SSEReader, request_json
from clover_code.engine.wire.window import (
    ASSUMED,
    ContextOverflow,
    field_window,
    no_room,
    ollama_window,
    props_window,
    raise_window_hint,
    rejection_limits,
)
from clover_code.jsonsafe import JSON, JSONObject

log = logging.getLogger("clover_code.remote")
RETRY_STATUS = {429, 503}
COUNT_MARGIN = 1.05  # prompt estimates err this much high: a request the server refuses costs a round trip
MIN_REPLY_ROOM = 64  # tokens: less room than this for a reply is no room
REJECTED_SOURCE = "the server's HTTP 400 answer"


def _normalize_endpoint(endpoint: str) -> str:
    """The API root: 'http://h:8000' means 'http://h:8000/v1'; no trailing slash."""
    parts = urlsplit(endpoint.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise EngineError(f"endpoint {mask_url_credentials(endpoint)!r} is not an http(s) URL; "
                          "use e.g. --endpoint http://gpu-box:8000/v1")
    path = parts.path.rstrip("/") or "/v1"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _server_error(text: str) -> tuple[str, JSONObject]:
    """An error body's message and its error object ({} when it has none)."""
    try:
        data = jsonsafe.loads(text)
    except ValueError:
        return " ".join(text.split())[:300], {}
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data.get("message")))
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:300], err
        if isinstance(err, str):
            return err[:300], {}
    return " ".join(text.split())[:300], {}


def _server_root(base: str) -> str:
    """Where servers keep their own routes (/props, /api/show): the API root without /v1."""
    return base.removesuffix("/v1")


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time()) if when else None


class RemoteEngine:
    def __init__(self, endpoint: str | None = None, *, api_key: str | None = None, model: str | None = None,
                 connect_timeout: float = 10.0, idle_timeout: float = 120.0, retries: int = 3,
                 backoff: float = 0.5, max_retry_wait: float = 30.0, context_window: int | None = None,
                 stream: bool = True):
        """`stream=False` asks for whole replies (one block each). Servers that cannot stream
        tool calls are detected and get whole replies when tools are given."""
        endpoint = endpoint or os.environ.get("CLOVER_ENDPOINT") or os.environ.get("OPENAI_BASE_URL")
        if not endpoint:
            raise EngineError("no server to talk to: pass --endpoint URL (e.g. http://gpu-box:8000/v1) "
                              "or set CLOVER_ENDPOINT")
        self.base = _normalize_endpoint(endpoint)
        self.url = mask_url_credentials(self.base)  # for messages
        if api_key is None:  # "" means: send no key
            api_key = os.environ.get("CLOVER_API_KEY") or os.environ.get("OPENAI_API_KEY")
        self._api_key = api_key or None
        self.connect_timeout, self.idle_timeout = connect_timeout, idle_timeout
        self.retries, self.backoff, self.max_retry_wait = retries, backoff, max_retry_wait
        self._model, self._context = model, context_window
        self.streaming = stream
        self._tools_unstreamable = False  # learnt from the server: whole replies when tools are given
        self.info = EngineInfo("remote", model or "", context_window or CLOVER_CONTEXT_WINDOW, None, None,
                               "configured" if context_window else ASSUMED)
        self._resolved = bool(model and context_window)
        self._token_ratio: float | None = None  # the server's prompt count / our estimate, once seen
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    def __repr__(self) -> str:
        key = "set" if self._api_key else "unset"
        return f"RemoteEngine(endpoint={self.url!r}, model={self.info.model!r}, api_key={key})"

    @property
    def window_known(self) -> bool:
        return self.info.context_source != ASSUMED

    @staticmethod
    def _estimate(request: ChatRequest) -> int:
        return estimate_tokens(json.dumps(request.messages, default=str) + json.dumps(request.tools))

    def count_tokens(self, request: ChatRequest) -> int:
        """Prompt tokens, erring high: the estimate scaled to what the server last counted."""
        return math.ceil(self._estimate(request) * (self._token_ratio or 1.0) * COUNT_MARGIN)

    def _calibrate(self, request: ChatRequest, server_count: int) -> None:
        self._token_ratio = server_count / max(1, self._estimate(request))

    def _learn_window(self, tokens: int, source: str) -> None:
        if (tokens, source) != (self.info.context_window, self.info.context_source):
            log.info("%s: context window %d tokens (%s)", self.url, tokens, source)
        self.info = dataclasses.replace(self.info, context_window=tokens, context_source=source)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.aclose()

    # --- HTTP plumbing ---------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        """One client per event loop (its pooled connections belong to that loop)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            timeout = httpx.Timeout(connect=self.connect_timeout, read=self.idle_timeout,
                                    write=self.idle_timeout, pool=self.connect_timeout)
            self._client, self._client_loop = httpx.AsyncClient(timeout=timeout), loop
        return self._client

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream, application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _backoff(self, attempt: int) -> float:
        return min(self.backoff * 2.0 ** attempt, 8.0)

    def _transport_error(self, exc: httpx.TransportError, what: str) -> tuple[EngineError, bool]:
        """(error to raise, worth retrying) for a failure before the response started."""
        host = urlsplit(self.base).hostname
        cause, text = exc.__cause__ or exc.__context__, str(exc)
        if isinstance(exc, httpx.ConnectTimeout):
            return EngineError(f"no connection to {self.url} within {self.connect_timeout:g} s: "
                               "check the host, port and any firewall in between"), True
        if isinstance(exc, httpx.ReadTimeout):
            return EngineError(f"{self.url} accepted the connection but sent nothing for "
                               f"{self.idle_timeout:g} s ({what}): the server may be stuck or overloaded; "
                               "check its log, or raise idle_timeout"), False
        if isinstance(cause, ssl.SSLError) or "SSL" in text or "CERTIFICATE" in text.upper():
            return EngineError(f"TLS handshake with {host} failed ({self._scrub(text)[:200]}): check the "
                               "server's certificate, or use http:// if it does not speak TLS"), False
        if "name or service not known" in text.lower() or "name resolution" in text.lower() \
                or "nodename nor servname" in text.lower() or "getaddrinfo" in text.lower():
            return EngineError(f"cannot resolve the host name {host!r}: check the endpoint URL "
                               f"({self.url})"), False
        if isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)):
            return _Dropped(f"{self.url} closed the connection without answering {what}: check the "
                            "server's log"), False
        if isinstance(exc, httpx.ConnectError):
            return EngineError(f"cannot connect to {self.url} ({self._scrub(text)[:120] or 'refused'}): "
                               "is the server running and listening on that host and port?"), True
        return EngineError(f"{what} at {self.url} failed: {type(exc).__name__} "
                           f"{self._scrub(text)[:200]}: check the server's log"), False

    def _status_error(self, status: int, body: str, what: str) -> EngineError:
        message, error = _server_error(body)
        limits = rejection_limits(message, error) if status == 400 else None
        said = self._scrub(message)
        said = f" (server said: {said})" if said else ""
        if limits is not None:
            window, prompt = limits
            return ContextOverflow(f"{self.url} refused the request as too long for its context window{said}: "
                                   f"{raise_window_hint(prompt or 0)}", prompt_tokens=prompt, window=window)
        if status in (401, 403):
            hint = ("no API key is set: pass --api-key or set CLOVER_API_KEY / OPENAI_API_KEY"
                    if not self._api_key else "check the key in --api-key, CLOVER_API_KEY or OPENAI_API_KEY")
            return EngineError(f"{self.url} refused the request (HTTP {status}){said}: {hint}")
        if status == 404:
            return EngineError(f"{what} at {self.url}: HTTP 404 Not Found{said}: check that the endpoint "
                               "is the API root (e.g. http://host:8000/v1) and the model name "
                               f"({self.info.model or 'unset'}) is one the server serves")
        if status in RETRY_STATUS:
            return EngineError(f"{self.url} is busy (HTTP {status}) after {self.retries + 1} tries{said}: "
                               "try again later")
        if status >= 500:
            return EngineError(f"{self.url} failed (HTTP {status}){said}: check the server's log")
        return EngineError(f"{self.url} rejected the request (HTTP {status}){said}")

    @asynccontextmanager
    async def _open(self, method: str, path: str, body: JSONObject | None, what: str
                    ) -> AsyncIterator[httpx.Response]:
        """Send with bounded retries; yield the started response (status < 400)."""
        client, attempt, dropped = self._http(), 0, False
        while True:
            request = client.build_request(method, self.base + path, json=body, headers=self._headers())
            try:
                response = await client.send(request, stream=True)
            except httpx.TransportError as exc:
                error, retry = self._transport_error(exc, what)
                if isinstance(error, _Dropped) and not dropped:
                    dropped = True  # most likely a pooled connection the server had closed: once more, now
                    continue
                if not retry or attempt >= self.retries:
                    raise error from None
                await asyncio.sleep(self._backoff(attempt))
                attempt += 1
                continue
            try:
                if response.status_code in RETRY_STATUS and attempt < self.retries:
                    wait = _retry_after(response)
                    await asyncio.sleep(min(self.max_retry_wait, self._backoff(attempt) if wait is None else wait))
                    attempt += 1
                    continue
                if response.status_code >= 400:
                    text = await self._read_error_body(response)
                    raise self._status_error(response.status_code, text, what)
                yield response
                return
            finally:
                await response.aclose()

    @staticmethod
    async def _read_error_body(response: httpx.Response) -> str:
        try:
            return (await response.aread()).decode("utf-8", "replace")[:4000]
        except httpx.HTTPError:
            return ""

    # --- model metadata ------------------------------------------------------------------

    async def connect(self) -> EngineInfo:
        """Ask GET /models for the model name (if not given) and its context window; when the
        listing does not say the window, the server's own metadata routes."""
        if self._resolved:
            return self.info
        try:
            async with self._open("GET", "/models", None, "listing models") as response:
                text = (await response.aread()).decode("utf-8", "replace")
        except EngineError:
            if self._model is None:
                raise
            self._resolved = True  # a named model works without the listing
            await self._probe_window()
            return self.info
        try:
            models = jsonsafe.loads(text).get("data") or []
        except (ValueError, AttributeError):
            raise EngineError(f"{self.url}/models did not answer with JSON: is the endpoint an "
                              "OpenAI-compatible API root (e.g. http://host:8000/v1)?") from None
        if self._model is None and not models:
            raise EngineError(f"{self.url} serves no models: pass --model NAME")
        first = {} if self._model or not models else models[0]
        entry = next((m for m in models if isinstance(m, dict) and m.get("id") == self._model), first)
        self.info = dataclasses.replace(self.info, model=self._model or str(entry.get("id")),
                                        block_size=entry.get("block_size"), threshold=entry.get("threshold"),
                                        policy=policy if isinstance(policy := entry.get("policy"), str) else None)
        self._resolved = True
        listed = field_window(entry)
        if listed is not None and not self._context:  # a window given to the constructor wins
            self._learn_window(listed[0], f"GET /v1/models {listed[1]}")
        await self._probe_window()
        return self.info

    async def _probe_window(self) -> None:
        found = None if self.window_known else await self._window_from_routes()
        if found is not None:
            self._learn_window(*found)

    async def _window_from_routes(self) -> tuple[int, str] | None:
        """llama.cpp (/props), SGLang (/get_model_info), Ollama (/api/show), in that order;
        a route a server lacks costs one quick 404."""
        if (tokens := props_window(await self._metadata("GET", "/props"))) is not None:
            return tokens, "GET /props n_ctx"
        if (found := field_window(await self._metadata("GET", "/get_model_info"))) is not None:
            return found[0], f"GET /get_model_info {found[1]}"
        if self.info.model:
            return ollama_window(await self._metadata("POST", "/api/show", {"model": self.info.model}))
        return None

    async def _metadata(self, method: str, route: str, body: JSONObject | None = None) -> JSON:
        """A server route's JSON, or None on any failure (routes are optional)."""
        try:
            response = await self._http().request(method, _server_root(self.base) + route, json=body,
                                                  headers=self._headers(), timeout=self.connect_timeout)
            return jsonsafe.loads(response.text) if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None

    # --- streaming -------------------------------------------------------------------

    async def stream(self, request: ChatRequest) -> AsyncGenerator[Block, None]:
        await self.connect()
        sized = self._sized(request)
        try:
            async for block in self._stream_sized(sized):
                yield block
        except ContextOverflow as exc:  # refused before any block: learn the numbers, ask once more
            async for block in self._stream_sized(self._resized(sized, exc)):
                yield block

    def _sized(self, request: ChatRequest) -> ChatRequest:
        """The request with max_tokens capped to the room its prompt leaves in the window."""
        if not self.window_known:
            return request
        prompt = self.count_tokens(request)
        room = self.info.context_window - prompt
        if room >= request.max_tokens:
            return request
        if room >= MIN_REPLY_ROOM:
            return dataclasses.replace(request, max_tokens=room)
        if self._token_ratio is not None:  # an estimate tied to the server's own count: believe it
            raise no_room(f"the prompt for {self.url}", prompt, self.info.context_window,
                          self.info.context_source)
        return request  # a bare estimate: the server counts, and a refusal tells us its numbers

    def _resized(self, request: ChatRequest, refusal: ContextOverflow) -> ChatRequest:
        """The request again after a context refusal, with a reply that fits what the server said."""
        if refusal.window is not None and refusal.window != self.info.context_window:
            self._learn_window(refusal.window, REJECTED_SOURCE)
        if refusal.prompt_tokens is not None:
            self._calibrate(request, refusal.prompt_tokens)
        if refusal.window is None and not self.window_known:
            raise refusal  # it said too long, but not how long it may be
        prompt = refusal.prompt_tokens or self.count_tokens(request)
        room = self.info.context_window - prompt
        if room < MIN_REPLY_ROOM:
            counted = "as the server counted it" if refusal.prompt_tokens else "estimated"
            raise no_room(f"the prompt for {self.url} ({counted})", prompt, self.info.context_window,
                          self.info.context_source) from None
        return dataclasses.replace(request, max_tokens=min(request.max_tokens, room))

    async def _stream_sized(self, request: ChatRequest) -> AsyncIterator[Block]:
        whole = not self.streaming or bool(request.tools and self._tools_unstreamable)
        fold = ChunkFold(time.perf_counter())
        try:
            async for block in self._attempt(request, fold, stream=not whole):
                yield block
        except EngineError as exc:
            if whole or not request.tools or fold.events or not (fold.started or isinstance(exc, _Dropped)):
                raise
            # Some servers (llama-cpp-python) cannot stream tool calls: they drop the request, or
            # end the response before its first event. Ask again for a whole reply, from now on.
            log.warning("%s cannot stream replies with tools; asking for whole replies", self.url)
            self._tools_unstreamable = True
            fold = ChunkFold(fold.start)
            async for block in self._attempt(request, fold, stream=False):
                yield block
        if fold.prompt_tokens:
            self._calibrate(request, fold.prompt_tokens)

    async def _attempt(self, request: ChatRequest, fold: ChunkFold, *, stream: bool) -> AsyncIterator[Block]:
        body = request_json(request, self.info.model, stream=stream)
        async with self._open("POST", "/chat/completions", body, "the chat request") as response:
            fold.started = True
            try:
                if response.headers.get("content-type", "").startswith("application/json"):
                    yield fold.completion(chunk_json_object(await response.aread(), self.url))
                    return
                async for block in self._sse_blocks(response, fold):
                    yield block
            except httpx.ReadTimeout:
                raise EngineError(f"the stream from {self.url} stalled: nothing for {self.idle_timeout:g} s "
                                  f"after {fold.emitted} blocks (the partial reply was kept); check the "
                                  "server, or raise idle_timeout") from None
            except httpx.TransportError as exc:
                raise EngineError(f"the stream from {self.url} was cut after {fold.emitted} blocks "
                                  f"({type(exc).__name__}; the partial reply was kept): check the server "
                                  "and the network") from None

    async def _sse_blocks(self, response: httpx.Response, fold: ChunkFold) -> AsyncIterator[Block]:
        reader, done = SSEReader(), False
        async for line in response.aiter_lines():  # read to the end: the connection goes back to the pool
            data = reader.feed(line)
            if data is None or done:
                continue
            fold.events += 1
            if data.strip() == "[DONE]":
                done = True
                continue
            for block in fold.chunk(chunk_json_object(data.encode(), self.url)):
                yield block
        for block in fold.end(done, self.url):
            yield block


class _Dropped(EngineError):
    """The server closed the connection before any response."""



async def _probe(endpoint: str, api_key: str | None, model: str | None) -> tuple[int | None, str]:
    engine = RemoteEngine(endpoint, api_key=api_key, model=model, retries=0, connect_timeout=5.0)
    try:
        info = await engine.connect()
    finally:
        await engine.aclose()
    if engine.window_known:
        return info.context_window, info.context_source
    return None, "not in /v1/models, /props, /get_model_info or /api/show; learned from the first refusal"


def probe_context_window(endpoint: str, api_key: str | None = None, model: str | None = None
                         ) -> tuple[int | None, str]:
    """(tokens, where that came from) for an endpoint's context window, or (None, why not);
    raises EngineError when the server cannot be reached. For `clover-code doctor`."""
    return asyncio.run(_probe(endpoint, api_key, model))
