"""Commands on the workspace: `/diff` (this session's changes, its stat first), `/commit`
(without a message: the model drafts one, put in the editor to accept or edit), `/init`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from rich.console import Group
from rich.syntax import Syntax
from textual.widgets import Static

from clover_code.tools import ToolError
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoints import other_sessions_notice
from clover_code.tools.workspace.live_sessions import LiveSession
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.commands.host import CommandHost
from clover_code.ui.tui.diff_stat import diff_stat, stat_view

if TYPE_CHECKING:
    from clover_code.agent.loop import Agent


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


def _checkpoints(app: CommandHost) -> Checkpointing | None:
    return app.agent.ctx.checkpoints if app.agent is not None else None


def diff(app: CommandHost, arg: str) -> None:
    checkpoints = _checkpoints(app)
    if checkpoints is None:
        app.note("diff is not available: this session keeps no checkpoints", "error")
        return

    def show(diff: str) -> None:
        if not diff.strip():
            app.note("No changes since the session started.", "info")
        else:
            body = Syntax(visible(diff), "diff", theme="ansi_dark", background_color="default")
            app.view.mount(Static(Group(stat_view(diff_stat(diff)), "", body), classes="note -diff"))
            app.view.scroll_end(animate=False)
        other_sessions_note(app)

    app.in_thread(checkpoints.diff_since_start, show)


def commit(app: CommandHost, arg: str) -> None:
    agent = app.agent
    if agent is None or "git_commit" not in agent.registry.tools:
        app.note("commit is not available: no git_commit tool", "error")
        return
    if not arg:
        _draft_message(app, agent)
        return
    registry, ctx = agent.registry, agent.ctx

    async def commit() -> None:
        result = await registry.call("git_commit", {"message": arg}, ctx)
        app.note(result.output, "info" if result.ok else "error")

    app.in_background(commit())


def _draft_message(app: CommandHost, agent: Agent) -> None:
    """The model drafts the message; `/commit MESSAGE` goes in the editor, where Enter commits
    with it as it is or edited (the editor is the TUI's one place to change text before it is
    sent), and Ctrl+C drops it."""
    app.note("Drafting a commit message from the changes…", "dim")

    async def draft() -> None:
        try:
            message = await agent.draft_commit_message()
        except Exception as exc:  # nothing to commit, git or the engine failed: said, never lost
            app.report(exc, "no commit message drafted: ")
            return
        if not message:
            app.note("The model wrote no commit message; give one: /commit MESSAGE", "error")
        elif app.restore_prompt(f"/commit {message}"):
            app.note(f"Drafted: {message}\nIt is in the editor: Enter commits with it (edit it first if you "
                     "like); Ctrl+C drops it.", "info")
        else:  # the editor holds the user's own text: not overwritten
            app.note(f"Drafted: {message}\nTo commit with it: /commit {message}", "info")

    app.in_background(draft())


def init(app: CommandHost, arg: str) -> None:
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
