"""The `task` tool: a sub-agent works on a sub-task in a fresh context and hands back only its
final answer and what it cost, so a side question does not fill the parent's context.

The sub-agent is an Agent of its own (the same loop) on the parent's engine, workspace and
permissions: the same Permissions object, so it may do exactly what the parent may at that
moment (read only in plan mode; asking the same approver in ask) and never more, whatever its
definition says. It gets no `task` tool (no sub-agents of sub-agents) and no session log: its
transcript travels in the result's data, which the parent's log keeps. Its requests take turns
with the parent's on one lock (the parent's reply has ended before the sub-agent's first
request starts), so the embedded engine serves one at a time.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import ClassVar

from pydantic import BaseModel, Field

from clover_code.agent.agent_defs import GENERAL, AgentDef
from clover_code.agent.events import Event, TextDelta, ToolFinished, ToolStarted, TurnFinished
from clover_code.agent.loop import Agent, AgentSettings
from clover_code.agent.permissions import Approver, Permissions
from clover_code.engine import Engine
from clover_code.tools import Registry, ToolContext, ToolError, ToolKind, ToolResult
from clover_code.tools.touches import Touches

TASK_TOOL = "task"
MAX_TURNS = 25  # a sub-task is smaller than a task
_TRAILER = ("\n\n# You are a sub-agent\nYou work on one sub-task for another agent, which sees only your "
            "final answer (the reply without a tool call): make it complete and self-contained.\n\n")


class TaskArgs(BaseModel):
    description: str = Field(min_length=1, max_length=120, description="the sub-task in 3-8 words")
    prompt: str = Field(min_length=1, description="everything the sub-agent needs to know to do it")
    agent: str = Field(GENERAL, description="which sub-agent definition to use")


@dataclasses.dataclass
class SubagentKit:
    """What a sub-agent is built from: the parent's engine, tools, permissions and approver."""

    engine: Engine
    registry: Registry
    permissions: Permissions
    approver: Approver
    system_prompt: str
    defs: dict[str, AgentDef]
    engine_turns: asyncio.Lock
    max_tokens: int = 4096
    temperature: float = 0.0
    # The parent turn's checkpoint bookkeeping (Agent.turn_bookkeeping), awaited before a change.
    parent_turn: Callable[[], asyncio.Future[None] | None] = lambda: None


class TaskTool:
    name: ClassVar[str] = TASK_TOOL
    kind: ClassVar[ToolKind] = "read"  # it touches nothing itself: each call of its sub-agent is checked
    Args: ClassVar[type[BaseModel]] = TaskArgs

    def __init__(self, kit: SubagentKit) -> None:
        self.kit = kit

    def touches(self, args: BaseModel) -> Touches:
        assert isinstance(args, TaskArgs)
        return Touches(label=f"{args.agent}: {args.description}")

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        assert isinstance(args, TaskArgs)
        definition = self.kit.defs.get(args.agent)
        if definition is None:
            raise ToolError(f"no sub-agent {args.agent!r}; defined: {', '.join(sorted(self.kit.defs))}")
        agent = self._subagent(definition, ctx)
        record = _Transcript(ctx.on_output)
        finished = TurnFinished("error", "")
        async for event in agent.run(args.prompt):
            record.add(event)
            if isinstance(event, TurnFinished):
                finished = event
        tokens = int(finished.stats.get("tokens") or 0)
        requests = int(finished.stats.get("turns") or 0)
        footer = f"[sub-agent {definition.name}: {requests} requests, {tokens} tokens]"
        ok = finished.reason == "done"
        answer = finished.text.strip() or f"(the sub-agent ended without an answer: {finished.reason})"
        return ToolResult(ok, f"{answer}\n\n{footer}", {"agent": definition.name, "tokens": tokens,
                                                          "requests": requests, "transcript": record.text()})

    def _subagent(self, definition: AgentDef, ctx: ToolContext) -> Agent:
        kit = self.kit
        offered = [t for name, t in kit.registry.tools.items()
                   if name != TASK_TOOL and (definition.tools is None or name in definition.tools)]
        settings = AgentSettings(max_turns=MAX_TURNS, max_tokens=kit.max_tokens, temperature=kit.temperature,
                                 approval=kit.permissions.mode)
        system = kit.system_prompt + _TRAILER + definition.prompt
        # The parent's workspace and checkpoints (its changes are the parent turn's to undo); its own output.
        own_ctx = dataclasses.replace(ctx, on_output=None)
        return Agent(kit.engine, Registry(offered), own_ctx, kit.approver, settings, None, system,
                     permissions=kit.permissions, engine_turns=kit.engine_turns, within=kit.parent_turn)


class _Transcript:
    """The sub-agent's work as lines: sent on as it happens (the parent's card shows it live)
    and kept whole for the result."""

    def __init__(self, send: Callable[[str], None] | None) -> None:
        self.send, self.parts = send, list[str]()

    def add(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            self._put(event.text)
        elif isinstance(event, ToolStarted):
            what = event.touches.summary if event.touches is not None else ""
            self._put(f"\n→ {event.call.name} {what}".rstrip() + "\n")
        elif isinstance(event, ToolFinished) and not event.ok:
            self._put(f"  ✗ {event.output.strip().splitlines()[0][:200] if event.output.strip() else 'failed'}\n")

    def _put(self, text: str) -> None:
        self.parts.append(text)
        if self.send is not None:
            self.send(text)

    def text(self) -> str:
        return "".join(self.parts).strip()

