"""CommandHost: what a slash command may use of the app, and nothing else.

The app (clover_code.ui.tui.app.CloverApp) is one; the commands are typed against this, so
they never import the app and the app imports them at the top.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from clover_code.settings import Settings
from clover_code.ui.tui.ledger import SessionLedger
from clover_code.ui.tui.transcript_turns import TranscriptTurns
from clover_code.ui.tui.widgets.conversation import ConversationView
from clover_code.ui.tui.widgets.status_bar import StatusBar

if TYPE_CHECKING:  # types only: the TUI's first paint must not wait for the agent's imports
    from clover_code.agent.events import Event
    from clover_code.agent.loop import Agent

T = TypeVar("T")
Severity = Literal["information", "warning", "error"]


class CommandHost(Protocol):
    settings: Settings  # changed by /model and /mode: the next agent is built from them
    cwd: Path
    ledger: SessionLedger  # tokens per turn (/cost), the session's figures (/stats)

    @property
    def agent(self) -> Agent | None:
        """None while the model loads (or when it failed to)."""
        ...

    @property
    def turns(self) -> TranscriptTurns:
        """Where each turn starts in the transcript (rewind)."""
        ...

    @property
    def view(self) -> ConversationView: ...

    @property
    def status(self) -> StatusBar: ...

    @property
    def busy(self) -> bool:
        """The agent is running a turn."""
        ...

    def say(self, text: str, *, severity: Severity = "information", timeout: float | None = None) -> None:
        """A short notification (a toast), for what needs no place in the transcript."""
        ...

    def note(self, text: str, kind: str = "info") -> None:
        """A line in the transcript, brought into view."""
        ...

    def in_background(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` on the event loop without waiting for it."""
        ...

    def in_thread(self, job: Callable[[], T], done: Callable[[T], None]) -> None:
        """Run blocking `job` (git) off the event loop, then `done(result)` on it; a failure
        becomes an error note."""
        ...

    def report(self, exc: BaseException, doing: str = "") -> None:
        """An error note for `exc` (a bug keeps its traceback)."""
        ...

    def load_agent(self, resume: str | None = None, *, model: str | None = None) -> None:
        """Build a new agent in the background (resuming session `resume`; on model `model`).
        With a model, the current agent stays until the new one is ready, and stays on if it fails."""
        ...

    def clear_session(self) -> None:
        """A fresh conversation on the same agent."""
        ...

    def apply_events(self, events: list[Event], live: bool = True) -> None:
        """Draw and count events a command got from the agent (a compaction, a rewind)."""
        ...

    def send_prompt(self, text: str, shown: str) -> None:
        """Send `text` as the user's message (a custom command's prompt), shown as `shown`;
        queued behind a running turn as typed messages are."""
        ...

    def run_command(self, line: str) -> None:
        """Run a command line as if typed (`/resume ID` once a picker chose the session)."""
        ...

    def push_screen(self, screen: Any, callback: Callable[[Any], None] | None = None) -> Any:
        """Open a picker (a modal screen); `callback(result)` when it closes."""
        ...

    def restore_prompt(self, text: str) -> bool:
        """Put `text` in the editor to edit and send again, unless something is being typed;
        whether it did."""
        ...

    def take_back_prompt(self, text: str) -> None:
        """Empty the editor if it still holds `text` as restore_prompt left it (not if edited)."""
        ...

    def action_toggle_denoise(self) -> None: ...

    def quit(self) -> None: ...
