"""Messages the agent worker posts to the app. Handlers stay a write each."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from clover_code.agent.events import ApprovalNeeded

if TYPE_CHECKING:  # types only: the first paint must not wait for the agent's imports
    from clover_code.agent.loop import Agent


@dataclass
class EventsPending(Message):
    """Agent events are queued on the app; drain them all in one go (coalesces bursts)."""


@dataclass
class StepPending(Message):
    """A newer denoise step is waiting on the app."""


@dataclass(frozen=True)
class LoadRequest:
    """What an agent is being built for: a session to resume, a model to switch to."""

    resume: str | None = None
    model: str | None = None  # `/model NAME`: the model asked for
    previous_model: str | None = None  # what settings.model was: put back if the load fails


@dataclass
class AgentReady(Message):
    agent: Agent
    request: LoadRequest
    context_tokens: int | None = None  # the conversation's size as the next request will see it


@dataclass
class AgentFailed(Message):
    message: str  # what went wrong and what to do
    request: LoadRequest = LoadRequest()


@dataclass
class ApprovalRequested(Message):
    request: ApprovalNeeded
    answer: asyncio.Future[str]  # the ApprovalAnswer chosen
