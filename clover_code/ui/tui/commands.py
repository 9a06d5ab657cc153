"""Slash commands typed into the TUI's editor: `/help`, `/undo`, `/diff`, ...

Each command is a small function of (host, argument), the host being what a command may
use of the app (command_host.CommandHost). Commands that wait on the agent or on git run in
workers so the screen stays live; failures become notes, never tracebacks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from rich.syntax import Syntax
from textual.widgets import Static

from clover_code.sandbox.gitrun import Git
from clover_code.settings import APPROVAL_MODES, ApprovalMode
from clover_code.tools import ToolError
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoints import other_sessions_notice
from clover_code.tools.workspace.live_sessions import LiveSession
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui import feature_commands, rewind
from clover_code.ui.tui.command_host import CommandHost

HELP = """\
Commands
  /help              this help
  /undo [N]          rewind code and/or conversation to before a message you pick (also Esc Esc)
  /redo              take the last rewind back
  /diff              this session's changes since it started
  /commit [MESSAGE]  commit the work tree
  /model [NAME]      show the engine and model; with NAME, load another model
  /mode [MODE]       show or set the approval mode: read-only | ask | auto-edit | full-auto
  /compact           summarise older turns to free context
  /clear             clear the screen and start a fresh conversation
  /resume [ID]       continue an earlier session (without ID: pick one, with a preview)
  /init              write a starter AGENTS.md for this repository
  /stats             tokens, blocks, forward passes and speed of this session
  /cost              tokens in and out per turn, what fills the context, estimated cost
  /denoise           show or hide the live denoise view (also F2)
  /quit              leave (also Ctrl+C twice)
Keys
  Enter send · Ctrl+J newline · Up/Down history (all sessions) · Ctrl+R search it
  / a command and @ a file open a completion list: Up/Down choose, Tab complete, Enter run
  @path attaches the file (or folder) · !cmd runs a command yourself; the model sees its output
  Shift+Tab cycle the approval mode: ask, auto-edit, read-only (plan)
  Esc cancel the running generation or tool (queued messages come back to the editor)
  Ctrl+C clear the editor; on an empty one cancel, twice quit · Ctrl+D on an empty one quit
  PgUp/PgDn scroll the transcript · Ctrl+Home/End (Home/End on an empty editor) its top/end
  y / a / n answer an approval (arrows, PgUp/PgDn scroll what it shows)"""


class Checkpointing(Protocol):
    """What /diff uses of the session's checkpoints (tools.workspace.checkpoints)."""

    def diff_since_start(self) -> str: ...

    def other_sessions(self) -> list[LiveSession]: ...


def other_sessions_note(app: CommandHost) -> None:
    """Say so when other clover-code sessions are at work in this folder (at start, on /diff)."""
    checkpoints = _checkpoints(app)
    others = checkpoints.other_sessions() if checkpoints is not None else []
    if others:
        app.note(other_sessions_notice(others), "warning")


NEEDS_AGENT = ("/undo", "/rewind", "/redo", "/diff", "/commit", "/compact", "/mode", "/clear")
Command = Callable[[CommandHost, str], None]


def run_command(app: CommandHost, line: str) -> None:
    name, _, arg = line.strip().partition(" ")
    command = COMMANDS.get(name.lower())
    if command is None:
        app.note(f"unknown command {name}; /help lists them", "error")
        return
    if name in NEEDS_AGENT and app.agent is None:
        app.say("The agent is still starting; try again in a moment.", severity="warning")
        return
    if name in NEEDS_AGENT and app.busy and name != "/mode":
        app.say("The agent is working: wait, or press Esc to cancel it first.", severity="warning")
        return
    command(app, arg.strip())


def _help(app: CommandHost, arg: str) -> None:
    app.note(HELP, "help")


def _checkpoints(app: CommandHost) -> Checkpointing | None:
    return app.agent.ctx.checkpoints if app.agent is not None else None


def _diff(app: CommandHost, arg: str) -> None:
    checkpoints = _checkpoints(app)
    if checkpoints is None:
        app.note("diff is not available: this session keeps no checkpoints", "error")
        return

    def show(diff: str) -> None:
        if not diff.strip():
            app.note("No changes since the session started.", "info")
        else:
            app.view.mount(Static(Syntax(visible(diff), "diff", theme="ansi_dark", background_color="default"),
                                  classes="note -diff"))
            app.view.scroll_end(animate=False)
        other_sessions_note(app)

    app.in_thread(checkpoints.diff_since_start, show)


def _commit(app: CommandHost, arg: str) -> None:
    message = arg or "Changes made with clover-code"
    agent = app.agent
    if agent is None or "git_commit" not in agent.registry.tools:
        app.note("commit is not available: no git_commit tool", "error")
        return
    registry, ctx = agent.registry, agent.ctx

    async def commit() -> None:
        result = await registry.call("git_commit", {"message": message}, ctx)
        app.note(result.output, "info" if result.ok else "error")

    app.in_background(commit())


def _model(app: CommandHost, arg: str) -> None:
    if not arg:
        if app.agent is None:
            app.note("The model is still loading.", "info")
            return
        info = app.agent.engine.info
        app.note(f"engine {info.name} · model {info.model} · context {info.context_window} "
                 f"tokens ({info.context_source}) · block {info.block_size} · "
                 f"threshold {info.threshold}", "info")
        return
    if app.busy:
        app.say("The agent is working: press Esc first.", severity="warning")
        return
    app.note(f"loading model {arg}… (the current one stays until it is ready)", "dim")
    # The conversation goes on with the new model: it resumes this session's log.
    session = app.agent.session if app.agent is not None else None
    app.load_agent(session.id if session is not None and app.stats.turns else None, model=arg)


def _mode(app: CommandHost, arg: str) -> None:
    agent = app.agent
    current = agent.permissions.mode if agent is not None else app.settings.approval
    if not arg:
        app.note(f"approval mode: {current}  (choose from {', '.join(APPROVAL_MODES)})", "info")
        return
    mode = _approval_mode(arg)
    if mode is None:
        app.note(f"unknown mode {arg!r}; choose one of {', '.join(APPROVAL_MODES)}", "error")
        return
    set_mode(app, mode)
    app.note(f"approval mode: {mode}", "info")


def set_mode(app: CommandHost, mode: ApprovalMode) -> None:
    """The approval mode from now on (/mode, Shift+Tab); the status bar shows it."""
    agent = app.agent
    app.settings.approval = mode
    if agent is not None:
        agent.set_mode(mode, app.settings.sandbox)
    app.status.show(approval=mode)


def _approval_mode(name: str) -> ApprovalMode | None:
    for mode in APPROVAL_MODES:
        if mode == name:
            return mode
    return None


def _compact(app: CommandHost, arg: str) -> None:
    agent = app.agent
    if agent is None:
        return

    async def compact() -> None:
        app.status.show(state="working")
        try:
            event = await agent.compact()
        except Exception as exc:
            app.report(exc, "compaction failed: ")
        else:
            app.apply_events([event])
        app.status.show(state="ready")

    app.in_background(compact())


def _clear(app: CommandHost, arg: str) -> None:
    app.clear_session()


def _resume(app: CommandHost, arg: str) -> None:
    from clover_code.agent.session import SessionError, SessionLog, sessions_dir

    if app.busy:
        app.say("The agent is working: press Esc first.", severity="warning")
        return
    if not arg:  # the picker, with a preview of each session
        feature_commands.pick_session(app, lambda chosen: _resume(app, chosen))
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


def _init(app: CommandHost, arg: str) -> None:
    """A starter AGENTS.md, written only as a new plain file inside the workspace: the
    repository may hold an AGENTS.md link to anywhere on the host."""
    try:
        Workspace(app.cwd).create_new("AGENTS.md", agents_md(app.cwd).encode("utf-8"))
    except FileExistsError:
        app.note("AGENTS.md already exists; edit it, or delete it and run /init again.", "info")
        return
    except (ToolError, OSError) as exc:
        app.note(f"/init: {exc}", "error")
        return
    app.note("wrote AGENTS.md: tell the agent how to build, test and style this repository there.", "info")


def _stats(app: CommandHost, arg: str) -> None:
    app.note(app.stats.summary(), "info")


def _denoise(app: CommandHost, arg: str) -> None:
    app.action_toggle_denoise()


def _quit(app: CommandHost, arg: str) -> None:
    app.quit()


COMMANDS: dict[str, Command] = {
    "/help": _help, "/undo": rewind.open_picker, "/rewind": rewind.open_picker, "/redo": rewind.redo,
    "/diff": _diff, "/commit": _commit, "/model": _model,
    "/mode": _mode, "/compact": _compact, "/clear": _clear, "/resume": _resume, "/init": _init,
    "/stats": _stats, "/cost": feature_commands.show_usage, "/usage": feature_commands.show_usage,
    "/denoise": _denoise, "/quit": _quit, "/exit": _quit,
}


# --- helpers shared with the editor ------------------------------------------------------
_SKIP_DIRS = {".git", "node_modules", ".venv", "venv", "__pycache__", ".clover", ".mypy_cache"}
MAX_PATHS = 20_000


def workspace_paths(root: Path, git: Git | None = None) -> list[str]:
    """Files for @path completion: git's view (tracked + untracked, not ignored), else a walk.
    `git` is the session's runner (sandboxed, read-only here); None: a sandboxed one."""
    try:
        out = (git or Git(root)).run("ls-files", "-co", "--exclude-standard", writable=(), check=False,
                                     timeout=5)
        if out.code == 0:
            return sorted(out.out.splitlines())[:MAX_PATHS]
    except ToolError:
        pass  # no sandbox here: walk the folder instead
    paths: list[str] = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        rel = os.path.relpath(folder, root)
        paths.extend(f if rel == "." else f"{rel}/{f}" for f in files)
        if len(paths) >= MAX_PATHS:
            break
    return sorted(paths)


def agents_md(root: Path) -> str:
    """A starter AGENTS.md from what the repository shows."""
    names = {p.name for p in root.iterdir()}
    test = ("python -m pytest -q" if names & {"pyproject.toml", "setup.py", "pytest.ini", "tests"}
            else "npm test" if "package.json" in names
            else "cargo test" if "Cargo.toml" in names
            else "go test ./..." if "go.mod" in names
            else "make test" if "Makefile" in names else "(say how to run the tests)")
    return (f"# {root.name}\n\nInstructions for coding agents working in this repository.\n\n"
            f"## Build and test\n\n- Run the tests: `{test}`\n\n"
            "## Conventions\n\n- Keep changes small and focused; match the surrounding style.\n"
            "- Add or update a test with every behaviour change.\n")
