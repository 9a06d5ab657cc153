"""The agent driver: builds the agent (and its model) in a thread, runs each turn, or a user's
`!cmd`, in a worker, and hands the agent's events and denoise steps to the app coalesced, one
message per burst. Messages sent while the agent is not free wait here.

It talks to the app through DriverHost (post a message, start a worker), so it never imports
the app: the app imports it. What the events look like is the transcript's (transcript.py),
what they add up to the ledger's (ledger.py).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from textual.message import Message
from textual.worker import Worker, WorkerState

from clover_code.agent.context_count import count_context
from clover_code.agent.events import ErrorEvent, Event, TurnFinished, error_source
from clover_code.engine import DenoiseStep
from clover_code.ui.tui import live_shell
from clover_code.ui.tui.errors import describe_error
from clover_code.ui.tui.messages import AgentFailed, AgentReady, EventsPending, LoadRequest, StepPending

if TYPE_CHECKING:  # types only: the first paint must not wait for the agent's imports
    from clover_code.agent.loop import Agent
    from clover_code.agent.permissions import Approver

# agent_factory(approver, resume) -> Agent. May take long (it can load a model): runs in a thread.
AgentFactory = Callable[["Approver", "str | None"], "Agent"]


class DriverHost(Protocol):
    """What the driver uses of the app (app.CloverApp is one)."""

    def post_message(self, message: Message) -> bool: ...

    def run_worker(self, work: Any, name: str | None = "", group: str = "default", description: str = "",
                   exit_on_error: bool = True, start: bool = True, exclusive: bool = False,
                   thread: bool = False) -> Worker[Any]: ...


class AgentDriver:
    def __init__(self, host: DriverHost, factory: AgentFactory, approver: Approver) -> None:
        self.host, self.factory, self.approver = host, factory, approver
        self.agent: Agent | None = None
        self.loading: LoadRequest | None = None  # the agent being built, if any
        # Sent before the agent was ready or while it worked: (for the model, as typed).
        self.waiting: list[tuple[str, str]] = []
        self._worker: Worker[None] | None = None
        self._events: deque[Event] = deque()
        self._events_posted = False
        self._step: DenoiseStep | None = None
        self._step_posted = False

    # --- the agent --------------------------------------------------------------------------
    def load(self, request: LoadRequest) -> None:
        """Build an agent for `request` in a thread; AgentReady or AgentFailed says how it went."""
        self.loading = request
        self.host.run_worker(partial(self._build, request), thread=True, exclusive=True, group="load",
                             exit_on_error=False)

    def _build(self, request: LoadRequest) -> None:
        try:
            agent = self.factory(self.approver, request.resume)
            context = count_context(agent.conversation, agent.engine).tokens
        except Exception as exc:  # every failure becomes a notification, never a traceback
            self.host.post_message(AgentFailed(describe_error(exc), request))
            return
        self.host.post_message(AgentReady(agent, request, context))

    def settle(self, request: LoadRequest) -> bool:
        """A load ended: whether it is the latest asked for (an earlier one's result is dropped)."""
        if request is not self.loading:
            return False
        self.loading = None
        return True

    def take(self, agent: Agent) -> Agent | None:
        """Work with `agent` from now on; the agent it replaces, if any (see `close`)."""
        previous, self.agent = self.agent, agent
        agent.set_on_step(self.on_step)
        return previous

    def close(self, replaced: Agent) -> None:
        """The replaced agent's engine lets its model and connections go, its log its file
        (the new agent has the same log open when it goes on with the conversation)."""
        shared = self.agent is not None and replaced.engine is self.agent.engine
        self.host.run_worker(replaced.aclose(engine=not shared), group="close", exit_on_error=False)

    # --- turns ------------------------------------------------------------------------------
    @property
    def busy(self) -> bool:
        worker = self._worker
        return worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    def owns(self, worker: Worker[Any]) -> bool:
        return worker is self._worker

    def run_turn(self, text: str) -> None:
        self._start(partial(self._turn, text))

    def run_user_command(self, text: str) -> None:
        """`!cmd`: run as a turn is (so Esc cancels it the same way)."""
        self._start(partial(live_shell.user_command, self, text))

    def _start(self, work: Callable[[], Any]) -> None:
        self._worker = self.host.run_worker(work, group="agent", exclusive=True, exit_on_error=False)

    async def _turn(self, text: str) -> None:
        agent = self.agent
        if agent is None:
            return
        started = time.monotonic()
        try:
            async for event in agent.run(text):
                self.queue_event(event)
        except asyncio.CancelledError:
            # The agent logs how the turn ended, but a cancelled turn's events stop reaching
            # us: the ledger learns it from this one (`cancel` has dropped the others by now).
            self.queue_event(TurnFinished("cancelled", "", {"seconds": round(time.monotonic() - started, 3)}))
            raise
        except Exception as exc:
            self.queue_event(ErrorEvent(describe_error(exc), error_source(exc)))
            self.queue_event(TurnFinished("error", ""))

    def cancel(self) -> None:
        """Stop the running turn; its events not drawn yet are dropped, and a TurnFinished
        ("cancelled") follows."""
        if self._worker is not None:
            self._worker.cancel()
        self._events.clear()

    # --- to the app, coalesced --------------------------------------------------------------
    def queue_event(self, event: Event) -> None:
        self._events.append(event)
        if not self._events_posted:
            self._events_posted = True
            self.host.post_message(EventsPending())

    def take_events(self) -> list[Event]:
        self._events_posted = False
        events = list(self._events)
        self._events.clear()
        return events

    def on_step(self, step: DenoiseStep) -> None:
        self._step = step
        if not self._step_posted:
            self._step_posted = True
            self.host.post_message(StepPending())

    def take_step(self) -> DenoiseStep | None:
        self._step_posted = False
        return self._step

    # --- messages waiting for the agent -----------------------------------------------------
    def next_waiting(self) -> tuple[str, str] | None:
        """The first message waiting, once the agent is free to take it."""
        free = self.agent is not None and not self.busy and self.loading is None
        return self.waiting.pop(0) if self.waiting and free else None

    def hand_back(self) -> str:
        """The waiting messages, as typed, taken back unsent."""
        text = "\n\n".join(shown for _, shown in self.waiting)
        self.waiting.clear()
        return text
