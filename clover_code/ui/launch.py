"""What a UI is handed to start the agent or the engine: builders the wiring provides.

A UI never assembles an engine, tools or an agent itself (clover_code.wiring does); it
calls these when it needs one, e.g. the TUI again after `/model NAME` or `/resume`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # types only: the TUI's first paint must not wait for the agent's imports
    from clover_code.agent.loop import Agent
    from clover_code.agent.permissions import Approver
    from clover_code.engine import Engine
    from clover_code.settings import Settings

ProgressCallback = Callable[[float, str], None]  # (fraction done, what is loading)


class AgentBuilder(Protocol):
    def __call__(self, settings: Settings, cwd: Path, approver: Approver, *, resume: str | None = None,
                 on_progress: ProgressCallback | None = None) -> Agent: ...


class EngineBuilder(Protocol):
    def __call__(self, settings: Settings, on_progress: ProgressCallback | None = None) -> Engine: ...
