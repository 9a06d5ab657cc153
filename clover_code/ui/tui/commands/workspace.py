"""Commands on the workspace: `/diff` (this session's changes), `/commit`, `/init`."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from rich.syntax import Syntax
from textual.widgets import Static

from clover_code.tools import ToolError
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoints import other_sessions_notice
from clover_code.tools.workspace.live_sessions import LiveSession
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.commands.host import CommandHost


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
            app.view.mount(Static(Syntax(visible(diff), "diff", theme="ansi_dark", background_color="default"),
                                  classes="note -diff"))
            app.view.scroll_end(animate=False)
        other_sessions_note(app)

    app.in_thread(checkpoints.diff_since_start, show)


def commit(app: CommandHost, arg: str) -> None:
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
