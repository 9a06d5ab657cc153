"""Messages the agent worker posts to the app. Handlers stay a write each."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from textual.message import Message

from clover_code.agent.events import ApprovalNeeded


@dataclass
class EventsPending(Message):
    """Agent events are queued on the app; drain them all in one go (coalesces bursts)."""


@dataclass
class StepPending(Message):
    """A newer denoise step is waiting on the app."""


@dataclass
class AgentReady(Message):
    agent: Any


@dataclass
class AgentFailed(Message):
    message: str  # what went wrong and what to do


@dataclass
class ApprovalRequested(Message):
    request: ApprovalNeeded
    answer: asyncio.Future
