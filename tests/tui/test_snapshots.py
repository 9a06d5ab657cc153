"""Snapshots of the main screens (pytest-textual-snapshot; `--snapshot-update` to accept).

The screens are drawn from fixed events so that timings never change the picture.
"""

from __future__ import annotations

import asyncio

from clover_code.agent.events import (
    ApprovalNeeded,
    BlockCommitted,
    TextDelta,
    ToolCallParsed,
    ToolFinished,
    ToolStarted,
    TurnFinished,
    UserMessage,
)
from clover_code.engine import Block, DenoiseStep, ToolCall
from clover_code.tools.touches import Touches
from clover_code.ui.tui.messages import ApprovalRequested
from tests.support.tui import ready, scripted_app

SIZE = (100, 34)
EDIT = ToolCall("c1", "edit_file", '{"path": "app.py", "old_string": "a - b", "new_string": "a + b"}')
TESTS = ToolCall("c2", "run_shell", '{"command": "python -m pytest -q"}')
EDITS = Touches(reads=("app.py",), writes=("app.py",))  # as edit_file and run_shell declare them
RUNS = Touches(reads=(".",), writes=(".",), runs="python -m pytest -q")
DIFF = ("--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n"
        "+    return a + b\n")
REPLY = ("The bug is in `add`: it **subtracts**.\n\n"
         "1. fix the operator\n2. run the tests\n\n```python\ndef add(a, b):\n    return a + b\n```\n")


def blocks(text: str, size: int = 40, prompt: int = 4200, finish: str = "stop") -> list[BlockCommitted | TextDelta]:
    """A reply without tool calls, as the agent emits it: each block, then the text it shows."""
    parts = [text[i:i + size] for i in range(0, len(text), size)]
    return [event for i, p in enumerate(parts) for event in (
        BlockCommitted(Block(p, 12, 3, 0.05 * (i + 1), 48.0, i,
                             finish=finish if i == len(parts) - 1 else None,
                             prompt_tokens=prompt if i == len(parts) - 1 else None)),
        TextDelta(p))]


SESSION = [
    UserMessage("fix add in app.py and run the tests"),
    *blocks(REPLY, finish="tool_calls"),
    ToolCallParsed(EDIT, touches=EDITS), ToolStarted(EDIT, EDITS),
    ToolFinished(EDIT, True, "edited app.py", 0.012, {"diff": DIFF}),
    ToolCallParsed(TESTS, touches=RUNS), ToolStarted(TESTS, RUNS),
    ToolFinished(TESTS, False, "F\n1 failed in 0.01s\n", 0.84, {"exit_code": 1}),
    *blocks("One test still fails: `test_sub` expects the old behaviour.", prompt=4900),
    TurnFinished("done", ""),
]


WELCOME = "clover-code in ~/repo · scripted · /help lists commands · Esc stops a reply · Ctrl+C twice quits"


def app_with(events, repo):
    app = scripted_app(repo, [])
    app._welcome = lambda: WELCOME  # the real one names the test's temporary folder

    async def before(pilot):
        await ready(pilot)
        app.query_one("#input").cursor_blink = False  # a blinking cursor makes snapshots flaky
        app.apply_events(list(events), live=False)
        await pilot.pause(0.5)  # past the newest-block highlight

    return app, before


def test_conversation_screen(snap_compare, repo):
    app, before = app_with(SESSION, repo)
    assert snap_compare(app, terminal_size=SIZE, run_before=before)


def test_approval_screen(snap_compare, repo):
    app, before = app_with(SESSION[:3 + len(blocks(REPLY))], repo)

    async def ask(pilot):
        await before(pilot)
        answer = asyncio.get_running_loop().create_future()
        app.post_message(ApprovalRequested(ApprovalNeeded(EDIT, "edit", DIFF, EDITS, "edit:*"), answer))
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=ask)


def test_help_and_denoise_screen(snap_compare, repo):
    app, before = app_with([], repo)

    async def show(pilot):
        await before(pilot)
        await pilot.press(*"/help", "enter", "f2")
        app.driver.on_step(DenoiseStep(2, 3, tuple(i % 3 != 0 for i in range(32)), (1, 4, 7)))
        await pilot.pause(0.2)

    assert snap_compare(app, terminal_size=SIZE, run_before=show)
