"""Running the tool calls of one reply: checks, approval, checkpoint, the tool itself.

Calls run one after another in the order the model wrote them (an edit then the tests
that check it), each as a task started the moment it is parsed. Every call ends in a
ToolFinished the model reads, whatever went wrong; only cancellation escapes.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from clover_code.agent.events import (
    ApprovalAnswered, ApprovalNeeded, Notice, ToolCallParsed, ToolFinished, ToolStarted,
)
from clover_code.agent.permissions import rule_for_always
from clover_code.engine import ToolCall
from clover_code.engine.toolcalls import FORMAT_HINT, ParsedCall, new_call_id
from clover_code.tools import ToolError

if TYPE_CHECKING:
    from clover_code.agent.loop import Agent

DECLINED = ("The user declined this call; it did not run. Do not retry it unchanged: "
            "ask the user what they want, or take another approach.")
ANSWERS = {"y": "yes", "yes": "yes", "a": "always", "always": "always"}
CHECKPOINTED_KINDS = ("edit", "shell")


def failure_key(result: ToolFinished) -> tuple[str, str] | None:
    """Identifies "the same failing call": same tool, same arguments (outputs may differ
    in timings; repeating a failing call unchanged is the loop to stop)."""
    return None if result.ok else (result.call.name, result.call.arguments)


class CallRunner:
    def __init__(self, agent: Agent, stats: Any):
        self.agent, self.stats = agent, stats
        self.checkpointed = False  # ensure() done this run
        self.reset()

    def reset(self) -> None:
        self.tasks: list[asyncio.Task[ToolFinished]] = []

    @property
    def pending(self) -> bool:
        return bool(self.tasks)

    def submit(self, parsed: ParsedCall, markup: str = "") -> None:
        """`markup`: the call as written in the reply's text ("" for a structured call)."""
        call = parsed.call or ToolCall(new_call_id(), parsed.name or "invalid_tool_call", parsed.raw)
        self.agent.emit(ToolCallParsed(call, parsed.error, markup))
        self.stats.tool_calls += 1
        before = self.tasks[-1] if self.tasks else None
        self.tasks.append(asyncio.create_task(self._after(before, call, parsed.error)))

    async def results(self) -> list[ToolFinished]:
        return [await task for task in self.tasks]

    async def cancel(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)

    async def _after(self, before: asyncio.Task | None, call: ToolCall, error: str | None) -> ToolFinished:
        if before is not None:
            await asyncio.wait([before])  # order only; its outcome is its own
        try:
            if error is not None:
                return self._finish(call, False, f"Error: {error}. {FORMAT_HINT}")
            return await self._execute(call)
        except (asyncio.CancelledError, KeyboardInterrupt):
            raise
        except Exception as exc:  # a bug here must not end the session
            return self._finish(call, False, f"{call.name} failed unexpectedly: {type(exc).__name__}: {exc}")

    async def _execute(self, call: ToolCall) -> ToolFinished:
        agent = self.agent
        args = agent.registry.validate(call.name, call.arguments)
        if isinstance(args, str):
            return self._finish(call, False, f"Error: {args}")
        kind = agent.registry.kind(call.name) or "shell"
        arguments = args.model_dump()
        decision = agent.permissions.decide(call.name, kind, arguments)
        if decision == "deny":
            return self._finish(call, False, f"Not allowed: {call.name} is a {kind} tool and this session is "
                                "read-only; only reading tools run. Tell the user what you would change.")
        if decision == "ask":
            try:
                preview = await self._preview(call, args, kind)
            except ToolError as exc:  # the call would fail anyway: no need to ask
                return self._finish(call, False, str(exc))
            answer = await self._ask(ApprovalNeeded(call, kind, preview))
            if answer == "always":
                rule = rule_for_always(kind, call.name, arguments, agent.permissions.root)
                agent.permissions.add_rule(rule)
                agent.emit(Notice(f"Allowed without asking from now on: {rule}"))
            elif answer != "yes":
                return self._finish(call, False, DECLINED)
        if kind in CHECKPOINTED_KINDS and not self.checkpointed and agent.ctx.checkpoints is not None:
            try:
                await asyncio.to_thread(agent.ctx.checkpoints.ensure)
            except ToolError as exc:  # no undo point: refuse the change rather than risk it
                return self._finish(call, False, f"Not run: could not checkpoint the work tree for undo: {exc}")
            self.checkpointed = True
        agent.emit(ToolStarted(call))
        start = time.perf_counter()
        result = await agent.registry.call(call.name, call.arguments, agent.ctx)
        return self._finish(call, result.ok, result.output, time.perf_counter() - start, result.data)

    async def _ask(self, request: ApprovalNeeded) -> str:
        self.agent.emit(request)
        answer = ANSWERS.get(str(await self.agent.approver(request)).strip().lower(), "no")
        self.agent.emit(ApprovalAnswered(request.call, answer))
        return answer

    async def _preview(self, call: ToolCall, args: BaseModel, kind: str) -> str:
        """What the user approves: the edit's diff, the command line, or the arguments."""
        tool = self.agent.registry.tools[call.name]
        if hasattr(tool, "preview"):
            out = tool.preview(args, self.agent.ctx)
            return await out if inspect.isawaitable(out) else str(out)
        if kind == "shell" and isinstance(getattr(args, "command", None), str):
            return args.command
        return json.dumps(args.model_dump(), indent=2, ensure_ascii=False)

    def _finish(self, call: ToolCall, ok: bool, output: str, seconds: float = 0.0,
                data: dict[str, Any] | None = None) -> ToolFinished:
        event = ToolFinished(call, ok, output, round(seconds, 4), data or {})
        self.agent.emit(event)
        return event
