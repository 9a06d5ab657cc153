"""Events the agent yields; every UI (TUI, headless, session log) consumes these.

Plain frozen dataclasses so they serialize to the session log (`to_json`) and back.
A model reply arrives as BlockCommitted (the engine's block: tokens, timing, raw text) followed
by what the agent parsed from it, once, in the order written: TextDelta for the text a reader
sees, ToolCallParsed for each call. UIs show TextDelta, never a block's raw text.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from clover_code.engine import Block, EngineError, ToolCall
from clover_code.jsonsafe import JSONObject
from clover_code.tools import ToolKind
from clover_code.tools.touches import Touches

if TYPE_CHECKING:
    from pydantic import TypeAdapter

ApprovalAnswer = Literal["yes", "always", "no"]
# How a turn ended. "error": an ErrorEvent before it says what failed.
TurnReason = Literal["done", "cancelled", "max_turns", "gave_up", "error"]
# What failed: the engine (its message says what to check) or clover-code itself (a bug).
# A tool's failure is never an error of the turn: it is a result the model reads.
ErrorSource = Literal["engine", "internal"]
TurnStats = dict[str, int | float | None]  # turns, tool_calls, tokens, blocks, forward_passes, ...


@dataclass(frozen=True)
class Attachment:
    """A file the user named in a message (`@path`): its content goes to the model with it."""

    path: str  # as the user wrote it, relative to the workspace
    content: str  # what the model reads: the text (cut when long) or a folder's listing
    note: str = ""  # what the user should know: "cut at 2,000 lines", "not attached: binary"...


@dataclass(frozen=True)
class UserMessage:
    text: str
    attachments: tuple[Attachment, ...] = ()


@dataclass(frozen=True)
class BlockCommitted:
    block: Block


@dataclass(frozen=True)
class TextDelta:
    """Reply text a reader sees: what the latest block added outside tool-call markup. A tag
    cut by a block's end is held back until the next block says what it is; the reply's end
    releases what is left."""

    text: str


@dataclass(frozen=True)
class ToolCallParsed:
    call: ToolCall
    # Set when the model's markup was malformed or cut off: then `call.arguments` holds the
    # raw markup, `call.name` a best guess, and the call never runs.
    error: str | None = None
    markup: str = ""  # the call as written in the reply's text; "" for a call a server sent structured
    # What it reads, writes and runs, as its tool declares (UIs name the call by it); None when it
    # cannot run (malformed, an unknown tool, invalid arguments) and in logs from before it was said.
    touches: Touches | None = None


@dataclass(frozen=True)
class ApprovalNeeded:
    call: ToolCall
    kind: ToolKind  # never "read": reads do not ask
    preview: str = ""  # a diff for edits, the command for shell
    touches: Touches | None = None
    always: str = ""  # the allow rule an "always" answer adds, exactly ("" in logs from before it was said)


@dataclass(frozen=True)
class ApprovalAnswered:
    call: ToolCall
    answer: ApprovalAnswer


@dataclass(frozen=True)
class ToolStarted:
    call: ToolCall
    touches: Touches | None = None  # as in ToolCallParsed (a user's own command has none before it)


@dataclass(frozen=True)
class ToolOutput:
    """Output a running tool printed since the last ToolOutput (run_shell, as it runs). Shown
    live, never logged nor added to the conversation: the ToolFinished that follows holds the
    output the model reads, so logging each piece too would only double the log."""

    call: ToolCall
    text: str


@dataclass(frozen=True)
class ToolFinished:
    call: ToolCall
    ok: bool
    output: str
    seconds: float
    data: JSONObject = field(default_factory=dict)


TodoStatus = Literal["pending", "in_progress", "done"]


@dataclass(frozen=True)
class TodoItem:
    content: str
    status: TodoStatus = "pending"


@dataclass(frozen=True)
class TodosChanged:
    """The model's todo list as it now stands (the todo_write tool replaces it whole): UIs pin it,
    the session log keeps it, so a resumed session shows the latest list again."""

    items: tuple[TodoItem, ...]

    @property
    def done(self) -> int:
        return sum(item.status == "done" for item in self.items)


@dataclass(frozen=True)
class Compacted:
    dropped_messages: int
    tokens_before: int
    tokens_after: int
    summary: str


@dataclass(frozen=True)
class Cleared:
    """The user started over (/clear): later requests see none of the earlier messages."""

    dropped_messages: int


@dataclass(frozen=True)
class UserShell:
    """A command the user ran themselves (`!cmd` in the TUI) with the run_shell tool: its
    output joins the conversation as what the user said, so the model reads it."""

    call: ToolCall
    ok: bool
    output: str
    seconds: float
    data: JSONObject = field(default_factory=dict)


RewindScope = Literal["both", "conversation", "code"]


@dataclass(frozen=True)
class Rewound:
    """Back to just before user turn `turn` (counting every UserMessage of the session from 0):
    later messages leave the conversation; `files` says what the restore of the work tree did.
    `scope`: the files and the conversation, the conversation only, or the files only (the
    conversation stays as it is). `files_kept`: whether that turn's file checkpoints exist (a
    turn of a session begun before they were kept across runs has none: conversation only)."""

    turn: int
    files: str = ""
    scope: RewindScope = "both"
    files_kept: bool = True


@dataclass(frozen=True)
class Redone:
    """The latest Rewound taken back: the conversation (and the files) as they were before it."""

    files: str = ""


@dataclass(frozen=True)
class Notice:
    text: str  # something the user should know once (demo model, retry, ...)


HookOutcomeName = Literal["ok", "blocked", "error", "timed_out"]


@dataclass(frozen=True)
class HookRan:
    """One of the user's hooks ran (clover_code.agent.hooks). `context`: what it gave the model
    (a SessionStart or UserPromptSubmit hook's output, a Stop hook's reason to go on), which joins
    the conversation as a message; a log replayed on resume restores it, never runs the hook."""

    event: str  # SessionStart, PreToolUse, ...
    command: str
    exit_code: int | None  # None: killed at its timeout
    outcome: HookOutcomeName
    message: str = ""  # why it blocked, what went wrong, or what it decided
    context: str = ""


@dataclass(frozen=True)
class ErrorEvent:
    message: str
    source: ErrorSource
    fatal: bool = False


def error_source(exc: BaseException) -> ErrorSource:
    """Who is to blame for `exc`: an EngineError is the engine's, anything else a bug of ours."""
    return "engine" if isinstance(exc, EngineError) else "internal"


@dataclass(frozen=True)
class TurnFinished:
    reason: TurnReason
    text: str  # the final assistant text of the turn
    stats: TurnStats = field(default_factory=dict)


Event = (
    UserMessage | BlockCommitted | TextDelta | ToolCallParsed | ApprovalNeeded | ApprovalAnswered
    | ToolStarted | ToolOutput | ToolFinished | Compacted | Cleared | UserShell | Rewound | Redone | Notice
    | HookRan | ErrorEvent | TurnFinished | TodosChanged
)
# Shown live and never logged: what they say reaches the log in a later event.
TRANSIENT_EVENTS = (ToolOutput,)

EVENT_TYPES: dict[str, type[Event]] = {
    cls.__name__: cls
    for cls in (
        UserMessage, BlockCommitted, TextDelta, ToolCallParsed, ApprovalNeeded, ApprovalAnswered,
        ToolStarted, ToolOutput, ToolFinished, Compacted, Cleared, UserShell, Rewound, Redone, Notice,
        HookRan, ErrorEvent, TurnFinished, TodosChanged,
    )
}


def to_json(event: Event) -> JSONObject:
    """A JSON-ready dict: {"type": ClassName, ...fields}."""
    return {"type": type(event).__name__, **dataclasses.asdict(event)}


def from_json(data: object) -> Event:
    """The event `data` describes; ValueError when it is not one (unknown type, a field
    missing or of the wrong type), so a damaged or forged log cannot crash its reader."""
    if not isinstance(data, dict) or not isinstance(data.get("type"), str) or data["type"] not in EVENT_TYPES:
        kind = data.get("type") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"unknown event type {kind!r}")
    from pydantic import ValidationError

    fields = {k: v for k, v in data.items() if k != "type"}
    try:
        return _adapter(data["type"]).validate_python(fields)
    except ValidationError as exc:
        problem = exc.errors()[0]
        where = ".".join(map(str, problem["loc"])) or "(event)"
        raise ValueError(f"{data['type']}.{where}: {problem['msg']}") from None


@functools.cache
def _adapter(name: str) -> TypeAdapter[Event]:
    """A validator of one event class, nested Block and ToolCall included (built on first use:
    only reading a log needs it)."""
    from pydantic import TypeAdapter

    return TypeAdapter(EVENT_TYPES[name])
