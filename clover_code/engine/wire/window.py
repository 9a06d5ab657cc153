"""A server's context window: where each kind of server states it, how a rejected request
states it, and the error for a prompt that leaves no room for a reply.

Local servers start with small windows (llama-cpp-python 2,048 tokens, Ollama 4,096) and each
says so somewhere else: `/v1/models` (vLLM `max_model_len`, SGLang, `clover-code serve`),
`/props` (llama.cpp `default_generation_settings.n_ctx`), `/get_model_info` (SGLang),
`/api/show` (Ollama), or only in the HTTP 400 that refuses an over-long request.
Pure functions over parsed JSON and text: standard library only, cheap to import.
"""

from __future__ import annotations

import re

from clover_code.engine import EngineError
from clover_code.jsonsafe import JSON

MODEL_FIELDS = ("context_window", "max_model_len", "context_length", "max_context_length", "n_ctx")
OLLAMA_DEFAULT_NUM_CTX = 4096  # what Ollama runs a model with unless num_ctx says otherwise
ASSUMED = "assumed: the server has not said"

# Where each server takes its window from; a message naming the wrong flag costs the user a search.
SERVER_FLAGS = (
    ("llama.cpp", "-c/--ctx-size"),
    ("llama-cpp-python", "--n_ctx"),
    ("vLLM", "--max-model-len"),
    ("SGLang", "--context-length"),
    ("Ollama", "the num_ctx option or OLLAMA_CONTEXT_LENGTH"),
)

_NUMBER = r"(\d[\d,]*)"
# "This model's maximum context length is 2048 tokens" (OpenAI, vLLM, llama-cpp-python's server),
# "... maximum context length of 2048 tokens" (SGLang), "exceed context window of 2048"
# (llama-cpp-python), "exceeds the available context size (2048 tokens)" (llama.cpp).
_WINDOW_PATTERNS = (
    rf"maximum context length (?:is|of) {_NUMBER}",
    rf"context window (?:is|of) {_NUMBER}",
    rf"context size \({_NUMBER} tokens\)",
    rf"context (?:length|size) (?:is|of) {_NUMBER}",
)
# "(2277 in the messages, 4096 in the completion)", "your request has 2277 input tokens",
# "2277 tokens from the input messages", "request (2277 tokens) exceeds", "Requested tokens (2277)".
_PROMPT_PATTERNS = (
    rf"{_NUMBER} in the messages",
    rf"has {_NUMBER} input tokens",
    rf"{_NUMBER} tokens from the input",
    rf"request \({_NUMBER} tokens\)",
    rf"requested tokens \({_NUMBER}\)",
)
_CONTEXT_WORDS = ("context size", "context length", "context window", "context_length_exceeded",
                  "exceed_context_size")


class ContextOverflow(EngineError):
    """A prompt that leaves no room for a reply in the context window. The message names
    both numbers and the server flag that raises the window."""

    def __init__(self, message: str, *, prompt_tokens: int | None = None, window: int | None = None):
        super().__init__(message)
        self.prompt_tokens, self.window = prompt_tokens, window


# --- where servers state their window ----------------------------------------------------

def _positive_int(value: JSON) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def field_window(data: JSON, fields: tuple[str, ...] = MODEL_FIELDS) -> tuple[int, str] | None:
    """(tokens, field name) from the first known field of a JSON object or its `meta`."""
    if not isinstance(data, dict):
        return None
    for source in (data, data.get("meta")):
        if isinstance(source, dict):
            for name in fields:
                if (tokens := _positive_int(source.get(name))) is not None:
                    return tokens, name
    return None


def props_window(data: JSON) -> int | None:
    """llama.cpp's GET /props: the window every slot runs with."""
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    nested = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _positive_int(nested) or _positive_int(data.get("n_ctx"))


def ollama_window(data: JSON) -> tuple[int, str] | None:
    """Ollama's POST /api/show: the model's num_ctx parameter, else Ollama's default (never
    more than the model was trained for). Ollama cuts an over-long prompt silently, so the
    model's trained length would be the wrong number to plan with."""
    if not isinstance(data, dict):
        return None
    params = data.get("parameters")
    if isinstance(params, str):
        for line in params.splitlines():
            name, _, value = line.strip().partition(" ")
            if name == "num_ctx" and value.strip().isdigit():
                return int(value.strip()), "POST /api/show num_ctx"
    info = data.get("model_info")
    if not isinstance(info, dict):
        return None
    trained = next((_positive_int(v) for k, v in info.items() if k.endswith(".context_length")), None)
    if trained is None:
        return None
    return min(trained, OLLAMA_DEFAULT_NUM_CTX), f"Ollama's default num_ctx; the model allows {trained:,}"


# --- what a rejection says ---------------------------------------------------------------

def _first_number(patterns: tuple[str, ...], text: str) -> int | None:
    for pattern in patterns:
        match = re.search(pattern, text, re.IGNORECASE)
        if match:
            return int(match.group(1).replace(",", "")) or None
    return None


def rejection_limits(message: str, error: JSON = None) -> tuple[int | None, int | None] | None:
    """(window, prompt tokens) from a 400's message and error object, either None when not
    said; None when the rejection is not about the context window at all."""
    error = error if isinstance(error, dict) else {}
    window = _positive_int(error.get("n_ctx")) or _first_number(_WINDOW_PATTERNS, message)
    prompt = _positive_int(error.get("n_prompt_tokens")) or _first_number(_PROMPT_PATTERNS, message)
    about_context = window is not None or any(w in message.lower() for w in _CONTEXT_WORDS) or \
        str(error.get("type", "")) == "exceed_context_size_error"
    return (window, prompt) if about_context else None


# --- the error a user can act on -----------------------------------------------------------

def suggested_window(prompt_tokens: int) -> int:
    """A window with room for the prompt, a full reply and some conversation: a power of two."""
    size = 8192
    while size < prompt_tokens + 4096:
        size *= 2
    return size


def raise_window_hint(prompt_tokens: int) -> str:
    flags = "; ".join(f"{server} {flag}" for server, flag in SERVER_FLAGS)
    return (f"restart the server with a context window of at least {suggested_window(prompt_tokens):,} "
            f"tokens ({flags})")


def no_room(what: str, prompt_tokens: int, window: int, source: str) -> ContextOverflow:
    """`what` (e.g. "the system prompt and tool descriptions") cannot fit with any reply."""
    return ContextOverflow(
        f"{what}: {prompt_tokens:,} tokens, but the context window is {window:,} tokens ({source}), "
        f"which leaves no room for a reply: {raise_window_hint(prompt_tokens)}",
        prompt_tokens=prompt_tokens, window=window)
