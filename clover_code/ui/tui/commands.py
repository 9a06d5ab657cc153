"""Slash commands typed into the TUI's editor: `/help`, `/undo`, `/diff`, ...

Each command is a small function of (app, argument). Commands that wait on the agent or
on git run in workers so the screen stays live; failures become notes, never tracebacks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable

from rich.syntax import Syntax
from textual.widgets import Static

from clover_code.settings import APPROVAL_MODES
from clover_code.ui.terminal_text import visible
from clover_code.tools import ToolError
from clover_code.tools.sandbox.gitrun import Git

HELP = """\
Commands
  /help              this help
  /undo              restore the files as they were before the last turn (shell changes too)
  /diff              changes since the session started
  /commit [MESSAGE]  commit the work tree
  /model [NAME]      show the engine and model; with NAME, load another model
  /mode [MODE]       show or set the approval mode: read-only | ask | auto-edit | full-auto
  /compact           summarise older turns to free context
  /clear             clear the screen and start a fresh conversation
  /resume [ID]       continue an earlier session (default: the last one)
  /init              write a starter AGENTS.md for this repository
  /stats             tokens, blocks, forward passes and speed of this session
  /denoise           show or hide the live denoise view (also F2)
  /quit              leave (also Ctrl+C twice)
Keys
  Enter send · Ctrl+J newline · Up/Down history · Tab complete @path
  Esc cancel the running generation or tool · y / a / n answer an approval"""


def run_command(app: Any, line: str) -> None:
    name, _, arg = line.strip().partition(" ")
    command = COMMANDS.get(name.lower())
    if command is None:
        app.view.add_note(f"unknown command {name}; /help lists them", "error")
        return
    needs_agent = name in ("/undo", "/diff", "/commit", "/compact", "/mode", "/clear")
    if needs_agent and app.agent is None:
        app.notify("The agent is still starting; try again in a moment.", severity="warning")
        return
    if needs_agent and app.busy and name != "/mode":
        app.notify("The agent is working: wait, or press Esc to cancel it first.", severity="warning")
        return
    command(app, arg.strip())


def _help(app: Any, arg: str) -> None:
    app.view.add_note(HELP, "help")


def _checkpoints(app: Any) -> Any:
    ctx = getattr(app.agent, "ctx", None)
    return getattr(ctx, "checkpoints", None)


def _undo(app: Any, arg: str) -> None:
    checkpoints = _checkpoints(app)
    if checkpoints is None:
        app.view.add_note("undo is not available: this session keeps no checkpoints", "error")
        return
    _in_thread(app, checkpoints.undo, lambda summary: app.view.add_note(summary, "info"))


def _diff(app: Any, arg: str) -> None:
    checkpoints = _checkpoints(app)
    if checkpoints is None:
        app.view.add_note("diff is not available: this session keeps no checkpoints", "error")
        return

    def show(diff: str) -> None:
        if not diff.strip():
            app.view.add_note("No changes since the session started.", "info")
            return
        app.view.mount(Static(Syntax(visible(diff), "diff", theme="ansi_dark", background_color="default"),
                              classes="note -diff"))

    _in_thread(app, checkpoints.diff_since_start, show)


def _commit(app: Any, arg: str) -> None:
    message = arg or "Changes made with clover-code"
    registry, ctx = getattr(app.agent, "registry", None), getattr(app.agent, "ctx", None)

    async def commit() -> None:
        if registry is None or "git_commit" not in registry.tools:
            app.view.add_note("commit is not available: no git_commit tool", "error")
            return
        result = await registry.call("git_commit", {"message": message}, ctx)
        app.view.add_note(result.output, "info" if result.ok else "error")

    app.run_worker(commit(), group="command")


def _model(app: Any, arg: str) -> None:
    info = getattr(getattr(app.agent, "engine", None), "info", None)
    if not arg:
        if info is None:
            app.view.add_note("The model is still loading.", "info")
        else:
            app.view.add_note(f"engine {info.name} · model {info.model} · context {info.context_window} "
                              f"tokens ({info.context_source}) · block {info.block_size} · "
                              f"threshold {info.threshold}", "info")
        return
    if app.busy:
        app.notify("The agent is working: press Esc first.", severity="warning")
        return
    app.settings.model = arg
    app.agent = None
    app.status.show(model=arg, state="loading")
    app.view.add_note(f"loading model {arg}…", "dim")
    app.load_agent("last" if app.stats.turns else None)


def _mode(app: Any, arg: str) -> None:
    permissions = getattr(app.agent, "permissions", None) if app.agent else None
    current = permissions.mode if permissions is not None else app.settings.approval
    if not arg:
        app.view.add_note(f"approval mode: {current}  (choose from {', '.join(APPROVAL_MODES)})", "info")
        return
    if arg not in APPROVAL_MODES:
        app.view.add_note(f"unknown mode {arg!r}; choose one of {', '.join(APPROVAL_MODES)}", "error")
        return
    app.settings.approval = arg
    if permissions is not None:
        permissions.mode = arg
        # full-auto never asks, so its shell must run sandboxed (as build_agent sets it up).
        app.agent.ctx.sandbox = app.settings.sandbox or arg == "full-auto"
    app.status.show(approval=arg)
    app.view.add_note(f"approval mode: {arg}", "info")


def _compact(app: Any, arg: str) -> None:
    async def compact() -> None:
        app.status.show(state="working")
        try:
            event = await app.agent.compact()
        except Exception as exc:
            from clover_code.ui.tui.app import describe_error

            app.view.add_note(f"compaction failed: {describe_error(exc)}", "error")
        else:
            app.apply_events([event])
        app.status.show(state="ready")

    app.run_worker(compact(), group="command")


def _clear(app: Any, arg: str) -> None:
    app.view.clear()
    if app.agent is not None:
        app.agent.clear()
    app.stats.context_used = 0
    app.status.show(context_used=0)


def _resume(app: Any, arg: str) -> None:
    from clover_code.agent.session import SessionError, SessionLog, sessions_dir

    if app.busy:
        app.notify("The agent is working: press Esc first.", severity="warning")
        return
    current = getattr(getattr(app.agent, "session", None), "path", None)
    logs = sorted(sessions_dir(app.cwd).glob("*.jsonl"), key=lambda p: (p.stat().st_mtime, p.name))
    others = [p for p in logs if p != current]
    try:
        which = SessionLog.open(app.cwd, arg).id if arg else (others[-1].stem if others else None)
    except SessionError as exc:
        app.view.add_note(str(exc), "error")
        return
    if which is None:
        app.view.add_note("No earlier session to resume in this folder.", "info")
        return
    if current is not None and current.exists() and current.stat().st_size == 0:
        current.unlink()  # the fresh session we leave held nothing
    app.view.clear()
    app.resume = which
    app.agent = None
    app.status.show(state="loading")
    app.load_agent(which)


def _init(app: Any, arg: str) -> None:
    path = app.cwd / "AGENTS.md"
    if path.exists():
        app.view.add_note("AGENTS.md already exists; edit it, or delete it and run /init again.", "info")
        return
    path.write_text(agents_md(app.cwd), encoding="utf-8")
    app.view.add_note(f"wrote {path.name}: tell the agent how to build, test and style this "
                      "repository there.", "info")


def _stats(app: Any, arg: str) -> None:
    app.view.add_note(app.stats.summary(), "info")


def _denoise(app: Any, arg: str) -> None:
    app.action_toggle_denoise()


def _quit(app: Any, arg: str) -> None:
    app.exit()


COMMANDS: dict[str, Callable[[Any, str], None]] = {
    "/help": _help, "/undo": _undo, "/diff": _diff, "/commit": _commit, "/model": _model,
    "/mode": _mode, "/compact": _compact, "/clear": _clear, "/resume": _resume, "/init": _init,
    "/stats": _stats, "/denoise": _denoise, "/quit": _quit, "/exit": _quit,
}


def _in_thread(app: Any, job: Callable[[], Any], done: Callable[[Any], None]) -> None:
    """Run blocking `job` (git) off the event loop, then `done(result)` on it."""
    def work() -> None:
        try:
            result = job()
        except Exception as exc:
            from clover_code.ui.tui.app import describe_error

            app.call_from_thread(app.view.add_note, describe_error(exc), "error")
        else:
            app.call_from_thread(done, result)

    app.run_worker(work, thread=True, group="command")


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
