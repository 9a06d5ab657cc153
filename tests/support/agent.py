"""Helpers shared by the agent tests."""

import json

from clover_code.agent.loop import Agent


def call(name: str, **arguments) -> str:
    """A tool call as Qwen writes it."""
    return f'<tool_call>\n{json.dumps({"name": name, "arguments": arguments})}\n</tool_call>'


class RecordingApprover:
    """Answers approval questions from a list, keeping what was asked."""

    def __init__(self, *answers: str):
        self.answers = list(answers)
        self.asked = []

    async def __call__(self, request):
        self.asked.append(request)
        return self.answers.pop(0)


async def collect(agent: Agent, task: str) -> list:
    return [event async for event in agent.run(task)]


def kinds(events) -> list[str]:
    return [type(e).__name__ for e in events]
