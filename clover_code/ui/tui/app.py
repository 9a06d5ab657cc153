"""The clover-code TUI: `make_app()` builds it (CLI and tests), `run(args)` runs it.

The agent runs in a worker; its events are queued and drained by one message handler
per frame-ish burst. Widgets only draw: none of them calls the engine or the agent.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from pathlib import Path
from typing import Any, Callable

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.worker import Worker, WorkerState

from clover_code.agent.events import (
    ApprovalAnswered, ApprovalNeeded, BlockCommitted, Compacted, ErrorEvent, Notice,
    TextDelta, ToolCallParsed, ToolFinished, ToolStarted, TurnFinished, UserMessage, error_source,
)
from clover_code.agent.session import SessionError
from clover_code.engine import DenoiseStep, EngineError
from clover_code.settings import ConfigError, Settings
from clover_code.tools import ToolError
from clover_code.ui.launch import AgentBuilder
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.messages import (
    AgentFailed, AgentReady, ApprovalRequested, EventsPending, StepPending,
)
from clover_code.ui.tui.session_stats import SessionStats
from clover_code.ui.tui.widgets.approval_prompt import ApprovalPrompt
from clover_code.ui.tui.widgets.conversation import ConversationView
from clover_code.ui.tui.widgets.denoise_view import DenoiseView
from clover_code.ui.tui.widgets.input_editor import InputEditor
from clover_code.ui.tui.widgets.status_bar import StatusBar

# agent_factory(approver, resume) -> Agent. May take long (it can load a model): runs in a thread.
AgentFactory = Callable[[Callable, "str | None"], Any]
QUIT_WINDOW_S = 2.0


class CloverApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "clover-code"
    BINDINGS = [
        Binding("escape", "cancel", "cancel", priority=True),
        Binding("ctrl+c", "interrupt", "quit (twice)", priority=True),
        Binding("f2", "toggle_denoise", "denoise view"),
        Binding("ctrl+l", "command('/clear')", "clear", show=False),
    ]

    def __init__(self, settings: Settings, cwd: Path, agent_factory: AgentFactory,
                 resume: str | None = None) -> None:
        super().__init__()
        self.settings, self.cwd = settings, cwd
        self.agent_factory, self.resume = agent_factory, resume
        self.agent: Any = None
        self.stats = SessionStats()
        self._events: deque = deque()
        self._events_posted = False
        self._step: DenoiseStep | None = None
        self._step_posted = False
        self._waiting: list[str] = []  # tasks sent before the agent was ready or while busy
        self._agent_worker: Worker | None = None
        self._last_ctrl_c = 0.0
        self._paths_cache: tuple[float, list[str]] = (0.0, [])
        self._pending_answer: asyncio.Future | None = None  # the approval being asked

    # --- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ConversationView(id="conversation")
        yield DenoiseView(id="denoise")
        yield ApprovalPrompt(id="approval")
        yield InputEditor(paths=self._workspace_paths, id="input")
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        self.query_one(InputEditor).focus()
        self.status.show(engine=self.settings.engine_name().split(":")[0],
                         model=self.settings.model or "", approval=self.settings.approval,
                         state="loading")
        for notice in self.settings.notices:
            self.say(notice, severity="warning", timeout=15)
        self.load_agent(self.resume)

    @property
    def view(self) -> ConversationView:
        return self.query_one(ConversationView)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    # --- loading the agent (and its model) in the background -----------------------------
    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def load_agent(self, resume: str | None) -> None:
        try:
            agent = self.agent_factory(self.approve, resume)
        except Exception as exc:  # every failure becomes a notification, never a traceback
            self.post_message(AgentFailed(describe_error(exc)))
            return
        self.post_message(AgentReady(agent))

    def loading_progress(self, fraction: float, message: str) -> None:
        """From the loading thread: move the progress bar."""
        self.call_from_thread(self.status.loading, fraction, message)

    @on(AgentReady)
    def _agent_ready(self, message: AgentReady) -> None:
        self.agent = agent = message.agent
        if hasattr(agent, "set_on_step"):
            agent.set_on_step(self._on_step)
        info = getattr(getattr(agent, "engine", None), "info", None)
        if info is not None:
            self.status.show(engine=info.name, model=info.model, context_window=info.context_window,
                             context_source=info.context_source)
        self.status.show(state="ready")
        session = getattr(agent, "session", None)
        if session is not None and self.resume:
            self.replay(session.events())
        if self._waiting:
            self._start_task(self._waiting.pop(0))

    @on(AgentFailed)
    def _agent_failed(self, message: AgentFailed) -> None:
        self.status.show(state="error")
        self.say(message.message, title="the model could not start", severity="error", timeout=30)
        self.view.add_note(message.message, "error")
        if self._waiting:
            self.view.add_note(f"{len(self._waiting)} queued message(s) not sent.", "dim")
            self._waiting.clear()

    # --- sending a task ------------------------------------------------------------------
    @on(InputEditor.Submitted)
    def _submitted(self, message: InputEditor.Submitted) -> None:
        text = message.text.strip()
        if text.startswith("/"):
            self.run_command(text)
            return
        self.view.add_user(text)
        if self.agent is None or self.busy:
            self._waiting.append(text)
            what = "the model is loading" if self.agent is None else "the agent is working"
            self.view.add_note(f"queued: {what}; it will be sent after.", "dim")
            return
        self._start_task(text)

    @property
    def busy(self) -> bool:
        worker = self._agent_worker
        return worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    def _start_task(self, text: str) -> None:
        self.status.show(state="working")
        self._agent_worker = self.run_agent(text)

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def run_agent(self, text: str) -> None:
        try:
            async for event in self.agent.run(text):
                self.queue_event(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.queue_event(ErrorEvent(describe_error(exc), error_source(exc)))
            self.queue_event(TurnFinished("error", ""))

    def queue_event(self, event: Any) -> None:
        self._events.append(event)
        if not self._events_posted:
            self._events_posted = True
            self.post_message(EventsPending())

    def _on_step(self, step: DenoiseStep) -> None:
        self._step = step
        if not self._step_posted:
            self._step_posted = True
            self.post_message(StepPending())

    @on(StepPending)
    def _draw_step(self) -> None:
        self._step_posted = False
        if self._step is not None:
            self.query_one(DenoiseView).show_step(self._step)

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        ended = (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
        if event.worker is self._agent_worker and event.state in ended:
            if self.agent is not None and self._waiting:
                self._start_task(self._waiting.pop(0))
            elif event.state != WorkerState.ERROR:
                self.status.show(state="ready")

    # --- drawing events ------------------------------------------------------------------
    @on(EventsPending)
    def _drain(self) -> None:
        self._events_posted = False
        events = list(self._events)
        self._events.clear()
        self.apply_events(events)

    def apply_events(self, events: list[Any], live: bool = True) -> None:
        """Draw a batch of agent events; the reply text of consecutive blocks becomes one write.
        The text is the agent's parse of the reply (TextDelta): tool-call markup never reaches
        the screen, however the blocks cut it."""
        text: list[str] = []
        view = self.view

        def write_text() -> None:
            if text:
                view.append_text("".join(text))
                text.clear()

        for event in events:
            if isinstance(event, TextDelta):
                text.append(event.text)
                continue
            write_text()
            if isinstance(event, BlockCommitted):
                self.stats.add_block(event.block)
                if event.block.index == 0:  # a new reply: the previous one's text is finished
                    view.end_assistant()
            else:
                self.apply_event(event, live)
        write_text()
        self._show_stats()

    def apply_event(self, event: Any, live: bool) -> None:
        view = self.view
        if isinstance(event, UserMessage):
            if not live:
                view.add_user(event.text)
        elif isinstance(event, ToolCallParsed):
            self.stats.tool_calls += 1
            view.card(event.call, new=True)
        elif isinstance(event, ApprovalNeeded):
            view.card(event.call).set_status("approval")
        elif isinstance(event, ApprovalAnswered):
            if event.answer == "no":
                view.card(event.call).set_status("denied")
        elif isinstance(event, ToolStarted):
            view.card(event.call).set_status("running")
        elif isinstance(event, ToolFinished):
            view.card(event.call).show_result(event.ok, event.output, event.seconds, event.data)
        elif isinstance(event, Compacted) and not event.dropped_messages:
            view.add_note("nothing to compact yet: the conversation is short", "dim")
        elif isinstance(event, Compacted):
            view.add_note(f"compacted: {event.dropped_messages} messages summarised, "
                          f"{event.tokens_before} → {event.tokens_after} tokens", "dim")
        elif isinstance(event, Notice):
            view.add_note(event.text, "dim")
            if live:
                self.say(event.text)
        elif isinstance(event, ErrorEvent):
            view.add_note(event.message, "error")
            if live:
                self.say(event.message, severity="error", timeout=15)
        elif isinstance(event, TurnFinished):
            self.stats.turns += 1
            note = None if event.reason in ("done", "error") else event.reason.replace("_", " ")
            view.end_assistant(note)
            if not live:
                view.cancel_running()

    def _show_stats(self) -> None:
        generated = self.stats.generated
        last = generated.last
        changes: dict[str, Any] = dict(context_used=self.stats.context_used,
                                       session_tokens=generated.tokens,
                                       session_seconds=generated.generation_seconds)
        if last is not None:
            changes.update(block_tokens=last.tokens, block_forward_passes=last.forward_passes, block_ms=last.ms)
        info = getattr(getattr(self.agent, "engine", None), "info", None)
        if info is not None:  # a server's window is learned with its first request
            changes.update(model=info.model, context_window=info.context_window, context_source=info.context_source)
        self.status.show(**changes)

    def replay(self, events: list[Any]) -> None:
        """Draw a resumed session's events, finished."""
        self.apply_events(list(events), live=False)
        self.view.end_assistant()
        self.view.add_note(f"resumed session ({len(events)} events)", "dim")

    # --- approvals -----------------------------------------------------------------------
    async def approve(self, request: ApprovalNeeded) -> str:
        """The agent's approver: wait for the user's y / a / n."""
        answer: asyncio.Future = asyncio.get_running_loop().create_future()
        self.post_message(ApprovalRequested(request, answer))
        return await answer

    @on(ApprovalRequested)
    def _ask(self, message: ApprovalRequested) -> None:
        self._pending_answer = message.answer
        self.query_one(ApprovalPrompt).ask(message.request)
        self._keep_bottom()

    @on(ApprovalPrompt.Answered)
    def _answered(self, message: ApprovalPrompt.Answered) -> None:
        future = self._pending_answer
        if future is not None and not future.done():
            future.set_result(message.answer)
        self._pending_answer = None
        self.query_one(InputEditor).focus()
        self._keep_bottom()

    # --- keys ----------------------------------------------------------------------------
    def action_cancel(self) -> None:
        if not self.busy:
            return
        self._agent_worker.cancel()
        self._events.clear()
        prompt = self.query_one(ApprovalPrompt)
        if prompt.request is not None:
            prompt.close()
            self.query_one(InputEditor).focus()
        self.view.cancel_running()
        self.status.show(state="ready")

    def action_interrupt(self) -> None:
        now = time.monotonic()
        if now - self._last_ctrl_c < QUIT_WINDOW_S:
            self.exit()
            return
        self._last_ctrl_c = now
        self.action_cancel()
        self.notify("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW_S)

    def action_toggle_denoise(self) -> None:
        self.query_one(DenoiseView).toggle()

    def action_command(self, line: str) -> None:
        self.run_command(line)

    def run_command(self, line: str) -> None:
        from clover_code.ui.tui.commands import run_command

        run_command(self, line)

    # --- helpers -------------------------------------------------------------------------
    def say(self, text: str, **options: Any) -> None:
        """A notification of text from the agent, tools or config: shown as written, never
        read as markup (`[/]` would raise) nor passed to the terminal raw."""
        self.notify(visible(text), markup=False, **options)

    def _keep_bottom(self) -> None:
        """The prompt below changed the view's height: show its end again (unless scrolled up)."""
        view = self.view
        if not view._anchor_released:
            self.call_after_refresh(view.scroll_end, animate=False)

    def _workspace_paths(self) -> list[str]:
        from clover_code.ui.tui.commands import workspace_paths

        at, paths = self._paths_cache
        if time.monotonic() - at > 10:
            paths = workspace_paths(self.cwd, getattr(getattr(self.agent, "ctx", None), "git", None))
            self._paths_cache = (time.monotonic(), paths)
        return paths


# Errors whose message says what to do (a checkpoint's is a ToolError): shown as they are.
ACTIONABLE_ERRORS = (EngineError, ConfigError, ToolError, SessionError)


def describe_error(exc: BaseException) -> str:
    """One line a user can act on, without a traceback."""
    if isinstance(exc, ACTIONABLE_ERRORS):
        return str(exc)
    return f"{type(exc).__name__}: {exc} (see the session log in .clover/sessions for details)"


def _factory_of(build_agent: AgentBuilder, settings: Settings, cwd: Path, app_ref: list) -> AgentFactory:
    """The app's agent factory from the wiring's builder; it reads `settings` when called,
    so `/model` and `/mode` changes apply to the next agent."""
    def build(approver, resume):
        return build_agent(settings, cwd, approver, resume=resume, on_progress=app_ref[0].loading_progress)

    return build


def make_app(settings: Settings, cwd: Path | None = None, *, agent_factory: AgentFactory | None = None,
             build_agent: AgentBuilder | None = None, resume: str | None = None) -> CloverApp:
    """The app; give it `build_agent` (what the CLI does) or a ready `agent_factory` (tests)."""
    cwd = Path(cwd or Path.cwd()).resolve()
    app_ref: list = []
    if agent_factory is None:
        if build_agent is None:
            raise TypeError("make_app needs build_agent or agent_factory")
        agent_factory = _factory_of(build_agent, settings, cwd, app_ref)
    app = CloverApp(settings, cwd, agent_factory, resume)
    app_ref.append(app)
    return app


def run_app(settings: Settings, cwd: Path, build_agent: AgentBuilder, resume: str | None = None) -> int:
    """`clover-code` without --task: the TUI until the user quits; its exit code."""
    app = make_app(settings, cwd, build_agent=build_agent, resume=resume)
    app.run()
    return app.return_code or 0
