"""Running the tool calls of one turn: bind, permission, approval, checkpoint, the tool itself.

Calls run one after another in the order the model wrote them (an edit then the tests
that check it), each as a task started the moment it is parsed. Every call ends in a
ToolFinished the model reads, whatever went wrong; only cancellation escapes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from typing import Protocol

from clover_code.agent.events import (
    ApprovalAnswer,
    ApprovalAnswered,
    ApprovalNeeded,
    Event,
    Notice,
    ToolCallParsed,
    ToolFinished,
    ToolStarted,
)
from clover_code.agent.extensions import Extensions
from clover_code.agent.hooks import PermissionDecision
from clover_code.agent.output_relay import OutputRelay
from clover_code.agent.permissions import Approver, Permissions, rule_for_always
from clover_code.agent.todos import todos_changed
from clover_code.engine import ToolCall
from clover_code.engine.markup.toolcalls import FORMAT_HINT, ParsedCall, new_call_id
from clover_code.tools import BoundCall, Registry, ToolContext, ToolError, ToolKind, ToolResult

DECLINED = ("The user declined this call; it did not run. Do not retry it unchanged: "
            "ask the user what they want, or take another approach.")
ANSWERS: dict[str, ApprovalAnswer] = {"y": "yes", "yes": "yes", "a": "always", "always": "always"}
CHECKPOINTED_KINDS: tuple[ToolKind, ...] = ("edit", "shell")


class UndoPoint(Protocol):
    """Where the work tree can be put back to (clover_code.tools.checkpoints.Checkpoints)."""

    def ensure(self) -> None:
        """Record the work tree before a change (the turn's checkpoint before its first);
        ToolError when it cannot."""
        ...

    def settle(self) -> None:
        """Record the work tree after a change: what changed between the two is this session's
        to undo, what changed in between changes is not."""
        ...


def failure_key(result: ToolFinished) -> tuple[str, str] | None:
    """Identifies "the same failing call": same tool, same arguments (outputs may differ
    in timings; repeating a failing call unchanged is the loop to stop)."""
    return None if result.ok else (result.call.name, result.call.arguments)


async def run_relayed(bound: BoundCall, call: ToolCall, emit: Callable[[Event], None]) -> ToolResult:
    """Run `bound`, its output sent as ToolOutput events while it runs."""
    relay = OutputRelay(call, emit)
    try:
        return await dataclasses.replace(bound, ctx=dataclasses.replace(bound.ctx, on_output=relay.feed)).run()
    finally:
        relay.close()


async def settle(undo: UndoPoint | None) -> None:
    """After a change: its files become this session's to undo. A failure only means undo
    will count the files from the next settle on (the change itself is done)."""
    if undo is None:
        return
    try:
        await asyncio.to_thread(undo.settle)
    except ToolError:
        pass


class CallRunner:
    """One turn's calls. `emit` is the agent's: the log, the conversation, then the UI."""

    def __init__(self, registry: Registry, ctx: ToolContext, permissions: Permissions, approver: Approver,
                 emit: Callable[[Event], None], undo: UndoPoint | None = None,
                 undo_ready: asyncio.Future[None] | None = None, extensions: Extensions | None = None) -> None:
        """`undo_ready`: the turn's checkpoint bookkeeping, awaited before the first change;
        `extensions`: whose PreToolUse, PostToolUse and Notification hooks run."""
        self.registry, self.ctx, self.permissions = registry, ctx, permissions
        self.approver, self.emit, self.undo, self.undo_ready = approver, emit, undo, undo_ready
        self.extensions = extensions or Extensions(None, None, emit, dict)
        self.checkpointed = False  # undo.ensure() done this turn
        self.reset()

    def reset(self) -> None:
        self.tasks: list[asyncio.Task[ToolFinished]] = []

    @property
    def pending(self) -> bool:
        return bool(self.tasks)

    def submit(self, parsed: ParsedCall, markup: str = "") -> None:
        """`markup`: the call as written in the reply's text ("" for a structured call)."""
        call = parsed.call or ToolCall(new_call_id(), parsed.name or "invalid_tool_call", parsed.raw)
        bound = self._bind(call, parsed.error)
        touches = bound.touches if isinstance(bound, BoundCall) else None
        self.emit(ToolCallParsed(call, parsed.error, markup, touches))
        before = self.tasks[-1] if self.tasks else None
        self.tasks.append(asyncio.create_task(self._after(before, call, bound)))

    def _bind(self, call: ToolCall, error: str | None) -> BoundCall | str:
        """The call ready to run, or what the model is told when it cannot (malformed markup, bad
        arguments). Bound once, as it is parsed: what it touches is said then, and is what runs."""
        if error is not None:
            return f"Error: {error}. {FORMAT_HINT}"
        bound = self.registry.bind(call.name, call.arguments, self.ctx)
        return f"Error: {bound}" if isinstance(bound, str) else bound

    async def results(self) -> list[ToolFinished]:
        return [await task for task in self.tasks]

    async def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _after(self, before: asyncio.Task[ToolFinished] | None, call: ToolCall,
                     bound: BoundCall | str) -> ToolFinished:
        if before is not None:
            await asyncio.wait([before])  # order only; its outcome is its own
        try:
            if isinstance(bound, str):
                return self._finish(call, False, bound)
            return await self._execute(call, bound)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug here must not end the session
            return self._finish(call, False, f"{call.name} failed unexpectedly: {type(exc).__name__}: {exc}")

    async def _execute(self, call: ToolCall, bound: BoundCall) -> ToolFinished:
        pre = await self.extensions.hook("PreToolUse", call.name, tool_input=bound.arguments)
        if pre.blocked:  # the call does not run; the hook's reason is what the model reads
            return self._finish(call, False, f"Blocked by a PreToolUse hook: {pre.reason}")
        if pre.updated_input is not None:  # runs with the rewritten arguments, checked as any call is
            rebound = self.registry.bind(call.name, pre.updated_input, self.ctx)
            if isinstance(rebound, str):
                return self._finish(call, False, f"Error: a PreToolUse hook rewrote the arguments: {rebound}")
            bound = rebound
        refusal = await self._permit(call, bound, pre.decision)
        if refusal is None:
            refusal = await self._checkpoint(bound.kind)
        if refusal is not None:
            return self._finish(call, False, refusal)
        self.emit(ToolStarted(call, bound.touches))
        start = time.perf_counter()
        result = await run_relayed(bound, call, self.emit)
        seconds = time.perf_counter() - start
        await settle(self.undo if self.checkpointed and bound.kind in CHECKPOINTED_KINDS else None)
        output = await self._after_hooks(call, bound, result)
        if (todos := todos_changed(call.name, result)) is not None:
            self.emit(todos)
        return self._finish(call, result.ok, output, seconds, result.data)

    async def _after_hooks(self, call: ToolCall, bound: BoundCall, result: ToolResult) -> str:
        """The output the model reads: the tool's, and what PostToolUse hooks add to it."""
        post = await self.extensions.hook("PostToolUse", call.name, tool_input=bound.arguments,
                                          tool_response={"ok": result.ok, "output": result.output})
        notes = ([f"[PostToolUse hook: {post.reason}]"] if post.blocked else []) + post.context
        return "\n".join([result.output, *notes]) if notes else result.output

    async def _permit(self, call: ToolCall, bound: BoundCall, hooked: PermissionDecision | None = None) -> str | None:
        """None when the call may run; else what the model is told instead. `hooked`: what a
        PreToolUse hook decided: `allow` spares the question (never a read-only refusal), `ask`
        asks even where the mode would not."""
        kind, touches = bound.kind, bound.touches
        decision = self.permissions.decide(call.name, kind, touches)
        if (hooked == "allow" and decision == "ask") or (hooked == "ask" and decision == "allow"):
            decision = hooked
        if decision == "deny":
            return (f"Not allowed: {call.name} is a {kind} tool and this session is in plan mode "
                    "(read-only): only reading tools run. End with your plan of what you would change.")
        if decision == "allow":
            return None
        try:
            preview = await bound.preview()
        except ToolError as exc:  # the call would fail anyway: no need to ask
            return str(exc)
        rule = rule_for_always(kind, call.name, touches, self.permissions.root)
        request = ApprovalNeeded(call, kind, preview, touches, rule)
        answer = await self._ask(request)
        if answer == "always":
            # Exactly the rule the request showed: what the user saw is what they allowed.
            self.permissions.add_rule(request.always)
            self.emit(Notice(f"Allowed without asking from now on: {request.always}"))
        return None if answer in ("yes", "always") else DECLINED

    async def _checkpoint(self, kind: ToolKind) -> str | None:
        """An undo point before each change (the turn's checkpoint before its first); None when
        there is one (or no need)."""
        if kind not in CHECKPOINTED_KINDS or self.undo is None:
            return None
        if self.undo_ready is not None:  # shielded: a cancelled call leaves it to the turn to await
            await asyncio.shield(self.undo_ready)
        try:
            await asyncio.to_thread(self.undo.ensure)
        except ToolError as exc:  # no undo point: refuse the change rather than risk it
            return f"Not run: could not checkpoint the work tree for undo: {exc}"
        self.checkpointed = True
        return None

    async def _ask(self, request: ApprovalNeeded) -> ApprovalAnswer:
        await self.extensions.hook("Notification", message=f"clover-code needs your permission to use "
                                   f"{request.call.name}")
        self.emit(request)
        answer = ANSWERS.get(str(await self.approver(request)).strip().lower(), "no")
        self.emit(ApprovalAnswered(request.call, answer))
        return answer

    def _finish(self, call: ToolCall, ok: bool, output: str, seconds: float = 0.0,
                data: dict[str, object] | None = None) -> ToolFinished:
        event = ToolFinished(call, ok, output, round(seconds, 4), data or {})
        self.emit(event)
        return event
