"""Engines turn a chat request into a stream of committed blocks.

This module holds the types every engine and every consumer share. It must stay
cheap to import: no torch, no transformers, no httpx at module level.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from clover_code.errors import UserError
from clover_code.jsonsafe import JSONObject
from clover_code.tokens import estimate_tokens as estimate_tokens  # re-exported: an engine's own estimate

CLOVER_CONTEXT_WINDOW = 131_072
DEFAULT_BLOCK_SIZE = 32
DEFAULT_THRESHOLD = 0.95


class EngineError(UserError):
    """An engine failed in a way the user can act on; the message says what to check."""


@dataclass(frozen=True)
class ToolCall:
    """A structured tool call: from a server's `tool_calls`, or parsed from model text."""

    id: str
    name: str
    arguments: str  # raw JSON text, validated by the agent against the tool's schema


@dataclass(frozen=True)
class Block:
    """One committed block, as it reaches a UI."""

    text: str  # text this block adds (incrementally detokenized)
    tokens: int  # tokens committed
    forward_passes: int | None = None  # model forward passes spent; None when a server does not say
    seconds_since_start: float = 0.0  # when it committed, counted from the request's start
    ms: float | None = None  # wall time spent on this block
    index: int = 0  # block number within the request
    tool_calls: tuple[ToolCall, ...] = ()  # structured calls, when a server parsed them
    # "stop" | "length" | "tool_calls" | "cancelled" | None; a server may send others, so a str
    finish: str | None = None
    prompt_tokens: int | None = None  # set on the last block when known
    # of prompt_tokens, those served from the engine's prefix cache (the rest were encoded);
    # set with prompt_tokens when the engine says (OpenAI usage: prompt_tokens_details.cached_tokens)
    prompt_reused: int | None = None
    stop_sequence: str | None = None  # the request's stop string that ended the reply, when known


@dataclass(frozen=True)
class DenoiseStep:
    """One denoising step inside the current block, for a live view of it resolving."""

    block_index: int
    step: int  # 1-based forward pass within this block
    resolved: tuple[bool, ...]  # per position of the block: committed yet?
    newly: tuple[int, ...]  # positions committed by this step


@dataclass
class ChatRequest:
    messages: list[JSONObject]  # OpenAI-style: role, content, tool_calls, tool_call_id
    tools: list[JSONObject] = field(default_factory=list)  # OpenAI function schemas
    max_tokens: int = 4096
    temperature: float = 0.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    threshold: float | None = None  # None: the engine's default
    seed: int | None = None
    # "auto": the model may call a tool; "required": the reply opens with a call (to narrow it to
    # one tool, send only that tool)
    tool_choice: str = "auto"
    # Whose conversation this is (a client's session id): the prefix cache keeps each person's
    # state, and a remote engine passes it on for session affinity. None: nobody in particular.
    session: str | None = None
    policy: str | None = None  # decoding policy, NAME[:KNOB] (engine/policies.py); None: the engine's
    # Called on the event loop thread after every denoising step (embedded engine only).
    on_step: Callable[[DenoiseStep], None] | None = None


@dataclass(frozen=True)
class EngineInfo:
    name: str  # "embedded" | "remote" | "scripted"
    model: str  # model name or checkpoint path
    context_window: int = CLOVER_CONTEXT_WINDOW
    block_size: int | None = DEFAULT_BLOCK_SIZE  # None when a server does not say
    threshold: float | None = DEFAULT_THRESHOLD
    # Where context_window came from: "engine" (the engine's own config), or for a server the
    # request that said it, or engine.window.ASSUMED while the server has not said.
    context_source: str = "engine"
    # count_tokens renders the request with the model's own chat template and tokenizer, so it
    # is the count the model will see; False: an estimate (a user is told which it is).
    exact_count: bool = False
    # The only tools the model was trained to call (a checkpoint's `clover_trained_tools`): the
    # agent offers no others. None: any tool.
    trained_tools: tuple[str, ...] | None = None
    policy: str | None = None  # the decoding policy, NAME:KNOB (engine/policies.py); None when not said


@runtime_checkable
class Engine(Protocol):
    info: EngineInfo

    def stream(self, request: ChatRequest) -> AsyncGenerator[Block, None]:
        """Yield each block the moment it commits. Closing the generator (aclose) cancels."""
        ...

    def count_tokens(self, request: ChatRequest) -> int:
        """Prompt tokens this request would take (exact when a tokenizer is at hand)."""
        ...

    async def aclose(self) -> None: ...


_ENGINES = {
    "embedded": "clover_code.engine.embedded.engine:EmbeddedEngine",
    "remote": "clover_code.engine.wire.remote:RemoteEngine",
    "scripted": "clover_code.engine.scripted:ScriptedEngine",
}


def make_engine(name: str, **options: object) -> Engine:
    """Build an engine by name; heavy modules load only for the engine chosen. An option the
    engine does not take is an EngineError naming it (a misspelt option never disappears)."""
    try:
        target = _ENGINES[name]
    except KeyError:
        known = ", ".join(sorted(_ENGINES))
        raise EngineError(f"unknown engine {name!r}; choose one of: {known}") from None
    module_name, _, class_name = target.partition(":")
    cls: type[Engine] = getattr(importlib.import_module(module_name), class_name)
    check_options(name, cls, options)
    return cls(**options)


def check_options(name: str, cls: type, options: dict[str, object]) -> None:
    """EngineError for any option `cls`'s constructor does not take."""
    params = inspect.signature(cls).parameters
    takes = sorted(p for p, v in params.items() if v.kind in (v.POSITIONAL_OR_KEYWORD, v.KEYWORD_ONLY))
    unknown = sorted(set(options) - set(takes))
    if unknown:
        raise EngineError(f"the {name} engine has no option {', '.join(map(repr, unknown))}; "
                          f"it takes: {', '.join(takes)}")
