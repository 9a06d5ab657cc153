"""Commands on the session and its agent: `/model`, `/mode` (and Shift+Tab's round of modes),
`/compact`, `/clear`, `/resume` (with its picker). What they show is imported when first
asked for: the app imports this module before its first paint."""

from __future__ import annotations

from clover_code.settings import APPROVAL_MODES, ApprovalMode, approval_mode
from clover_code.ui.tui.commands.host import CommandHost
from clover_code.ui.tui.commands.table import WORKING

# Shift+Tab's round: asking, edits allowed, plan (reads only, ends with a plan to approve). full-auto joins it only in a
# session started in it: a key press should not switch off every question by surprise.
CYCLE: tuple[ApprovalMode, ...] = ("ask", "auto-edit", "plan")


def model(app: CommandHost, arg: str) -> None:
    if not arg:
        if app.agent is None:
            app.note("The model is still loading.", "info")
            return
        info = app.agent.engine.info
        app.note(f"engine {info.name} · model {info.model} · context {info.context_window} "
                 f"tokens ({info.context_source}) · block {info.block_size} · "
                 f"threshold {info.threshold} · policy {info.policy or 'not said'}", "info")
        return
    if app.busy:  # showing the model is fine during a turn; changing it is not
        app.say(WORKING, severity="warning")
        return
    app.note(f"loading model {arg}… (the current one stays until it is ready)", "dim")
    # The conversation goes on with the new model: it resumes this session's log.
    session = app.agent.session if app.agent is not None else None
    app.load_agent(session.id if session is not None and app.ledger.finished else None, model=arg)


def mode(app: CommandHost, arg: str) -> None:
    agent = app.agent
    current = agent.permissions.mode if agent is not None else app.settings.approval
    if not arg:
        app.note(f"approval mode: {current}  (choose from {', '.join(APPROVAL_MODES)})", "info")
        return
    chosen = approval_mode(arg)  # `read-only`, plan's old name, too
    if chosen is None:
        app.note(f"unknown mode {arg!r}; choose one of {', '.join(APPROVAL_MODES)}", "error")
        return
    set_mode(app, chosen)
    app.note(f"approval mode: {chosen}", "info")


def set_mode(app: CommandHost, mode: ApprovalMode) -> None:
    """The approval mode from now on (/mode, Shift+Tab); the status bar shows it."""
    agent = app.agent
    app.settings.approval = mode
    if agent is not None:
        agent.set_mode(mode, app.settings.sandbox)
    app.status.show(approval=mode)


def next_mode(current: ApprovalMode, started_in: ApprovalMode) -> ApprovalMode:
    cycle = CYCLE if started_in != "full-auto" else (*CYCLE, "full-auto")
    return cycle[(cycle.index(current) + 1) % len(cycle)] if current in cycle else cycle[0]


def compact(app: CommandHost, arg: str) -> None:
    agent = app.agent
    if agent is None:
        return

    async def compact() -> None:
        app.status.show(state="working")
        try:
            async for event in agent.compaction():  # that it runs, then what came of it
                app.apply_events([event])
        except Exception as exc:
            app.report(exc, "compaction failed: ")
        app.status.show(state="ready")

    app.in_background(compact())


def clear(app: CommandHost, arg: str) -> None:
    app.clear_session()


def resume(app: CommandHost, arg: str) -> None:
    from clover_code.agent.session import SessionError, SessionLog, sessions_dir

    if not arg:  # the picker, with a preview of each session
        _pick_session(app)
        return
    session = app.agent.session if app.agent is not None else None
    current = sessions_dir(app.cwd) / f"{session.id}.jsonl" if session is not None else None
    try:
        which = SessionLog.open(app.cwd, arg).id
    except SessionError as exc:
        app.note(str(exc), "error")
        return
    if current is not None and current.exists() and current.stat().st_size == 0:
        current.unlink()  # the fresh session we leave held nothing
    app.note(f"resuming session {which}…", "dim")
    app.load_agent(which)


def _pick_session(app: CommandHost) -> None:
    """`/resume` without an id: the picker; the chosen session is resumed as `/resume ID`."""
    from clover_code.ui.tui.session_list import list_sessions, preview
    from clover_code.ui.tui.widgets.session_picker import SessionPicker

    session = app.agent.session if app.agent is not None else None
    sessions = list_sessions(app.cwd, exclude=session.id if session is not None else None)
    if not sessions:
        app.note("No earlier session to resume in this folder.", "info")
        return
    app.push_screen(SessionPicker(sessions, preview),
                    lambda chosen: app.run_command(f"/resume {chosen}") if chosen else None)
