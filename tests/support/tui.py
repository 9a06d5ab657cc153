"""Helpers for TUI tests: the real Agent (build_agent) on a ScriptedEngine in a temp repo."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text
from textual.content import Content

from clover_code.engine.scripted import ScriptedEngine
from clover_code.settings import Settings
from clover_code.ui.tui.app import CloverApp, make_app
from clover_code.wiring.assemble import build_agent


def call(name: str, **arguments: Any) -> dict[str, Any]:
    """A scripted reply that makes one tool call."""
    return {"content": f"Calling {name}.", "tool_calls": [{"name": name, "arguments": arguments}]}


def scripted_app(repo: Path, replies: list[Any], *, approval: str = "ask", delay: float = 0.0,
                 resume: str | None = None, block_size: int = 8) -> CloverApp:
    settings = Settings(engine="scripted", approval=approval, sandbox=False)

    def factory(approver, resume_id):
        engine = ScriptedEngine(list(replies), delay=delay, block_size=block_size)
        return build_agent(settings, repo, approver, resume=resume_id, engine=engine)

    return make_app(settings, repo, agent_factory=factory, resume=resume)


async def wait_for(pilot, condition: Callable[[], Any], timeout: float = 10.0) -> Any:
    """Let the app run until `condition()` is truthy."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        await pilot.pause(0.02)
    raise AssertionError(f"timed out waiting for {condition}")


async def ready(pilot) -> None:
    await wait_for(pilot, lambda: pilot.app.agent is not None)


async def send(pilot, text: str) -> None:
    """Type `text` into the editor and press Enter."""
    editor = pilot.app.query_one("#input")
    editor.focus()
    editor.insert(text)
    await pilot.press("enter")


async def idle(pilot, timeout: float = 10.0) -> None:
    """Wait until the agent finished its turn and the screen caught up."""
    await wait_for(pilot, lambda: not pilot.app.busy, timeout)
    await pilot.pause(0.05)


async def converse(pilot, *tasks: str) -> None:
    """Send each task in turn, waiting for the agent to finish it."""
    for task in tasks:
        await send(pilot, task)
        await idle(pilot)


def plain(renderable: Any) -> str:
    """What a widget's content reads as on a 120-column screen, without colours."""
    console = Console(width=120, color_system=None)
    with console.capture() as out:
        console.print(renderable)
    return out.get()


def notes(app: CloverApp) -> str:
    """The transcript's notes as text; a table's (/help's, /diff's) as a 120-column screen shows it."""
    return "\n".join(text_of(w.content) for w in app.query(".note"))


def text_of(content: Any) -> str:
    return str(content) if isinstance(content, (str, Text, Content)) else plain(content)


def session_events(repo: Path) -> list[dict[str, Any]]:
    files = sorted((repo / ".clover" / "sessions").glob("*.jsonl"))
    return [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]
