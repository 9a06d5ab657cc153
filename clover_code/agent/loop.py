"""The agent loop: request -> blocks -> tool calls -> results -> request ... until the model
answers without a tool call or a limit is hit.

Each run() works in a task of its own that emits events: every event goes to the
session log (flushed), then the conversation, then the consumer's queue. So the log is
complete whatever the consumer does or whatever fails after it, the consumer always gets
an end, and closing the iterator cancels the work at once.
Tool calls run one after another in the order written, each starting the moment its
closing tag commits, while the model may still be writing.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from clover_code.agent.bug_log import describe_bug
from clover_code.agent.calls import CallRunner, failure_key, run_relayed, settle
from clover_code.agent.commit_message import changes_to_commit, draft_commit_message
from clover_code.agent.context import KEEP_FRACTION, SUMMARY_TOKENS, Conversation, summarise
from clover_code.agent.degeneration import DegenerationWatch
from clover_code.agent.events import (
    TRANSIENT_EVENTS,
    BlockCommitted,
    Cleared,
    Compacted,
    ErrorEvent,
    Event,
    HookRan,
    Notice,
    Redone,
    RewindScope,
    Rewound,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    TurnStats,
    UserMessage,
    UserShell,
    error_source,
)
from clover_code.agent.extensions import Extensions
from clover_code.agent.hooks import Hooks
from clover_code.agent.mentions import attach_mentions
from clover_code.agent.permissions import Approver, Permissions, sandboxed
from clover_code.agent.reply import ReplyPart, ReplyReader
from clover_code.engine import ChatRequest, DenoiseStep, Engine, EngineError, ToolCall
from clover_code.engine.markup.toolcalls import new_call_id
from clover_code.engine.tally import BlockTally
from clover_code.engine.wire.window import ContextOverflow, no_room
from clover_code.settings import ApprovalMode
from clover_code.tools import Registry, ToolContext, ToolError

if TYPE_CHECKING:
    from clover_code.tools.mcp.servers import McpServers

MIN_REPLY_TOKENS = 256  # below this much room for a reply, compact first


@dataclass
class AgentSettings:
    max_turns: int = 50  # model requests per user task
    max_tokens: int = 4096
    temperature: float = 0.0
    threshold: float | None = None
    policy: str | None = None  # decoding policy NAME[:KNOB]; None: the engine's
    approval: ApprovalMode = "ask"
    repeat_limit: int = 3  # the same failing call this many times in a row ends the turn


class _Stats:
    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.turns = self.tool_calls = 0
        self.blocks = BlockTally()

    def as_dict(self) -> TurnStats:
        return {"turns": self.turns, "tool_calls": self.tool_calls, "tokens": self.blocks.tokens,
                "blocks": self.blocks.blocks, "forward_passes": self.blocks.forward_passes,
                "prompt_tokens": self.blocks.prompt_tokens, "seconds": round(time.perf_counter() - self.start, 3)}


class _End:
    """The last item on a turn's queue: the job is over."""


_END = _End()


@dataclass(frozen=True)
class _Reply:
    """What one model request came to."""

    text: str  # the reply's visible text
    results: list[ToolFinished]  # of the calls it made, in order
    degenerated: str | None = None  # why the reply was cut short (agent.degeneration), if it was


class EventLog(Protocol):
    """Where every event goes first (clover_code.agent.session.SessionLog)."""

    id: str

    def append(self, event: Event) -> None: ...

    def events(self) -> list[Event]: ...

    def close(self) -> None: ...


class Agent:
    def __init__(self, engine: Engine, registry: Registry, ctx: ToolContext, approver: Approver,
                 settings: AgentSettings, session: EventLog | None = None, system_prompt: str | None = None,
                 *, permissions: Permissions | None = None, conversation: Conversation | None = None,
                 engine_turns: asyncio.Lock | None = None,
                 within: Callable[[], asyncio.Future[None] | None] | None = None,
                 hooks: Hooks | None = None, mcp: McpServers | None = None):
        """`engine_turns`: held while a request streams, shared with sub-agents (agent/subagent.py),
        so the engine serves one at a time. `within`: a sub-agent's, the parent turn's checkpoint
        bookkeeping: its changes are checkpointed within that turn (it begins no turn of its own)."""
        self.engine, self.registry, self.ctx, self.approver = engine, registry, ctx, approver
        self.engine_turns = engine_turns or asyncio.Lock()
        self.within = within
        self.turn_bookkeeping: asyncio.Future[None] | None = None  # the running turn's, for its sub-agents
        self.settings, self.session = settings, session
        self.permissions = permissions or Permissions(settings.approval)
        self.conversation = conversation or Conversation(system_prompt or "", registry.schemas())
        self.extensions = Extensions(hooks, mcp, self.emit, self._hook_fields)
        self._session_started = False  # SessionStart hooks ran
        self._on_step: Callable[[DenoiseStep], None] | None = None
        self._sink: Callable[[Event | _End], None] | None = None  # the running turn's queue
        # an earlier run's checkpoints count too
        if ctx.checkpoints is not None and session is not None and within is None:
            ctx.checkpoints.continue_session(session.id, self.conversation.turn_count,
                                             self.conversation.pending_redo())

    def set_on_step(self, cb: Callable[[DenoiseStep], None] | None) -> None:
        self._on_step = cb

    def set_mode(self, mode: ApprovalMode, sandbox: bool) -> None:
        """The approval mode from now on (the TUI's /mode, Shift+Tab); `sandbox`: whether the user
        chose sandboxed commands. The shell and git follow it, sandboxed in full-auto whatever the
        choice, as when the agent was built so (wiring/assemble.tool_context)."""
        self.permissions.mode = mode
        self.ctx.sandbox = sandboxed(mode, sandbox)
        if self.ctx.git is not None:  # checkpoints share this runner
            self.ctx.git.sandbox = self.ctx.sandbox

    async def aclose(self, *, engine: bool = True) -> None:
        """Let go of the session log's file and, unless `engine` is False (an engine another agent
        goes on with, or a process about to end), the engine's model and connections; SessionEnd
        hooks run and MCP servers stop first."""
        await self.end_session()
        if self.session is not None:
            self.session.close()
        if engine:
            await self.engine.aclose()

    async def end_session(self) -> None:
        """SessionEnd hooks (once, if the session began), then the MCP servers stop. The UI
        calls it as it quits; aclose does too."""
        if self._session_started:
            self._session_started = False
            await self.extensions.hook("SessionEnd", reason="exit")
        await self.extensions.close()

    def _hook_fields(self) -> dict[str, str | None]:
        """What every hook is told of the session (Claude Code's names)."""
        path = getattr(self.session, "path", None)
        return {"session_id": self.session.id if self.session is not None else None,
                "transcript_path": str(path) if path is not None else None,
                "cwd": str(self.ctx.workspace.root), "permission_mode": self.permissions.mode}

    def emit(self, event: Event) -> None:
        if isinstance(event, TRANSIENT_EVENTS):  # for the screen only: a later event logs what it says
            if self._sink is not None:
                self._sink(event)
            return
        if self.session is not None:
            self.session.append(event)  # first: whatever fails next, the log has the event
        self.conversation.apply(event)
        if self._sink is not None:
            self._sink(event)

    def _emit_last(self, event: Event) -> None:
        """A turn's closing events: the consumer gets them even when the log or the
        conversation cannot take them (that failure is what is being reported)."""
        try:
            self.emit(event)
        except Exception:
            if self._sink is not None:
                self._sink(event)

    def run(self, task: str) -> AsyncGenerator[Event, None]:
        """The turn's events as they happen; closing the iterator cancels the turn at once."""
        return self._events_of(lambda: self._outcome(task, _Stats()))

    def user_shell(self, command: str) -> AsyncGenerator[Event, None]:
        """Run `command` for the user (the TUI's `!cmd`) with the run_shell tool, sandboxed as the
        model's commands are, never asked about (the user typed it); its output joins the
        conversation (UserShell). Checkpointed like the model's commands, so rewind undoes it."""
        return self._events_of(lambda: self._user_shell(command))

    async def _events_of(self, job: Callable[[], Awaitable[Event | None]]) -> AsyncGenerator[Event, None]:
        """The events `job` emits, then the one it returns, as it runs in a task of its own."""
        queue: asyncio.Queue[Event | _End] = asyncio.Queue()
        self._sink = queue.put_nowait
        worker = asyncio.create_task(self._work(job))
        try:
            while not isinstance(event := await queue.get(), _End):
                yield event
        finally:
            if not worker.done():
                worker.cancel()
                await asyncio.gather(worker, return_exceptions=True)
            self._sink = None

    async def _work(self, job: Callable[[], Awaitable[Event | None]]) -> None:
        try:
            last = await job()
            if last is not None:
                self._emit_last(last)
        finally:
            if self._sink is not None:
                self._sink(_END)  # the consumer never waits for an end that does not come

    async def _user_shell(self, command: str) -> UserShell:
        call = ToolCall(new_call_id(), "run_shell", json.dumps({"command": command}))
        bound = self.registry.bind(call.name, call.arguments, self.ctx)
        if isinstance(bound, str):
            return UserShell(call, False, f"Error: {bound}", 0.0)
        self.emit(ToolStarted(call, bound.touches))
        start = time.perf_counter()
        result = await run_relayed(bound, call, self.emit)
        seconds = round(time.perf_counter() - start, 4)
        await settle(self.ctx.checkpoints)  # run_shell checkpointed before it ran
        return UserShell(call, result.ok, result.output, seconds, result.data)

    # --- rewind ----------------------------------------------------------------------------
    async def rewind(self, turn: int, scope: RewindScope = "both") -> Rewound:
        """Back to just before user turn `turn` (Conversation.turns()): the work tree as its
        checkpoint has it and the conversation without that turn and the ones after (`scope`:
        both, or only one of them). Logged, so a resumed session resumes the rewound
        conversation; the checkpoints of earlier runs of the session count as this run's."""
        if not 0 <= turn < self.conversation.turn_count:
            raise ValueError(f"no turn {turn} to rewind to")
        files, kept = "", False
        checkpoints = self.ctx.checkpoints
        if checkpoints is not None:
            kept = await asyncio.to_thread(checkpoints.files_kept, turn)
            files = await asyncio.to_thread(checkpoints.rewind, turn, files=scope != "conversation",
                                            conversation=scope != "code")
        event = Rewound(turn, files, scope, kept)
        self.emit(event)
        return event

    async def files_kept(self) -> dict[int, bool]:
        """Per turn a rewind can go back to: whether its files can be restored too."""
        turns = [turn.index for turn in self.conversation.turns()]
        checkpoints = self.ctx.checkpoints
        if checkpoints is None:
            return dict.fromkeys(turns, False)
        return await asyncio.to_thread(lambda: {turn: checkpoints.files_kept(turn) for turn in turns})

    async def redo(self) -> Redone | None:
        """Take back the latest rewind (files and conversation); None when there is none to take
        back (a new turn since ends what can be redone)."""
        if not self.conversation.can_redo:
            return None
        files = ""
        if self.ctx.checkpoints is not None:
            files = await asyncio.to_thread(self.ctx.checkpoints.redo)
        event = Redone(files)
        self.emit(event)
        return event

    async def _outcome(self, task: str, stats: _Stats) -> TurnFinished:
        try:
            return await self._turns(task, stats)
        except asyncio.CancelledError:
            self._emit_last(TurnFinished("cancelled", "", stats.as_dict()))
            raise
        except Exception as exc:  # a bug too must end the turn with a message, not hang a UI
            self._emit_last(_error_event(exc, fatal=True))
            return TurnFinished("error", str(exc), stats.as_dict())

    async def _turns(self, task: str, stats: _Stats) -> TurnFinished:
        bookkeeping = self.turn_bookkeeping = self._begin_checkpoints()
        try:
            outcome = await self._turn(task, stats, bookkeeping)
        except BaseException:
            if bookkeeping is not None:  # never left running into the next turn or a rewind
                await asyncio.gather(bookkeeping, return_exceptions=True)
            raise
        if bookkeeping is not None:
            await bookkeeping
        return outcome

    def _begin_checkpoints(self) -> asyncio.Future[None] | None:
        """The checkpoints' bookkeeping for a new turn (sandboxed git runs: the refs of turns
        rewound away, where checkpoints are kept from), started beside the first model request
        instead of before it: the call runner awaits it before its first checkpoint."""
        checkpoints = self.ctx.checkpoints
        if checkpoints is None:
            return None
        if self.within is not None:  # a sub-agent's turn is its parent's: shielded, as it is not its own
            parent = self.within()
            return asyncio.shield(parent) if parent is not None else None
        # numbered as the conversation numbers turns (rewind), before this turn's message joins it
        return asyncio.create_task(asyncio.to_thread(checkpoints.begin_turn, self.conversation.turn_count))

    async def _turn(self, task: str, stats: _Stats, bookkeeping: asyncio.Future[None] | None) -> TurnFinished:
        await self.extensions.tools_ready(self.registry, self.conversation)
        if not self._session_started:
            self._session_started = True
            await self.extensions.hook("SessionStart", source="resume" if self.conversation.turn_count else "startup")
        prompt_hooks = await self.extensions.hook("UserPromptSubmit", emit=False, prompt=task)
        if prompt_hooks.blocked:
            return self._prompt_blocked(prompt_hooks.events, prompt_hooks.reason, stats)
        attachments = await attach_mentions(task, self.registry, self.ctx) if "@" in task else ()
        self.emit(UserMessage(task, attachments))
        for ran in prompt_hooks.events:  # after the prompt: what they add follows it
            self.emit(ran)
        runner = CallRunner(self.registry, self.ctx, self.permissions, self.approver, self.emit,
                            undo=self.ctx.checkpoints, undo_ready=bookkeeping, extensions=self.extensions)
        streak: tuple[tuple[str, str] | None, int] = (None, 0)  # the failing call, how many times in a row
        stop_hook_active = False  # a Stop hook made the model go on already this turn
        for _ in range(self.settings.max_turns):
            stats.turns += 1
            reply = await self._fitted_request(runner, stats)
            if reply.degenerated is not None:
                self.emit(Notice(reply.degenerated))
                return TurnFinished("gave_up", reply.degenerated, stats.as_dict())
            if not reply.results:
                stop = await self.extensions.hook("Stop", stop_hook_active=stop_hook_active)
                if not stop.blocked:
                    return TurnFinished("done", reply.text, stats.as_dict())
                stop_hook_active = True  # its reason joined the conversation: the model goes on
                continue
            for result in reply.results:
                key = failure_key(result)
                streak = (key, streak[1] + 1 if key is not None and key == streak[0] else int(key is not None))
                if streak[1] >= self.settings.repeat_limit:
                    why = (f"Stopped: the same {result.call.name} call failed {streak[1]} times in a row. "
                           f"Last error: {result.output.strip()[:500]}")
                    self.emit(Notice(why))
                    return TurnFinished("gave_up", why, stats.as_dict())
        return TurnFinished("max_turns", f"Stopped after {self.settings.max_turns} model requests "
                            "(--max-turns) with the task unfinished.", stats.as_dict())

    def _prompt_blocked(self, events: list[HookRan], reason: str, stats: _Stats) -> TurnFinished:
        """A UserPromptSubmit hook blocked the prompt: it is not sent, and the user sees why."""
        for ran in events:
            self.emit(ran)
        why = f"A UserPromptSubmit hook blocked this prompt (it was not sent): {reason}"
        self.emit(Notice(why))
        return TurnFinished("gave_up", why, stats.as_dict())

    async def _request(self, runner: CallRunner, stats: _Stats, max_tokens: int) -> _Reply:
        """One model request: stream its blocks, start each call as soon as it is complete. A
        reply that degenerates is cut there: the request is cancelled (closing the stream) and
        the call it was writing, if any, is dropped; calls it completed before still run."""
        tools = self.conversation.tools
        request = ChatRequest(self.conversation.request_messages(), tools, max_tokens=max_tokens,
                              temperature=self.settings.temperature, threshold=self.settings.threshold,
                              policy=self.settings.policy, on_step=self._on_step)
        reply = ReplyReader(tools)
        watch = DegenerationWatch()
        runner.reset()
        try:
            async with self.engine_turns, aclosing(self.engine.stream(request)) as blocks:
                async for block in blocks:
                    self.emit(BlockCommitted(block))
                    stats.blocks.add(block)
                    self._take(reply.add(block), runner, stats)
                    if watch.add(block.text):
                        break
            if watch.reason is None:
                self._take(reply.end(max_tokens), runner, stats)
            if reply.cut_off and not runner.pending:
                self.emit(Notice(f"The reply was cut off at max_tokens ({max_tokens})."))
            results = await runner.results()
        except BaseException as exc:
            # Calls already started finish when the engine fails; on cancel they stop at once.
            await (runner.results() if isinstance(exc, EngineError) else runner.cancel())
            raise
        return _Reply(reply.text.strip(), results, watch.reason)

    def _take(self, parts: list[ReplyPart], runner: CallRunner, stats: _Stats) -> None:
        """Text to the UIs, each call to the runner (it starts at once), in the order written."""
        for part in parts:
            if isinstance(part, TextDelta):
                self.emit(part)
            else:
                stats.tool_calls += 1
                runner.submit(part.parsed, part.markup)

    async def _fitted_request(self, runner: CallRunner, stats: _Stats) -> _Reply:
        """One request sized to the window. A server that refuses it as too long has taught the
        engine its window by then: compact and ask once more."""
        try:
            return await self._request(runner, stats, await self._fit_context())
        except ContextOverflow as exc:
            if await self.compact(keep_tokens=self._keep_tokens()) is None:
                raise self._nothing_to_drop(exc) from None
        return await self._request(runner, stats, await self._fit_context())

    def _nothing_to_drop(self, exc: ContextOverflow) -> ContextOverflow:
        """A refusal compaction cannot help with; said in the user's terms when it is the first request."""
        if exc.prompt_tokens is None or exc.window is None or len(self.conversation.messages) > 1:
            return exc
        return no_room("the system prompt, tool descriptions and task",
                       exc.prompt_tokens, exc.window, self.engine.info.context_source)

    async def _fit_context(self) -> int:
        """Compact when the next request would overflow; the room left for the reply."""
        connect = getattr(self.engine, "connect", None)
        if connect is not None:  # a server's window is learned before the first request is sized
            await connect()
        window = self.engine.info.context_window
        used = self.conversation.tokens(self.engine)
        if used + min(self.settings.max_tokens, self._free_tokens() // 4) > window:
            await self.compact(keep_tokens=self._keep_tokens())
            used = self.conversation.tokens(self.engine)
        room = window - used
        if room >= MIN_REPLY_TOKENS:
            return min(self.settings.max_tokens, room)
        if not self.conversation.counted_by_server:
            return self.settings.max_tokens  # a bare estimate: the engine counts, or the server refuses
        base = self.conversation.base_tokens(self.engine)
        if base + MIN_REPLY_TOKENS > window:
            raise no_room("the system prompt and tool descriptions", base, window, self.engine.info.context_source)
        raise EngineError(f"the conversation ({used} tokens) does not fit the context window "
                          f"({window}) even after compaction; start a new session")

    def _free_tokens(self) -> int:
        """The window less the system prompt and tools: what the conversation may fill."""
        return max(0, self.engine.info.context_window - self.conversation.base_tokens(self.engine))

    def _keep_tokens(self) -> int:
        return int(self._free_tokens() * KEEP_FRACTION)

    def clear(self) -> Cleared:
        """Start over (/clear); logged, so a resumed session starts over too."""
        event = Cleared(len(self.conversation.messages))  # the system prompt stays
        self.emit(event)
        return event

    async def compact(self, keep_tokens: int = 0) -> Compacted | None:
        """Summarise older messages with the model, keep the recent ones verbatim (/compact, and
        before a request that would overflow). A Notice says it runs: the summary is a model
        request, seconds long. A summary that would not make the context smaller is discarded,
        with a Notice, and the conversation stays as it was. None when nothing was compacted."""
        n = self.conversation.compaction_split(keep_tokens)
        if not n:
            return None
        await self.extensions.hook("PreCompact", trigger="auto" if keep_tokens else "manual")
        self.emit(Notice(f"Compacting the conversation: summarising {n} earlier messages…"))
        before = self.conversation.tokens(self.engine)
        now = self.conversation.count(self.conversation.request_messages(), self.engine)  # counted as `after` is
        budget = max(MIN_REPLY_TOKENS, min(SUMMARY_TOKENS, self._free_tokens() // 4))  # it joins what is kept
        summary = await summarise(self.engine, self.conversation.messages[:n], budget)
        after = self.conversation.tokens_after_compaction(n, summary, self.engine)
        if after >= now:
            self.emit(Notice(f"Compaction discarded: the summary would not make the context smaller "
                             f"({now} -> {after} tokens), so the conversation stays as it was."))
            return None
        event = Compacted(n, before, after, summary)
        self.emit(event)
        return event

    def compaction(self) -> AsyncGenerator[Event, None]:
        """/compact, its events as they happen: a Notice that it runs, then Compacted, or a
        Notice saying why nothing was compacted; closing the iterator cancels it."""
        return self._events_of(self._compact_for_user)

    async def _compact_for_user(self) -> Event | None:
        if not self.conversation.compaction_split(0):
            return Notice("Nothing to compact yet: the conversation is short.")
        try:
            await self.compact()
        except Exception as exc:  # a screen waiting on it gets a message, never a hang
            return _error_event(exc, "compaction failed: ")
        return None

    async def draft_commit_message(self) -> str:
        """`/commit` without a message: one line the model drafts for a commit of the work tree,
        outside the conversation ('' when it writes none); ToolError when there is nothing to commit."""
        changes = await changes_to_commit(self.registry, self.ctx)
        if not changes:
            raise ToolError("nothing to commit: no changes since the last commit")
        return await draft_commit_message(self.engine, changes)


def _error_event(exc: Exception, doing: str = "", fatal: bool = False) -> ErrorEvent:
    """What a failure tells the user: the engine's own message, or a bug of ours as one."""
    source = error_source(exc)
    message = str(exc) if source == "engine" else f"internal error: {describe_bug(exc)}"
    return ErrorEvent(doing + message, source, fatal)
