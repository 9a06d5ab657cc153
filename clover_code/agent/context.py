"""The conversation as the model sees it, its size in tokens, and compaction.

Messages are built only from agent events (`Conversation.apply`), so a session log
replayed through `apply` rebuilds exactly the conversation the model saw. A reply's
text, tool calls and results are gathered in a draft while the model writes and tools run;
the draft becomes an assistant message plus one tool message per call when the next
request, user message or turn end needs it. The reply's text is the agent's parse of it
(TextDelta events, plus the markup of malformed calls so the model sees what it got wrong):
never parsed again here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from clover_code.agent.events import (
    Attachment,
    BlockCommitted,
    Cleared,
    Compacted,
    Event,
    HookRan,
    Redone,
    Rewound,
    TextDelta,
    ToolCallParsed,
    ToolFinished,
    TurnFinished,
    UserMessage,
    UserShell,
)
from clover_code.agent.reply import ReplyReader
from clover_code.engine import ChatRequest, Engine, EngineError, ToolCall
from clover_code.jsonsafe import JSON, JSONObject
from clover_code.tokens import estimate_tokens

SUMMARY_HEADER = "Summary of the earlier part of this session ({n} messages were dropped to fit the context window):"
SUMMARY_SYSTEM = (
    "You summarise a coding session so it can continue with less context. Write a concise summary: "
    "what the user asked, what was done (files read and changed, commands run and their outcome), "
    "decisions made, and what is still open. Plain prose and short lists; no tool calls."
)
NOT_RUN = "(not run: the turn ended before this call ran)"
KEEP_FRACTION = 0.3  # of the window, kept verbatim at the end when compacting
SUMMARY_TOKENS = 1024


@dataclass(frozen=True)
class _Saved:
    """The conversation as it stood when a user turn began: what a rewind goes back to."""

    messages: list[JSONObject]
    dropped: int  # how many messages compaction had removed then
    compactions: int


@dataclass(frozen=True)
class Turn:
    """A user turn a rewind can go back to."""

    index: int  # counting every UserMessage of the session from 0
    text: str


@dataclass
class _Undone:
    """What a rewind took away, for redo: the later turns and the whole state before it."""

    turns: list[tuple[Turn, _Saved]]
    messages: list[JSONObject]
    dropped: list[JSONObject]
    compactions: list[Compacted]
    clears: list[int]
    span: tuple[int, int]  # the turns it took away: from the one rewound to, to the count before


@dataclass
class _Draft:
    """One model reply being written: its text, calls in order, and results as they come."""

    content: list[str] = field(default_factory=list)  # visible text and malformed calls' markup, in order
    calls: list[tuple[ToolCall, bool]] = field(default_factory=list)  # (call, well-formed)
    results: dict[str, str] = field(default_factory=dict)  # call id -> output
    tokens: int = 0


def message_tokens(messages: list[JSONObject]) -> int:
    return estimate_tokens(json.dumps(messages, ensure_ascii=False)) if messages else 0


class Conversation:
    def __init__(self, system: str = "", tools: list[JSONObject] | None = None):
        self.system = system
        self.tools = tools or []
        self._messages: list[JSONObject] = []
        self._draft: _Draft | None = None
        self._anchor: tuple[int, int] | None = None  # (messages covered, tokens) from server usage
        self._request_start = 0
        self.compactions: list[Compacted] = []
        self.dropped: list[JSONObject] = []  # messages compaction removed, oldest first
        # Per user turn, the state before it (rewind), and the states rewinds left (redo).
        self._turns: list[tuple[Turn, _Saved]] = []
        self._clears: list[int] = []  # per /clear, the index of the turn after it
        self._redo: list[_Undone] = []

    # -- building from events ------------------------------------------------------

    def apply(self, event: Event) -> None:
        if isinstance(event, UserMessage):
            self.flush()
            self._turns.append((Turn(len(self._turns), event.text), self._save()))
            self._redo.clear()  # a new turn: what was rewound away is gone for good
            self._messages.append({"role": "user", "content": user_content(event.text, event.attachments)})
        elif isinstance(event, UserShell):
            self.flush()
            self._messages.append({"role": "user", "content": shell_content(event)})
        elif isinstance(event, HookRan) and event.context:
            self.flush()
            self._messages.append({"role": "user", "content": hook_content(event)})
        elif isinstance(event, Rewound):
            self._rewind(event.turn, keep=event.scope == "code")
        elif isinstance(event, Redone):
            self._take_back_rewind()
        elif isinstance(event, BlockCommitted):
            self._on_block(event)
        elif isinstance(event, TextDelta):
            self._open().content.append(event.text)
        elif isinstance(event, ToolCallParsed):
            self._on_call(event)
        elif isinstance(event, ToolFinished):
            self._open().results[event.call.id] = event.output
        elif isinstance(event, Compacted):
            self.flush()
            self._compact(event)
        elif isinstance(event, Cleared):
            self.flush()
            self.dropped.extend(self._messages)
            self._messages = []
            self._anchor = None
            self._clears.append(len(self._turns))
        elif isinstance(event, TurnFinished):
            self.flush()

    # -- rewind ----------------------------------------------------------------------

    @property
    def turn_count(self) -> int:
        """User turns so far: the index the next UserMessage gets."""
        return len(self._turns)

    def turns(self) -> list[Turn]:
        """The turns a rewind can go back to: those since the latest /clear, oldest first."""
        start = self._clears[-1] if self._clears else 0
        return [turn for turn, _ in self._turns[start:]]

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)

    def pending_redo(self) -> list[tuple[int, int]]:
        """The rewinds /redo can take back, oldest first: the turns each took away, as (the
        turn rewound to, the turn count before it); a files-only rewind took none."""
        return [undone.span for undone in self._redo]

    def _save(self) -> _Saved:
        return _Saved(list(self._messages), len(self.dropped), len(self.compactions))

    def _restore(self, saved: _Saved) -> None:
        self._draft = None
        self._messages = list(saved.messages)
        del self.dropped[saved.dropped:]
        del self.compactions[saved.compactions:]
        self._anchor = None  # the server's count was of a conversation that is gone

    def _rewind(self, turn: int, keep: bool = False) -> None:
        """Back to the state before `turn` (`keep`: the files went back, the conversation stays;
        a redo still pairs with it); a turn not (or no longer) known is ignored, so a damaged
        log cannot break its replay."""
        if not 0 <= turn < len(self._turns):
            return
        self.flush()
        count = len(self._turns)
        span = (count, count) if keep else (turn, count)
        self._redo.append(_Undone([] if keep else self._turns[turn:], list(self._messages), list(self.dropped),
                                  list(self.compactions), list(self._clears), span))
        if keep:
            return
        self._restore(self._turns[turn][1])
        self._turns = self._turns[:turn]
        self._clears = [c for c in self._clears if c <= turn]  # a /clear before the turn still stands

    def _take_back_rewind(self) -> None:
        if not self._redo:
            return
        undone = self._redo.pop()
        self._draft = None
        self._turns.extend(undone.turns)
        self._messages, self.dropped, self.compactions = undone.messages, undone.dropped, undone.compactions
        self._clears = undone.clears
        self._anchor = None

    def _open(self) -> _Draft:
        if self._draft is None:
            self._draft = _Draft()
            self._request_start = len(self._messages)
        return self._draft

    def _on_block(self, event: BlockCommitted) -> None:
        block = event.block
        if block.index == 0:
            self.flush()
        draft = self._open()
        draft.tokens += block.tokens
        if block.prompt_tokens is not None:
            self._anchor = (self._request_start + 1, block.prompt_tokens + draft.tokens)

    def _on_call(self, event: ToolCallParsed) -> None:
        draft = self._open()
        draft.calls.append((event.call, event.error is None))
        if event.error is not None:  # well-formed calls go in `tool_calls`; this one stays as written
            draft.content.append(event.markup)

    def flush(self) -> None:
        """Turn the draft into an assistant message and its tool messages."""
        if self._draft is not None:
            self._messages += _render(self._draft)
            self._draft = None

    @property
    def messages(self) -> list[JSONObject]:
        """Every message but the system prompt; a reply still in progress is rendered as it
        stands (calls without results as not run) without closing it."""
        return self._messages + (_render(self._draft) if self._draft is not None else [])

    def request_messages(self) -> list[JSONObject]:
        system = [{"role": "system", "content": self.system}] if self.system else []
        return system + self.messages

    # -- size ------------------------------------------------------------------------

    def tokens(self, engine: Engine | None = None) -> int:
        """Prompt tokens the next request takes: the engine's count, or the server's last
        usage plus an estimate of what came since, whichever is larger (never under-count)."""
        counted = self.count(self.request_messages(), engine)
        if self._anchor is not None:
            covered, used = self._anchor
            counted = max(counted, used + message_tokens(self.messages[covered:]))
        return counted

    def base_tokens(self, engine: Engine | None = None) -> int:
        """What every request carries whatever is dropped: the system prompt and the tools."""
        return self.count([{"role": "system", "content": self.system}] if self.system else [], engine)

    @property
    def counted_by_server(self) -> bool:
        """Whether `tokens()` rests on the engine's own count of an earlier request."""
        return self._anchor is not None

    def count(self, messages: list[JSONObject], engine: Engine | None = None) -> int:
        if engine is not None and hasattr(engine, "count_tokens"):
            try:
                return engine.count_tokens(ChatRequest(messages, self.tools))
            except Exception:  # an engine that cannot count falls back to the estimate
                pass
        return message_tokens(messages) + message_tokens(self.tools)

    def tokens_after_compaction(self, dropped: int, summary: str, engine: Engine | None = None) -> int:
        system = [{"role": "system", "content": self.system}] if self.system else []
        return self.count(system + [summary_message(dropped, summary)] + self.messages[dropped:], engine)

    # -- compaction -------------------------------------------------------------------

    def compaction_split(self, keep_tokens: int) -> int:
        """How many leading messages to drop so the rest fits `keep_tokens`, never splitting a
        reply from its tool results and always keeping the last message."""
        messages = self.messages
        keep_from, size = len(messages), 0
        for i in range(len(messages) - 1, -1, -1):
            size += message_tokens([messages[i]])
            if size > keep_tokens and keep_from < len(messages):
                break
            if messages[i]["role"] != "tool":
                keep_from = i
        return keep_from

    def _compact(self, event: Compacted) -> None:
        n = event.dropped_messages
        self.dropped.extend(self._messages[:n])
        self._messages = [summary_message(n, event.summary)] + self._messages[n:]
        self._anchor = None
        self.compactions.append(event)


def _render(draft: _Draft) -> list[JSONObject]:
    message: JSONObject = {"role": "assistant", "content": "".join(draft.content).strip()}
    good = [c for c, ok in draft.calls if ok]
    if good:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in good
        ]
    results = [{"role": "tool", "tool_call_id": c.id, "name": c.name, "content": draft.results.get(c.id, NOT_RUN)}
               for c, _ in draft.calls]
    return [message, *results]


def user_content(text: str, attachments: tuple[Attachment, ...] = ()) -> str:
    """What the model reads of a user message: the text, then each attached file."""
    parts = [text]
    for item in attachments:
        if not item.content:
            parts.append(f"[@{item.path}: {item.note}]")
        else:
            kind = "folder" if item.note == "folder listing" else "file"
            parts.append(f'<{kind} path="{item.path}">\n{item.content}\n</{kind}>')
    return "\n\n".join(parts)


def hook_content(event: HookRan) -> str:
    """What a hook gave the model, marked as the hook's (the user's program), not the user's words."""
    return f'<hook event="{event.event}">\n{event.context}\n</hook>'


def shell_content(event: UserShell) -> str:
    """A command the user ran, as the model reads it: what ran and what it printed."""
    arguments = parse_arguments(event.call.arguments)
    command = arguments.get("command", "") if isinstance(arguments, dict) else event.call.arguments
    return (f"I ran this command myself in the workspace:\n$ {command}\n"
            f"Its output:\n{event.output.rstrip()}")


def parse_arguments(arguments: str) -> JSON:
    try:
        return json.loads(arguments)
    except ValueError:
        return None


def summary_message(dropped: int, summary: str) -> JSONObject:
    return {"role": "user", "content": SUMMARY_HEADER.format(n=dropped) + "\n\n" + summary}


def transcript(messages: list[JSONObject], limit_tokens: int) -> str:
    """Messages as plain text for the summariser. When too long, tool output and replies are
    cut in the middle first (the user's requests matter most), then the oldest part."""
    entries = []
    for m in messages:
        text = m.get("content") or ""
        for c in m.get("tool_calls") or ():
            text += f"\n[calls {c['function']['name']} {c['function']['arguments']}]"
        entries.append((m["role"], text))
    limit = limit_tokens * 3  # characters, erring short
    total = sum(len(t) for _, t in entries)
    if total > limit:
        others = [len(t) for r, t in entries if r != "user"]
        overhead = sum(len(r) + 6 for r, _ in entries) + 16 * len(others)  # headers, cut marks
        share = max(200, (limit - overhead - (total - sum(others))) // max(1, len(others)))
        entries = [(r, t if r == "user" or len(t) <= share else
                    t[:share // 2] + "\n[... cut ...]\n" + t[-share // 2:]) for r, t in entries]
    out = "\n\n".join(f"## {r}\n{t}" for r, t in entries)
    return out if len(out) <= limit else "[... earlier part cut ...]\n" + out[-limit:]


async def summarise(engine: Engine, messages: list[JSONObject], max_tokens: int = SUMMARY_TOKENS) -> str:
    """Ask the model for a summary of `messages` in at most `max_tokens`; a plain digest when
    it cannot give one."""
    window = engine.info.context_window
    max_tokens = min(max_tokens, window // 4)
    room = window - max_tokens - 512
    request = ChatRequest(
        [{"role": "system", "content": SUMMARY_SYSTEM},
         {"role": "user", "content": "Summarise this session so far:\n\n" + transcript(messages, room)}],
        max_tokens=max_tokens,
    )
    reply, text = ReplyReader(), ""
    try:
        async for block in engine.stream(request):
            reply.add(block)
        reply.end(max_tokens)
        text = reply.text
    except EngineError:
        pass
    return text.strip() or digest(messages)


def digest(messages: list[JSONObject]) -> str:
    """A summary without the model: the user's requests and the tools called."""
    asks = [m["content"][:300] for m in messages if m["role"] == "user"]
    calls = [f"{c['function']['name']}({c['function']['arguments'][:120]})"
             for m in messages for c in m.get("tool_calls") or ()]
    parts = ["The user asked:"] + [f"- {a}" for a in asks]
    if calls:
        parts += ["Tools called:"] + [f"- {c}" for c in calls[-30:]]
    return "\n".join(parts)
