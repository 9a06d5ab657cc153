"""Plan, then go: when a turn in plan mode ends with a plan, the app offers to approve it (run
in auto-edit or in ask) or to keep planning; approving switches the mode and sends the plan on
as the next message, so the model carries out what the user read."""

from __future__ import annotations

from typing import TYPE_CHECKING

from clover_code.agent.events import Event, TurnFinished

if TYPE_CHECKING:
    from clover_code.agent.loop import Agent

APPROVED = ("The plan above is approved and the approval mode is now {mode}. Carry it out now, step by "
            "step; then say what you changed and how you checked it.")
KEEP_PLANNING = "Still planning: say what to change in the plan (Shift+Tab leaves plan mode)."


def ends_with_plan(agent: Agent | None, events: list[Event]) -> bool:
    """Whether these live events end a plan-mode turn with a plan to approve."""
    finished = next((e for e in reversed(events) if isinstance(e, TurnFinished)), None)
    return (finished is not None and finished.reason == "done" and bool(finished.text.strip())
            and agent is not None and agent.permissions.mode == "plan")
