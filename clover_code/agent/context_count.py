"""How many tokens the next request carries, by part, and whether that is the model's own count.

Where the engine counts with the model's own chat template and tokenizer (EngineInfo.exact_count)
the total is that count, and so is each part: what the part adds to a one-message prompt, as
the template frames it (the system prompt, the tool descriptions, each message by who wrote
it); what the parts leave of the total is the template's own markup. Elsewhere every figure
is an estimate and says so: the total is the conversation's own (Conversation.tokens: a
server's last count plus an estimate of what came since), the parts are plain estimates of
their text, never scaled to that total (scaled, they moved with every new server count).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from clover_code.agent.context import Conversation
from clover_code.agent.instructions import skills_section
from clover_code.engine import ChatRequest, Engine
from clover_code.jsonsafe import JSONObject
from clover_code.tokens import estimate_tokens

SYSTEM, SKILLS, TOOLS = "system prompt", "skills listed", "tool descriptions"
BY_ROLE = {"user": "your messages", "assistant": "replies", "tool": "tool results"}
PARTS = (SYSTEM, SKILLS, TOOLS, *BY_ROLE.values())
MARKUP = "chat template"  # what the template itself adds: role markers, the reply's opening
# A message every chat template renders alone (some refuse a prompt without a user message).
_PROBE: JSONObject = {"role": "user", "content": "."}


@dataclass(frozen=True)
class ContextPart:
    name: str
    tokens: int


@dataclass(frozen=True)
class ContextCount:
    tokens: int
    exact: bool  # the model's tokenizer counted the total; False: an estimate
    parts: tuple[ContextPart, ...] = ()
    parts_exact: bool = False  # the tokenizer counted the parts too


def count_context(conversation: Conversation, engine: Engine | None) -> ContextCount:
    """The next request's size: the model's own count where the engine has it, else the
    conversation's estimate."""
    if engine is not None and engine.info.exact_count:
        try:
            request = ChatRequest(conversation.request_messages(), conversation.tools)
            return ContextCount(engine.count_tokens(request), True)
        except Exception:  # a template that cannot render this conversation: estimated, as Conversation.count does
            pass
    return ContextCount(conversation.tokens(engine), False)


def count_parts(conversation: Conversation, engine: Engine | None) -> ContextCount:
    """count_context, with what fills it part by part."""
    total = count_context(conversation, engine)
    if total.exact and engine is not None:
        try:
            return ContextCount(total.tokens, True, _counted_parts(conversation, engine, total.tokens), True)
        except Exception:  # a template that refuses a part alone: the parts are estimated
            pass
    return ContextCount(total.tokens, total.exact, _estimated_parts(conversation))


def _counted_parts(conversation: Conversation, engine: Engine, total: int) -> tuple[ContextPart, ...]:
    def count(messages: list[JSONObject], tools: list[JSONObject] | None = None) -> int:
        return engine.count_tokens(ChatRequest(messages, tools or []))

    system: list[JSONObject] = [{"role": "system", "content": conversation.system}] if conversation.system else []
    probe, with_system = count([_PROBE]), count([*system, _PROBE])
    tokens = dict.fromkeys(PARTS, 0)
    tokens[SYSTEM] = with_system - probe
    listing = skills_section(conversation.system)
    if listing:  # the system prompt's part that is the skills' listing, counted apart
        without: list[JSONObject] = [{"role": "system", "content": conversation.system.replace(listing, "")}]
        tokens[SKILLS] = with_system - count([*without, _PROBE])
        tokens[SYSTEM] -= tokens[SKILLS]
    tokens[TOOLS] = count([*system, _PROBE], conversation.tools) - with_system if conversation.tools else 0
    for message in conversation.messages:
        tokens[_part_of(message)] += count([_PROBE, message]) - probe
    parts = [ContextPart(name, n) for name, n in tokens.items()]
    markup = total - sum(tokens.values())
    return (*parts, ContextPart(MARKUP, markup)) if markup > 0 else tuple(parts)


def _estimated_parts(conversation: Conversation) -> tuple[ContextPart, ...]:
    tokens = dict.fromkeys(PARTS, 0)
    listing = skills_section(conversation.system)
    tokens[SKILLS] = estimate_tokens(listing) if listing else 0
    tokens[SYSTEM] = estimate_tokens(conversation.system) - tokens[SKILLS]
    tokens[TOOLS] = _estimate(conversation.tools) if conversation.tools else 0
    for message in conversation.messages:
        tokens[_part_of(message)] += _estimate(message)
    return tuple(ContextPart(name, n) for name, n in tokens.items())


def _part_of(message: JSONObject) -> str:
    role = message.get("role")
    return BY_ROLE.get(role, BY_ROLE["assistant"]) if isinstance(role, str) else BY_ROLE["assistant"]


def _estimate(value: object) -> int:
    return estimate_tokens(json.dumps(value, ensure_ascii=False))
