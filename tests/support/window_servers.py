"""OpenAI-compatible servers with small context windows, on 127.0.0.1, each stating its window
the way one real server does and refusing an over-long request with that server's HTTP 400:

- "llama.cpp": GET /props `default_generation_settings.n_ctx`; /v1/models carries only
  `meta.n_ctx_train` (the trained length, not the window); refusal `exceed_context_size_error`
  with `n_prompt_tokens` and `n_ctx`.
- "vllm": GET /v1/models `max_model_len`; refusal "This model's maximum context length is ...".
- "silent": says nothing until it refuses, in the words llama-cpp-python's server uses.
- "sglang": GET /get_model_info `context_length`; "ollama": POST /api/show `num_ctx` (these two
  only for probing: they refuse like "silent").

The server counts prompt tokens with a tokenizer of its own (4 bytes a token over the
messages and tools), so clover-code's estimates are checked against numbers they did not make.
Requests with tools get the next scripted reply; requests without (summaries) a summary.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Literal

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from tests.support.serving import delta_chunk, serve_app, sse_body  # noqa: F401  (serve_app: for the tests' import)

Style = Literal["llama.cpp", "vllm", "silent", "sglang", "ollama"]
MODEL = "small-model"


def server_tokens(body: dict) -> int:
    return math.ceil(len(json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))) / 4)


@dataclass
class Seen:
    """One chat request as the server saw it."""

    prompt_tokens: int
    max_tokens: int
    tools: bool
    refused: bool


@dataclass
class WindowServer:
    style: Style
    window: int
    replies: list[dict | str] = field(default_factory=list)  # a tool call {"name", "arguments"} or text
    seen: list[Seen] = field(default_factory=list)

    def app(self) -> Starlette:
        routes = [Route("/v1/models", self.models), Route("/v1/chat/completions", self.chat, methods=["POST"])]
        if self.style == "llama.cpp":
            routes.append(Route("/props", self.props))
        elif self.style == "sglang":
            routes.append(Route("/get_model_info", self.model_info))
        elif self.style == "ollama":
            routes.append(Route("/api/show", self.show, methods=["POST"]))
        return Starlette(routes=routes)

    async def model_info(self, request: Request) -> JSONResponse:
        return JSONResponse({"model_path": "/models/small", "is_generation": True, "context_length": self.window})

    async def show(self, request: Request) -> JSONResponse:
        if (await request.json()).get("model") != MODEL:
            return JSONResponse({"error": "model not found"}, status_code=404)
        return JSONResponse({"parameters": f"stop \"<|im_end|>\"\nnum_ctx {self.window}",
                             "model_info": {"qwen3.context_length": 40960}})

    async def models(self, request: Request) -> JSONResponse:
        entry: dict = {"id": MODEL, "object": "model", "owned_by": "test"}
        if self.style == "vllm":
            entry["max_model_len"] = self.window
        elif self.style == "llama.cpp":
            entry["meta"] = {"n_ctx_train": 131072, "n_params": 135_000_000}
        return JSONResponse({"object": "list", "data": [entry]})

    async def props(self, request: Request) -> JSONResponse:
        return JSONResponse({"default_generation_settings": {"n_ctx": self.window, "n_predict": -1},
                             "total_slots": 1})

    async def chat(self, request: Request):
        body = await request.json()
        prompt, max_tokens = server_tokens(body), body["max_tokens"]
        refused = prompt + max_tokens > self.window
        self.seen.append(Seen(prompt, max_tokens, bool(body.get("tools")), refused))
        if refused:
            return JSONResponse(self.refusal(prompt, max_tokens), status_code=400)
        reply = self.replies.pop(0) if body.get("tools") else "SUMMARY: the user asked to read the notes."
        return StreamingResponse(iter(self.chunks(reply, prompt)), media_type="text/event-stream")

    def refusal(self, prompt: int, max_tokens: int) -> dict:
        if self.style == "llama.cpp":
            return {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": prompt,
                              "n_ctx": self.window, "message": f"request ({prompt} tokens) exceeds the "
                              f"available context size ({self.window} tokens), try increasing it"}}
        said = (f"This model's maximum context length is {self.window} tokens. However, you requested "
                f"{prompt + max_tokens} tokens ({prompt} in the messages, {max_tokens} in the completion). "
                "Please reduce the length of the messages or completion.")
        if self.style == "vllm":
            return {"object": "error", "message": said, "type": "BadRequestError", "param": None, "code": 400}
        return {"error": {"message": said, "type": "invalid_request_error", "param": "messages",
                          "code": "context_length_exceeded"}}

    @staticmethod
    def chunks(reply: dict | str, prompt: int) -> list[bytes]:
        usage = {"choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": 20,
                                          "total_tokens": prompt + 20}}
        if isinstance(reply, str):
            return sse_body(delta_chunk(reply), delta_chunk("", "stop"), usage, "[DONE]")
        call = {"index": 0, "id": f"call_{id(reply)}", "type": "function",
                "function": {"name": reply["name"], "arguments": json.dumps(reply["arguments"])}}
        calls = {"choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]}
        return sse_body(calls, delta_chunk("", "tool_calls"), usage, "[DONE]")
