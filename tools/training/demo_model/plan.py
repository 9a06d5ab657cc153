"""How long a training run goes and what it draws when.

The length is a step count, or (`--steps auto`) fitted to the time budget once the
warmup has shown the speed: a lent GPU comes for minutes, and a cosine schedule that
ends when they do beats one cut short. Phases change the mix partway through (more
copy drills for a stretch, as run H did), at fractions of the run.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    start: float  # fraction of the run's steps where it begins
    drill: float  # share of the rows drawn from the copy drills
    rename: float  # share of sessions and drills trained with invented names

    @classmethod
    def parse(cls, text: str) -> Phase:
        """FRACTION:DRILL_RATE:RENAME_RATE, for example 0.5:0.8:0.7."""
        try:
            phase = cls(*(float(part) for part in text.split(":")))
        except (TypeError, ValueError):
            want = "FRACTION:DRILL_RATE:RENAME_RATE, e.g. 0.5:0.8:0.7"
            raise argparse.ArgumentTypeError(f"{text!r}: want {want}") from None
        if not all(0.0 <= value <= 1.0 for value in (phase.start, phase.drill, phase.rename)):
            raise argparse.ArgumentTypeError(f"{text!r}: each part is a fraction from 0 to 1")
        return phase


def parse_steps(text: str) -> int | None:
    """A step count, or "auto" (None): fitted to --minutes after the warmup."""
    if text == "auto":
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want a number of steps or auto") from None


class Plan:
    def __init__(self, steps: int | None, phases: list[Phase]):
        self.steps = steps
        self.phases = sorted(phases, key=lambda p: p.start)

    def fit(self, step: int, seconds_per_step: float, seconds_left: float) -> int:
        """Fix the length so that the schedule ends as the time budget does (a few percent
        early: each phase change restarts the data workers)."""
        self.steps = step + max(1, int(0.96 * seconds_left / seconds_per_step))
        return self.steps

    def phase_at(self, step: int) -> Phase | None:
        """The phase `step` lies in (None: before the first). Until the length is known
        only phases that start at 0 can have begun."""
        current = None
        for phase in self.phases:
            if phase.start == 0.0 or (self.steps is not None and step >= round(phase.start * self.steps)):
                current = phase
        return current
