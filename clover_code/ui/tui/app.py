"""The clover-code TUI: `make_app()` builds it (CLI and tests), `run_app()` runs it.

The app is the shell: the widgets, the keys, and what a command may use of it
(commands/host.CommandHost). The other jobs are parts it composes: the agent driver builds
the agent and runs its turns in workers (agent_driver.py), the transcript draws their events
(transcript.py), the session ledger counts them (ledger.py), and the command table holds the
slash commands (commands/). Widgets only draw: none of them calls the engine or the agent.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from textual import events, on
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import TextArea
from textual.worker import Worker, WorkerState

from clover_code.agent.bug_log import keep_traceback
from clover_code.agent.context_count import count_context
from clover_code.agent.events import ApprovalNeeded, Compacted, Event, Redone, Rewound, TodosChanged, TurnFinished
from clover_code.agent.session import SessionError, sessions_dir
from clover_code.settings import Settings
from clover_code.ui.launch import AgentBuilder
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui import live_shell, plan_offer, rewind
from clover_code.ui.tui.agent_driver import AgentDriver, AgentFactory
from clover_code.ui.tui.commands.builtin import builtin_commands
from clover_code.ui.tui.commands.custom import add_custom_commands
from clover_code.ui.tui.commands.host import Severity
from clover_code.ui.tui.commands.mcp import start_servers
from clover_code.ui.tui.commands.session import next_mode, set_mode
from clover_code.ui.tui.commands.workspace import other_sessions_note
from clover_code.ui.tui.completion import Completer
from clover_code.ui.tui.errors import describe_error
from clover_code.ui.tui.ledger import SessionLedger
from clover_code.ui.tui.messages import (
    AgentFailed,
    AgentReady,
    ApprovalRequested,
    EventsPending,
    LoadRequest,
    StepPending,
)
from clover_code.ui.tui.notifier import Notifier
from clover_code.ui.tui.prompt_history import PromptHistory
from clover_code.ui.tui.transcript import Transcript
from clover_code.ui.tui.transcript_turns import TranscriptTurns
from clover_code.ui.tui.widgets.approval_prompt import ApprovalPrompt
from clover_code.ui.tui.widgets.completion_popup import CompletionPopup
from clover_code.ui.tui.widgets.conversation import ConversationView
from clover_code.ui.tui.widgets.denoise_view import DenoiseView
from clover_code.ui.tui.widgets.input_editor import InputEditor
from clover_code.ui.tui.widgets.plan_choice import PlanChoice
from clover_code.ui.tui.widgets.spinner import Spinner, SpinnerState
from clover_code.ui.tui.widgets.status_bar import StatusBar, short_model
from clover_code.ui.tui.widgets.todo_panel import TodoPanel
from clover_code.ui.tui.widgets.tool_card import summarize, tool_label
from clover_code.ui.tui.workspace_paths import workspace_paths

if TYPE_CHECKING:  # types only: the first paint must not wait for the agent's imports
    from clover_code.agent.loop import Agent
    from clover_code.agent.permissions import Approver
    from clover_code.ui.tui.widgets.history_search import HistorySearch

QUIT_WINDOW_S = 2.0
# Signals that end the app as a quit does: the terminal gets its modes back (alternate
# screen off, mouse tracking off, cursor shown) instead of being left as the app set it.
QUIT_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
# After these (live) the context is counted afresh: the conversation changed outside a reply.
RECOUNT_AFTER = (TurnFinished, Compacted, Rewound, Redone)
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
                 resume: str | None = None, prompt: str | None = None) -> None:
        super().__init__()
        self.settings, self.cwd, self.resume = settings, cwd, resume
        self.first_prompt = prompt  # `clover-code "fix the tests"`: sent as if typed first
        self.session_id: str | None = None  # said when the app quits, with how to resume it
        self.driver = AgentDriver(self, agent_factory, self.approve)
        self.transcript = Transcript(self)
        self.ledger = SessionLedger()
        self.commands = builtin_commands()
        self._command_clashes = add_custom_commands(self.commands, cwd)  # said once, on mount
        self.notifier = Notifier(settings.notify, self._write_terminal)
        self.prompt_history = PromptHistory()  # prompts of every session, for Up/Down and Ctrl+R
        self.completer: Completer | None = None  # the /command and @path popup's (on mount)
        self._history_search: HistorySearch | None = None  # Ctrl+R's, once asked for
        self._pending_answer: asyncio.Future[str] | None = None  # the approval being asked
        self._last_ctrl_c = 0.0
        self._paths_cache: tuple[float, list[str]] = (0.0, [])
        self._recounts = 0  # context counts asked for: only the latest one shows
        self._started_mode = settings.approval  # Shift+Tab reaches full-auto only from a session started in it

    # --- layout --------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        yield ConversationView(id="conversation")
        yield DenoiseView(id="denoise")
        yield ApprovalPrompt(id="approval")
        yield PlanChoice(id="plan-choice")
        yield CompletionPopup(id="completion")
        yield Spinner(self._spinner_state, id="spinner")
        yield TodoPanel(id="todos")
        yield InputEditor(paths=self._workspace_paths, id="input")
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        self.editor.focus()
        self.editor.sent[:0] = self.prompt_history.texts()  # Up walks earlier sessions' prompts too
        self.completer = Completer(self.editor, self.query_one(CompletionPopup), self.commands.completions,
                                   self._workspace_paths, lambda name: self.commands.find(name) is not None)
        self.editor.key_filter = self.completer.key
        self._catch_quit_signals()
        self.status.show(engine=self.settings.engine_name().split(":")[0],
                         model=self.settings.model or "", approval=self.settings.approval,
                         state="loading", context_used=None)
        self.view.add_note(self._welcome(), "dim")
        # In the transcript: a toast would cover the editor.
        for notice in [*self.settings.notices, *self._command_clashes]:
            self.view.add_note(notice, "warning")
        self.load_agent(self.resume)
        if self.first_prompt and self.first_prompt.strip():
            self.send(self.first_prompt)  # queued: the model is loading

    async def on_unmount(self) -> None:
        self._catch_quit_signals(False)
        if self.agent is not None:  # SessionEnd hooks run, MCP servers stop
            try:
                await self.agent.end_session()
            except Exception as exc:  # leaving must not fail; the errors log keeps why
                keep_traceback(exc)

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

    @property
    def agent(self) -> Agent | None:
        return self.driver.agent

    @property
    def busy(self) -> bool:
        return self.driver.busy

    @property
    def loading(self) -> bool:
        return self.driver.loading is not None

    @property
    def turns(self) -> TranscriptTurns:
        return self.transcript.turns

    # --- loading the agent (and its model) in the background -----------------------------
    def load_agent(self, resume: str | None = None, *, model: str | None = None) -> None:
        """Build an agent in a thread. A current agent stays until the new one is ready (and
        stays on if it fails): a mistyped `/model` path never leaves the session without one."""
        request = LoadRequest(resume, model, self.settings.model if model is not None else None)
        if model is not None:
            self.settings.model = model  # the factory reads the settings when it runs
        self.status.show(state="loading", **({"model": model} if model is not None else {}))
        self.driver.load(request)

    def loading_progress(self, fraction: float, message: str) -> None:
        """From the loading thread: move the progress bar."""
        self.call_from_thread(self.status.show_progress, fraction, message)

    @on(AgentReady)
    def _agent_ready(self, message: AgentReady) -> None:
        if not self.driver.settle(message.request):
            return  # a load asked for before the latest one
        agent = message.agent
        previous = self.driver.take(agent)
        self.session_id = agent.session.id if agent.session is not None else None
        info = agent.engine.info
        self.status.show(engine=info.name, model=info.model, context_window=info.context_window,
                         context_source=info.context_source, state="ready")
        if message.context_tokens is not None:
            self.ledger.recounted(message.context_tokens)
            self.status.show(context_used=message.context_tokens)
        self.call_after_refresh(start_servers, self, agent)  # painted first, then the servers start
        if previous is not None:
            self.driver.close(previous)
        else:
            other_sessions_note(self)  # a second session in this repository: say it at once
        if message.request.model is not None:
            self.note(f"now on {short_model(info.model)}", "dim")
        if message.request.resume is not None and message.request.model is None and agent.session is not None:
            if previous is not None:
                self.view.clear()
            self.replay(agent.session.events())
        self._send_next()

    @on(AgentFailed)
    def _agent_failed(self, message: AgentFailed) -> None:
        if not self.driver.settle(message.request):
            return
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
        if self.driver.waiting:
            self._hand_back_waiting()
            self.note("The queued message is back in the editor: nothing was sent.", "dim")

    # --- sending a task ------------------------------------------------------------------
    @on(InputEditor.Submitted)
    def _submitted(self, message: InputEditor.Submitted) -> None:
        self.send(message.text, message.shown)

    def send(self, text: str, shown: str | None = None) -> None:
        """A message or a command, as typed in the editor (`shown`: as the transcript shows it)."""
        text, shown = text.strip(), (shown if shown is not None else text).strip()
        self.prompt_history.add(text, self.cwd)
        self.view.scroll_end(animate=False)  # what answers this must be seen
        if text.startswith("/"):
            self.run_command(text)
            return
        self.send_prompt(text, shown)

    def send_prompt(self, text: str, shown: str) -> None:
        if self.agent is None or self.busy or self.loading:
            # Kept out of the transcript until sent: mounted now, it would land inside the
            # reply being written; Esc or Ctrl+C hand it back instead of sending it.
            self.driver.waiting.append((text, shown))
            self._show_waiting()
            return
        self._start_task(text, shown)

    def _start_task(self, text: str, shown: str | None = None) -> None:
        self.status.show(state="working")
        if live_shell.is_user_command(text):  # `!cmd`: the user's own command, its output for the model
            self.driver.run_user_command(text)
            return
        widget = self.view.add_user(text, shown)
        if self.agent is not None:
            self.turns.mark(widget, self.agent.conversation.turn_count)  # what a rewind to it hides
        self.view.scroll_end(animate=False)
        self.driver.run_turn(text)

    def _send_next(self) -> None:
        waiting = self.driver.next_waiting()
        if waiting is not None:
            self._start_task(*waiting)
        self._show_waiting()

    def _show_waiting(self) -> None:
        n = len(self.driver.waiting)
        what = "1 message" if n == 1 else f"{n} messages"
        self.editor.border_title = f"{what} queued, sent when the agent is free · Esc takes back" if n else ""

    def _hand_back_waiting(self) -> None:
        """Queued messages return to the editor, unsent (Esc, Ctrl+C, a failed load)."""
        if self.driver.waiting:
            self.editor.restore(self.driver.hand_back())
        self._show_waiting()

    @on(Worker.StateChanged)
    def _worker_changed(self, event: Worker.StateChanged) -> None:
        ended = (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
        if self.driver.owns(event.worker) and event.state in ended:
            self._close_approval()
            if event.state != WorkerState.ERROR:
                self.status.show(state="ready")
            self.notifier.nudge("the turn has ended", focused=self.app_focus)
            self._send_next()

    # --- the agent's events --------------------------------------------------------------
    @on(EventsPending)
    def _drain(self) -> None:
        self.apply_events(self.driver.take_events())

    @on(StepPending)
    def _draw_step(self) -> None:
        step = self.driver.take_step()
        if step is not None:
            self.query_one(DenoiseView).show_step(step)

    def queue_event(self, event: Event) -> None:
        self.driver.queue_event(event)

    def apply_events(self, events: list[Event], live: bool = True) -> None:
        """Count a batch of events in the ledger, draw them, and show the figures."""
        for event in events:
            self.ledger.add(event)
        self.transcript.apply_events(events, live)
        self._show_todos(events)
        self._show_stats()
        if live and plan_offer.ends_with_plan(self.agent, events):
            self.editor.display = False  # the choice takes its place until answered
            self.query_one(PlanChoice).open()
        if live and any(isinstance(event, RECOUNT_AFTER) for event in events):
            self.recount_context()

    def replay(self, events: list[Event]) -> None:
        """Draw a resumed session's events, finished, and count them from its start."""
        self.transcript.turns, self.ledger = TranscriptTurns(), SessionLedger()
        self.apply_events(list(events), live=False)
        todos = self.query_one(TodoPanel)
        if todos.todos is not None:  # where the resumed session's list stood, unfolded again
            todos.show(todos.todos)
        self.view.end_assistant()
        self.view.add_note(f"resumed session ({len(events)} events)", "dim")
        self.recount_context()

    def recount_context(self) -> None:
        """Count the context the next request carries, as `/cost` does: the status bar shows it."""
        agent, ledger = self.agent, self.ledger
        if agent is None:
            return
        self._recounts += 1
        asked, blocks = self._recounts, ledger.generated.blocks

        async def recount() -> None:
            counted = await asyncio.to_thread(count_context, agent.conversation, agent.engine)
            # Only the latest count shows, and only if no reply began meanwhile (it counts for itself).
            if asked == self._recounts and self.ledger is ledger and ledger.generated.blocks == blocks:
                ledger.recounted(counted.tokens)
                self._show_stats()

        self.run_worker(recount(), group="recount", exit_on_error=False)

    def _show_stats(self) -> None:
        ledger = self.ledger
        generated = ledger.generated
        last = generated.last
        changes: dict[str, Any] = dict(context_used=ledger.context, session_tokens=generated.tokens,
                                       session_seconds=generated.generation_seconds)
        if last is not None:
            changes.update(block_tokens=last.tokens, block_forward_passes=last.forward_passes, block_ms=last.ms)
        if self.agent is not None:  # a server's window is learned with its first request
            info = self.agent.engine.info
            changes.update(model=info.model, context_window=info.context_window, context_source=info.context_source)
        self.status.show(**changes)

    def _show_todos(self, events: list[Event]) -> None:
        """The todo list pinned while a turn runs, folded when it ends."""
        panel = self.query_one(TodoPanel)
        for event in events:
            if isinstance(event, TodosChanged):
                panel.show(event)
            elif isinstance(event, TurnFinished):
                panel.fold()

    @on(PlanChoice.Chosen)
    def _plan_chosen(self, message: PlanChoice.Chosen) -> None:
        """Approved: the mode the user chose, and the plan sent on; else back to planning."""
        self._editor_back()
        if message.answer == "keep":
            self.note(plan_offer.KEEP_PLANNING, "dim")
            return
        set_mode(self, message.answer)
        text = plan_offer.APPROVED.format(mode=message.answer)
        if self.busy or self.agent is None:  # the turn's worker may not have ended yet
            self.driver.waiting.append((text, text))
            self._show_waiting()
        else:
            self._start_task(text)

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
        self.notifier.nudge(f"waiting for your approval ({message.request.call.name})", focused=self.app_focus)

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

    def _close_approval(self) -> None:
        """A question never outlives its turn (Esc, a failure): neither on screen nor in the spinner."""
        future, self._pending_answer = self._pending_answer, None
        if future is not None and not future.done():
            future.cancel()
        prompt = self.query_one(ApprovalPrompt)
        if prompt.request is not None:
            prompt.close()
            self._editor_back()

    # --- keys ----------------------------------------------------------------------------
    def action_cancel(self) -> None:
        """Esc: stop the running turn; messages queued behind it come back to the editor."""
        self._hand_back_waiting()
        choice = self.query_one(PlanChoice)
        if choice.is_open:  # Esc: keep planning
            choice.action_choose("3")
            return
        if not self.busy:
            if self.turns.escape_twice() and self.agent is not None:  # Esc Esc: rewind, as in Claude Code
                rewind.open_picker(self)
            return
        self.driver.cancel()
        self._close_approval()
        self.view.cancel_running()
        self.status.show(state="ready")

    def action_interrupt(self) -> None:
        """Ctrl+C: clear the editor; else stop the turn; else quit, if pressed again soon."""
        editor = self.editor
        if editor.display and editor.text and not self.driver.waiting:
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
        if isinstance(self.focused, (ApprovalPrompt, PlanChoice)) or self.screen is not editor.screen:
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
            self.transcript.running_tool = None
            return None
        waiting = self.query_one(ApprovalPrompt).request is not None  # what the screen shows, not what was asked
        label = "Waiting for your answer" if waiting else "Working"
        turn = self.ledger.running
        tokens = turn.tokens_out if turn is not None else 0
        running = self.transcript.running_tool
        if running is not None and not waiting:
            call, since = running
            card = self.view.cards.get(call.id)
            what = summarize(card.touches if card is not None else None, 500)
            return SpinnerState(label, tokens, tool_label(call.name), what, since)
        return SpinnerState(label, tokens)

    def _write_terminal(self, text: str) -> None:
        """Bytes for the terminal itself (a notification), past the screen, as App.bell writes."""
        if self._driver is not None and not self.is_headless:
            self._driver.write(text)

    def action_toggle_denoise(self) -> None:
        self.query_one(DenoiseView).toggle()

    def action_command(self, line: str) -> None:
        self.run_command(line)

    def run_command(self, line: str) -> None:
        self.commands.run(self, line)

    # --- what commands use (commands/host.CommandHost) -----------------------------------
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
        self.recount_context()

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
             build_agent: AgentBuilder | None = None, resume: str | None = None,
             prompt: str | None = None) -> CloverApp:
    """The app; give it `build_agent` (what the CLI does) or a ready `agent_factory` (tests);
    `prompt` is sent first, as soon as the agent is ready."""
    cwd = Path(cwd or Path.cwd()).resolve()
    app_ref: list[CloverApp] = []
    if agent_factory is None:
        if build_agent is None:
            raise TypeError("make_app needs build_agent or agent_factory")
        agent_factory = _factory_of(build_agent, settings, cwd, app_ref)
    app = CloverApp(settings, cwd, agent_factory, resume, prompt)
    app_ref.append(app)
    return app


def _has_events(cwd: Path, session_id: str) -> bool:
    try:
        log = sessions_dir(cwd) / f"{session_id}.jsonl"
        return log.is_file() and log.stat().st_size > 0
    except (OSError, SessionError):
        return False


def run_app(settings: Settings, cwd: Path, build_agent: AgentBuilder, resume: str | None = None,
            prompt: str | None = None) -> int:
    """`clover-code [PROMPT]` without --task: the TUI until the user quits; its exit code."""
    from clover_code.ui.tui.terminal_guard import watch_terminal

    app = make_app(settings, cwd, build_agent=build_agent, resume=resume, prompt=prompt)
    watch_terminal(sys.__stdin__.fileno() if sys.__stdin__ is not None else 0)
    app.run()
    if app.session_id is not None and _has_events(cwd, app.session_id):  # the terminal is the user's again
        print(f"Session {app.session_id} saved; continue it with:\n  clover-code --resume {app.session_id}",
              file=sys.stderr)
    return app.return_code or 0
