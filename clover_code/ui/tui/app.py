"""The clover-code TUI: `make_app()` builds it (CLI and tests), `run_app()` runs it.

The agent runs in a worker; its events are queued and drained by one message handler
per frame-ish burst. Widgets only draw: none of them calls the engine or the agent.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import TextArea
from textual.worker import Worker, WorkerState

from clover_code.agent.events import (
    ApprovalAnswered,
    ApprovalNeeded,
    BlockCommitted,
    Compacted,
    ErrorEvent,
    Event,
    Notice,
    Redone,
    Rewound,
    TextDelta,
    ToolCallParsed,
    ToolFinished,
    ToolOutput,
    ToolStarted,
    TurnFinished,
    UserMessage,
    UserShell,
    error_source,
)
from clover_code.agent.session import SessionError, sessions_dir
from clover_code.engine import DenoiseStep, ToolCall
from clover_code.settings import Settings
from clover_code.ui.launch import AgentBuilder
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui import live_shell, rewind
from clover_code.ui.tui.command_host import Severity
from clover_code.ui.tui.commands import HELP, other_sessions_note, run_command, set_mode, workspace_paths
from clover_code.ui.tui.completion import Completer, commands_from_help
from clover_code.ui.tui.errors import describe_error
from clover_code.ui.tui.feature_commands import next_mode
from clover_code.ui.tui.messages import (
    AgentFailed,
    AgentReady,
    ApprovalRequested,
    EventsPending,
    LoadRequest,
    StepPending,
)
from clover_code.ui.tui.prompt_history import PromptHistory
from clover_code.ui.tui.session_stats import SessionStats
from clover_code.ui.tui.transcript_turns import TranscriptTurns
from clover_code.ui.tui.usage import UsageLog
from clover_code.ui.tui.widgets.approval_prompt import ApprovalPrompt
from clover_code.ui.tui.widgets.completion_popup import CompletionPopup
from clover_code.ui.tui.widgets.conversation import ConversationView
from clover_code.ui.tui.widgets.denoise_view import DenoiseView
from clover_code.ui.tui.widgets.input_editor import InputEditor
from clover_code.ui.tui.widgets.spinner import Spinner, SpinnerState
from clover_code.ui.tui.widgets.status_bar import StatusBar, short_model
from clover_code.ui.tui.widgets.tool_card import summarize, tool_label

if TYPE_CHECKING:  # types only: the first paint must not wait for the agent's imports
    from clover_code.agent.loop import Agent
    from clover_code.agent.permissions import Approver
    from clover_code.ui.tui.widgets.history_search import HistorySearch

# agent_factory(approver, resume) -> Agent. May take long (it can load a model): runs in a thread.
AgentFactory = Callable[["Approver", "str | None"], "Agent"]
QUIT_WINDOW_S = 2.0
# Signals that end the app as a quit does: the terminal gets its modes back (alternate
# screen off, mouse tracking off, cursor shown) instead of being left as the app set it.
QUIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
T = TypeVar("T")


class CloverApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "clover-code"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "cancel", priority=True),
        Binding("ctrl+c", "interrupt", "clear / cancel / quit (twice)", priority=True),
        Binding("f2", "toggle_denoise", "denoise view"),
        Binding("ctrl+l", "command('/clear')", "clear", show=False),
        Binding("shift+tab", "cycle_mode", "approval mode", priority=True),
        # priority: handled in the app's turn, so keys typed right behind it wait for the search
        Binding("ctrl+r", "history_search", "search history", show=False, priority=True),
    ]

    def __init__(self, settings: Settings, cwd: Path, agent_factory: AgentFactory,
                 resume: str | None = None) -> None:
        super().__init__()
        self.settings, self.cwd = settings, cwd
        self.agent_factory, self.resume = agent_factory, resume
        self.agent: Agent | None = None
        self.session_id: str | None = None  # said when the app quits, with how to resume it
        self.stats = SessionStats()
        self._events: deque[Event] = deque()
        self._events_posted = False
        self._step: DenoiseStep | None = None
        self._step_posted = False
        # Sent before the agent was ready or while it worked: (for the model, as typed).
        self._waiting: list[tuple[str, str]] = []
        self._agent_worker: Worker[None] | None = None
        self._loading: LoadRequest | None = None  # the agent being built, if any
        self._last_ctrl_c = 0.0
        self._paths_cache: tuple[float, list[str]] = (0.0, [])
        self._pending_answer: asyncio.Future[str] | None = None  # the approval being asked
        self._running_tool: tuple[ToolCall, float] | None = None  # the call running now, since when
        self.turns = TranscriptTurns()  # which transcript widget starts each turn
        self.usage = UsageLog()  # tokens per turn, for /cost
        self.prompt_history = PromptHistory()  # prompts of every session, for Up/Down and Ctrl+R
        self._history_search: HistorySearch | None = None  # Ctrl+R's, once asked for
        self.completer: Completer | None = None  # the /command and @path popup's (on mount)
        self._started_mode = settings.approval  # Shift+Tab reaches full-auto only from a session started in it

    # --- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ConversationView(id="conversation")
        yield DenoiseView(id="denoise")
        yield ApprovalPrompt(id="approval")
        yield CompletionPopup(id="completion")
        yield Spinner(self._spinner_state, id="spinner")
        yield InputEditor(paths=self._workspace_paths, id="input")
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        self.editor.focus()
        self.editor.sent[:0] = self.prompt_history.texts()  # Up walks earlier sessions' prompts too
        self.completer = Completer(self.editor, self.query_one(CompletionPopup), commands_from_help(HELP),
                                   self._workspace_paths)
        self.editor.key_filter = self.completer.key
        self._catch_quit_signals()
        self.status.show(engine=self.settings.engine_name().split(":")[0],
                         model=self.settings.model or "", approval=self.settings.approval,
                         state="loading", context_used=None)
        self.view.add_note(self._welcome(), "dim")
        for notice in self.settings.notices:  # in the transcript: a toast would cover the editor
            self.view.add_note(notice, "warning")
        self.load_agent(self.resume)

    def on_unmount(self) -> None:
        self._catch_quit_signals(False)

    def _welcome(self) -> str:
        home = str(Path.home())
        where = str(self.cwd)
        where = "~" + where[len(home):] if where == home or where.startswith(home + os.sep) else where
        engine = self.settings.engine_name().split(":")[0]
        model = f" {short_model(self.settings.model)}" if self.settings.model else ""
        return (f"clover-code in {where} · {engine}{model} · /help lists commands · "
                "Esc stops a reply · Ctrl+C twice quits")

    def _catch_quit_signals(self, catch: bool = True) -> None:
        try:
            loop = asyncio.get_running_loop()
            for number in QUIT_SIGNALS:
                if catch:
                    loop.add_signal_handler(number, self._quit_on_signal, number)
                else:
                    loop.remove_signal_handler(number)
        except (RuntimeError, ValueError, NotImplementedError):
            pass  # not the main thread (some test runners), or no signals here: nothing to restore

    def _quit_on_signal(self, number: int) -> None:
        self.exit(return_code=128 + number)  # as a shell reports a process ended by that signal

    @property
    def view(self) -> ConversationView:
        return self.query_one(ConversationView)

    @property
    def status(self) -> StatusBar:
        return self.query_one(StatusBar)

    @property
    def editor(self) -> InputEditor:
        return self.query_one(InputEditor)

    # --- loading the agent (and its model) in the background -----------------------------
    def load_agent(self, resume: str | None = None, *, model: str | None = None) -> None:
        """Build an agent in a thread. A current agent stays until the new one is ready (and
        stays on if it fails): a mistyped `/model` path never leaves the session without one."""
        request = LoadRequest(resume, model, self.settings.model if model is not None else None)
        if model is not None:
            self.settings.model = model  # the factory reads the settings when it runs
        self._loading = request
        self.status.show(state="loading", **({"model": model} if model is not None else {}))
        self._build_agent(request)

    @work(thread=True, exclusive=True, group="load", exit_on_error=False)
    def _build_agent(self, request: LoadRequest) -> None:
        try:
            agent = self.agent_factory(self.approve, request.resume)
            context = agent.conversation.tokens(agent.engine)
        except Exception as exc:  # every failure becomes a notification, never a traceback
            self.post_message(AgentFailed(describe_error(exc), request))
            return
        self.post_message(AgentReady(agent, request, context))

    def loading_progress(self, fraction: float, message: str) -> None:
        """From the loading thread: move the progress bar."""
        self.call_from_thread(self.status.show_progress, fraction, message)

    @property
    def loading(self) -> bool:
        return self._loading is not None

    @on(AgentReady)
    def _agent_ready(self, message: AgentReady) -> None:
        if message.request is not self._loading:
            return  # a load asked for before the latest one
        self._loading = None
        previous, agent = self.agent, message.agent
        self.agent = agent
        self.session_id = agent.session.id if agent.session is not None else None
        agent.set_on_step(self._on_step)
        info = agent.engine.info
        self.status.show(engine=info.name, model=info.model, context_window=info.context_window,
                         context_source=info.context_source, state="ready")
        if message.context_tokens is not None:
            self.stats.context_used = message.context_tokens
            self.status.show(context_used=message.context_tokens)
        if previous is not None:
            self._close_engine(previous)
        else:
            other_sessions_note(self)  # a second session in this repository: say it at once
        if message.request.model is not None:
            self.note(f"now on {short_model(info.model)}", "dim")
        if message.request.resume is not None and message.request.model is None and agent.session is not None:
            if previous is not None:
                self.view.clear()
            self.replay(agent.session.events())
        self._send_next()

    def _close_engine(self, replaced: Agent) -> None:
        """The replaced agent's engine lets its model and connections go, its log its file
        (the new agent has the same log open when it goes on with the conversation)."""
        shared = self.agent is not None and replaced.engine is self.agent.engine
        self.run_worker(replaced.aclose(engine=not shared), group="close", exit_on_error=False)

    @on(AgentFailed)
    def _agent_failed(self, message: AgentFailed) -> None:
        if message.request is not self._loading:
            return
        self._loading = None
        request = message.request
        if request.model is not None:
            self.settings.model = request.previous_model  # the next /model or /resume builds on the old one
        if self.agent is not None:  # the agent in use stays: say so, and carry on with it
            info = self.agent.engine.info
            self.status.show(state="ready", model=info.model)
            what = f"model {request.model}" if request.model is not None else f"session {request.resume}"
            self.say(message.message, title=f"could not load {what}", severity="error", timeout=15)
            self.note(f"could not load {what}: {message.message}\nstill on {short_model(info.model)}", "error")
            self._send_next()
            return
        self.status.show(state="error")
        self.say(message.message, title="the model could not start", severity="error", timeout=30)
        self.note(message.message, "error")
        if self._waiting:
            self._hand_back_waiting()
            self.note("The queued message is back in the editor: nothing was sent.", "dim")

    # --- sending a task ------------------------------------------------------------------
    @on(InputEditor.Submitted)
    def _submitted(self, message: InputEditor.Submitted) -> None:
        text = message.text.strip()
        self.prompt_history.add(text, self.cwd)
        self.view.scroll_end(animate=False)  # what answers this must be seen
        if text.startswith("/"):
            self.run_command(text)
            return
        if self.agent is None or self.busy or self.loading:
            # Kept out of the transcript until sent: mounted now, it would land inside the
            # reply being written; Esc or Ctrl+C hand it back instead of sending it.
            self._waiting.append((text, message.shown.strip()))
            self._show_waiting()
            return
        self._start_task(text, message.shown.strip())

    @property
    def busy(self) -> bool:
        worker = self._agent_worker
        return worker is not None and worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    def _start_task(self, text: str, shown: str | None = None) -> None:
        if live_shell.is_user_command(text):  # `!cmd`: the user's own command, its output for the model
            self.status.show(state="working")
            self._agent_worker = self.run_worker(live_shell.user_command(self, text), group="agent",
                                                 exclusive=True, exit_on_error=False)
            return
        widget = self.view.add_user(text, shown)
        if self.agent is not None:
            self.turns.mark(widget, self.agent.conversation.turn_count)  # what a rewind to it hides
        self.view.scroll_end(animate=False)
        self.status.show(state="working")
        self._agent_worker = self.run_agent(text)

    def _send_next(self) -> None:
        if self._waiting and self.agent is not None and not self.busy and not self.loading:
            self._start_task(*self._waiting.pop(0))
        self._show_waiting()

    def _show_waiting(self) -> None:
        n = len(self._waiting)
        what = "1 message" if n == 1 else f"{n} messages"
        self.editor.border_title = f"{what} queued, sent when the agent is free · Esc takes back" if n else ""

    def _hand_back_waiting(self) -> None:
        """Queued messages return to the editor, unsent (Esc, Ctrl+C, a failed load)."""
        if self._waiting:
            self.editor.restore("\n\n".join(shown for _, shown in self._waiting))
            self._waiting.clear()
        self._show_waiting()

    @work(exclusive=True, group="agent", exit_on_error=False)
    async def run_agent(self, text: str) -> None:
        agent = self.agent
        if agent is None:
            return
        try:
            async for event in agent.run(text):
                self.queue_event(event)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.queue_event(ErrorEvent(describe_error(exc), error_source(exc)))
            self.queue_event(TurnFinished("error", ""))

    def queue_event(self, event: Event) -> None:
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
            if event.state != WorkerState.ERROR:
                self.status.show(state="ready")
            self._send_next()

    # --- drawing events ------------------------------------------------------------------
    @on(EventsPending)
    def _drain(self) -> None:
        self._events_posted = False
        events = list(self._events)
        self._events.clear()
        self.apply_events(events)

    def apply_events(self, events: list[Event], live: bool = True) -> None:
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
            self.usage.add(event)
            if isinstance(event, BlockCommitted):
                self.stats.add_block(event.block)
                if event.block.index == 0:  # a new reply: the previous one's text is finished
                    view.end_assistant()
            else:
                self.apply_event(event, live)
        write_text()
        self._show_stats()

    def apply_event(self, event: Event, live: bool) -> None:
        view = self.view
        if isinstance(event, UserMessage):
            if not live:
                self.turns.mark(view.add_user(event.text))
            if event.attachments:  # what @path put in the message, as the model got it
                view.add_note("attached " + ", ".join(a.path + (f" ({a.note})" if a.note else "")
                                                      for a in event.attachments), "dim")
        elif isinstance(event, ToolCallParsed):
            self.stats.tool_calls += 1
            view.card(event.call, new=True, touches=event.touches)
        elif isinstance(event, ApprovalNeeded):
            view.card(event.call).set_status("approval")
        elif isinstance(event, ApprovalAnswered):
            if event.answer == "no":
                view.card(event.call).set_status("denied")
        elif isinstance(event, ToolStarted):
            live_shell.started(view, event, live)
            if live:
                self._running_tool = (event.call, time.monotonic())  # the spinner names it
        elif isinstance(event, ToolOutput):
            live_shell.output(view, event)
        elif isinstance(event, ToolFinished):
            self._running_tool = None
            card = view.card(event.call)
            live_shell.finished(card)
            card.show_result(event.ok, event.output, event.seconds, event.data)
        elif isinstance(event, UserShell):
            self._running_tool = None
            live_shell.user_shell_done(view, event)
        elif isinstance(event, (Rewound, Redone)):
            rewind.show(self, event, live)
        elif isinstance(event, Compacted):
            self._show_compacted(event)
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

    def _show_compacted(self, event: Compacted) -> None:
        if not event.dropped_messages:
            self.view.add_note("nothing to compact yet: the conversation is short", "dim")
            return
        self.stats.context_used = event.tokens_after  # the meter drops now, not at the next reply
        self.view.add_note(f"compacted: {event.dropped_messages} messages summarised, "
                           f"{event.tokens_before} → {event.tokens_after} tokens", "dim")

    def _show_stats(self) -> None:
        generated = self.stats.generated
        last = generated.last
        changes: dict[str, Any] = dict(context_used=self.stats.context_used,
                                       session_tokens=generated.tokens,
                                       session_seconds=generated.generation_seconds)
        if last is not None:
            changes.update(block_tokens=last.tokens, block_forward_passes=last.forward_passes, block_ms=last.ms)
        if self.agent is not None:  # a server's window is learned with its first request
            info = self.agent.engine.info
            changes.update(model=info.model, context_window=info.context_window, context_source=info.context_source)
        self.status.show(**changes)

    def replay(self, events: list[Event]) -> None:
        """Draw a resumed session's events, finished."""
        self.turns, self.usage = TranscriptTurns(), UsageLog()  # counted again from its start
        self.apply_events(list(events), live=False)
        self.view.end_assistant()
        self.view.add_note(f"resumed session ({len(events)} events)", "dim")

    # --- approvals -----------------------------------------------------------------------
    async def approve(self, request: ApprovalNeeded) -> str:
        """The agent's approver: wait for the user's y / a / n."""
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.post_message(ApprovalRequested(request, answer))
        return await answer

    @on(ApprovalRequested)
    def _ask(self, message: ApprovalRequested) -> None:
        self._pending_answer = message.answer
        self.editor.display = False  # its rows go to the preview; nothing can be typed meanwhile
        self.query_one(ApprovalPrompt).ask(message.request)
        self._keep_bottom()

    @on(ApprovalPrompt.Answered)
    def _answered(self, message: ApprovalPrompt.Answered) -> None:
        future = self._pending_answer
        if future is not None and not future.done():
            future.set_result(message.answer)
        self._pending_answer = None
        # An answer is the user sending something: what follows it must be seen, whatever moved
        # the transcript while the prompt filled the screen (a long diff's card scrolled into view).
        self.view.anchor()
        self._editor_back()

    def _editor_back(self) -> None:
        self.editor.display = True
        self.editor.focus()
        self._keep_bottom()

    # --- keys ----------------------------------------------------------------------------
    def action_cancel(self) -> None:
        """Esc: stop the running turn; messages queued behind it come back to the editor."""
        self._hand_back_waiting()
        if not self.busy:
            if self.turns.escape_twice() and self.agent is not None:  # Esc Esc: rewind, as in Claude Code
                rewind.open_picker(self)
            return
        if self._agent_worker is not None:
            self._agent_worker.cancel()
        self._events.clear()
        prompt = self.query_one(ApprovalPrompt)
        if prompt.request is not None:
            prompt.close()
            self._editor_back()
        self.view.cancel_running()
        self.status.show(state="ready")

    def action_interrupt(self) -> None:
        """Ctrl+C: clear the editor; else stop the turn; else quit, if pressed again soon."""
        editor = self.editor
        if editor.display and editor.text and not self._waiting:
            editor.take_text()
            self.say("Cleared (Up brings it back).", timeout=QUIT_WINDOW_S)
            return
        now = time.monotonic()
        if now - self._last_ctrl_c < QUIT_WINDOW_S:
            self.quit()
            return
        self._last_ctrl_c = now
        self.action_cancel()
        self.say("Press Ctrl+C again to quit.", timeout=QUIT_WINDOW_S)

    @on(InputEditor.QuitRequested)
    def quit(self) -> None:
        self.exit()

    @on(InputEditor.ScrollRequested)
    def _scroll(self, message: InputEditor.ScrollRequested) -> None:
        self.view.scroll_by_key(message.where)

    def on_key(self, event: events.Key) -> None:
        """A key no widget took while the editor was not focused (a tool card was clicked):
        typing goes to the editor rather than nowhere."""
        editor = self.editor
        if not editor.display or self.focused is editor or not event.is_printable or not event.character:
            return
        if isinstance(self.focused, ApprovalPrompt) or self.screen is not editor.screen:
            return  # y/a/n, or a picker open over the transcript: its keys are its own
        editor.focus()
        editor.insert(event.character)
        event.stop()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Esc and Ctrl+R belong to an open picker, popup or search first (the app's bindings of
        them have priority, so they would reach them never)."""
        if action == "cancel":
            search = self._history_search
            completer = self.completer
            open_popup = (completer is not None and completer.popup.is_open) or (search is not None and search.is_open)
            return not (open_popup or self.screen.is_modal)
        if action == "history_search":  # an open search's Ctrl+R is its own (next match)
            search = self._history_search
            return not (self.screen.is_modal or (search is not None and search.is_open))
        return True

    def action_cycle_mode(self) -> None:
        """Shift+Tab: the next approval mode, as /mode would set it; the status bar shows it."""
        current = self.agent.permissions.mode if self.agent is not None else self.settings.approval
        set_mode(self, next_mode(current, self._started_mode))

    async def action_history_search(self) -> None:
        """Ctrl+R: the prompts sent before, searched (mounted on first use: not before first paint)."""
        if not self.editor.display:
            return
        if self._history_search is None:
            from clover_code.ui.tui.widgets.history_search import HistorySearch

            self._history_search = HistorySearch(self.prompt_history.search, self._history_chosen,
                                                 id="history-search")
            await self.mount(self._history_search, before=self.editor)
        self._history_search.open(self.editor.text.strip())

    def _history_chosen(self, text: str | None) -> None:
        if text is not None:
            self.editor.load_text(text)
            self.editor.move_cursor(self.editor.document.end)
        self.editor.focus()

    @on(TextArea.Changed, "#input")
    def _input_changed(self) -> None:
        if self.completer is not None:
            self.completer.text_changed()

    def restore_prompt(self, text: str) -> bool:
        """A rewound message back in the editor, to edit and send again (unless one is being
        typed); whether it was put there."""
        put = bool(text) and not self.editor.text.strip()
        if put:
            self.editor.load_text(text)
            self.editor.move_cursor(self.editor.document.end)
        self.editor.focus()
        return put

    def take_back_prompt(self, text: str) -> None:
        """A redo: the rewound message restore_prompt put in the editor goes, unless edited."""
        if self.editor.text == text:
            self.editor.clear()

    def _spinner_state(self) -> SpinnerState | None:
        if not self.busy:
            self._running_tool = None
            return None
        waiting = self._pending_answer is not None
        label = "Waiting for your answer" if waiting else "Working"
        turn = self.usage.turns[-1] if self.usage.turns and not self.usage.turns[-1].done else None
        tokens = turn.tokens_out if turn is not None else 0
        if self._running_tool is not None and not waiting:
            call, since = self._running_tool
            card = self.view.cards.get(call.id)
            what = summarize(card.touches if card is not None else None, 500)
            return SpinnerState(label, tokens, tool_label(call.name), what, since)
        return SpinnerState(label, tokens)

    def action_toggle_denoise(self) -> None:
        self.query_one(DenoiseView).toggle()

    def action_command(self, line: str) -> None:
        self.run_command(line)

    def run_command(self, line: str) -> None:
        run_command(self, line)

    # --- what commands use (command_host.CommandHost) ------------------------------------
    def say(self, text: str, *, severity: Severity = "information", timeout: float | None = None,
            title: str = "") -> None:
        """A notification of text from the agent, tools or config: shown as written, never
        read as markup (`[/]` would raise) nor passed to the terminal raw."""
        self.notify(visible(text), title=visible(title), markup=False, severity=severity, timeout=timeout)

    def note(self, text: str, kind: str = "info") -> None:
        self.view.add_note(text, kind)
        self.view.scroll_end(animate=False)

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        self.run_worker(work, group="command", exit_on_error=False)

    def in_thread(self, job: Callable[[], T], done: Callable[[T], None]) -> None:
        def run() -> None:
            try:
                result = job()
            except Exception as exc:
                self.call_from_thread(self.report, exc)
            else:
                self.call_from_thread(done, result)

        self.run_worker(run, thread=True, group="command", exit_on_error=False)

    def report(self, exc: BaseException, doing: str = "") -> None:
        self.note(f"{doing}{describe_error(exc)}", "error")

    def clear_session(self) -> None:
        self.view.clear()
        if self.agent is not None:
            self.agent.clear()
            self.stats.context_used = self.agent.conversation.tokens()
        self.status.show(context_used=self.stats.context_used)

    # --- helpers -------------------------------------------------------------------------
    def _keep_bottom(self) -> None:
        """The prompt below changed the view's height: show its end again (unless scrolled up)."""
        view = self.view
        if not view._anchor_released:
            self.call_after_refresh(view.scroll_end, animate=False)

    def _workspace_paths(self) -> list[str]:
        at, paths = self._paths_cache
        if time.monotonic() - at > 10:
            paths = workspace_paths(self.cwd, self.agent.ctx.git if self.agent is not None else None)
            self._paths_cache = (time.monotonic(), paths)
        return paths


def _factory_of(build_agent: AgentBuilder, settings: Settings, cwd: Path, app_ref: list[CloverApp]) -> AgentFactory:
    """The app's agent factory from the wiring's builder; it reads `settings` when called,
    so `/model` and `/mode` changes apply to the next agent."""
    def build(approver: Approver, resume: str | None) -> Agent:
        return build_agent(settings, cwd, approver, resume=resume, on_progress=app_ref[0].loading_progress)

    return build


def make_app(settings: Settings, cwd: Path | None = None, *, agent_factory: AgentFactory | None = None,
             build_agent: AgentBuilder | None = None, resume: str | None = None) -> CloverApp:
    """The app; give it `build_agent` (what the CLI does) or a ready `agent_factory` (tests)."""
    cwd = Path(cwd or Path.cwd()).resolve()
    app_ref: list[CloverApp] = []
    if agent_factory is None:
        if build_agent is None:
            raise TypeError("make_app needs build_agent or agent_factory")
        agent_factory = _factory_of(build_agent, settings, cwd, app_ref)
    app = CloverApp(settings, cwd, agent_factory, resume)
    app_ref.append(app)
    return app


def _has_events(cwd: Path, session_id: str) -> bool:
    try:
        log = sessions_dir(cwd) / f"{session_id}.jsonl"
        return log.is_file() and log.stat().st_size > 0
    except (OSError, SessionError):
        return False


def run_app(settings: Settings, cwd: Path, build_agent: AgentBuilder, resume: str | None = None) -> int:
    """`clover-code` without --task: the TUI until the user quits; its exit code."""
    from clover_code.ui.tui.terminal_guard import watch_terminal

    app = make_app(settings, cwd, build_agent=build_agent, resume=resume)
    watch_terminal(sys.__stdin__.fileno() if sys.__stdin__ is not None else 0)
    app.run()
    if app.session_id is not None and _has_events(cwd, app.session_id):  # the terminal is the user's again
        print(f"Session {app.session_id} saved; continue it with:\n  clover-code --resume {app.session_id}",
              file=sys.stderr)
    return app.return_code or 0
