"""A reply that degenerates into one short pattern repeated is cut off early and the turn ends
`gave_up`; ordinary long output never trips the watch. Real agent, real tools, temp git repo,
replies from the ScriptedEngine."""

import asyncio
from pathlib import Path

import pytest

from clover_code.agent.degeneration import WINDOW, DegenerationWatch, degenerate
from clover_code.agent.events import BlockCommitted, Notice, ToolFinished, TurnFinished
from clover_code.engine.scripted import ScriptedEngine
from tests.support.agent import call, collect

ROOT = Path(__file__).resolve().parents[2]


class ClosedEarly(ScriptedEngine):
    """A ScriptedEngine that records whether the agent closed a stream before its end."""

    closed_early = False

    async def stream(self, request):
        finished = False
        try:
            async for block in super().stream(request):
                finished = block.finish is not None
                yield block
        finally:
            self.closed_early = not finished


@pytest.mark.parametrize("tail", [
    "x" * 600,
    "kkkk " * 120,
    ("xxxx" * 40 + "kkkk" * 40) * 4,  # whole blocks of one pattern, then another, in turn
    "ab" * 300,
    "\n" * 600,
    "é€😀" * 200,
], ids=["one char", "a word", "two patterns in turn", "period 2", "newlines", "not ascii"])
def test_a_short_pattern_over_a_window_is_degenerate(tail):
    assert degenerate("Some ordinary text first. " + tail)
    assert not degenerate(tail[: WINDOW - 1])  # less than a window never is


@pytest.mark.parametrize("text", [
    "Title\n" + "=" * 300 + "\n\nThe rule above is long but the text around it is not.\n" * 4,
    "| name | value |\n|------|-------|\n" + "".join(f"| row{i} | {i * 7} |\n" for i in range(60)),
    ("| a | b |\n|---|---|\n| 1 | 2 |\n\nThe same table again:\n\n") * 12,
    "def f():\n" + "    pass\n" * 3 + "\n# " + "-" * 200 + "\n" * 3 + "x = [" + ", ".join(map(str, range(200))) + "]",
], ids=["markdown rule", "a long table", "a table repeated", "code"])
def test_ordinary_long_output_is_not(text):
    watch = DegenerationWatch()
    assert not any(watch.add(text[i:i + 64]) for i in range(0, len(text), 64))


def test_the_projects_own_text_and_code_never_trip_it():
    """Every source, test and doc of the project, streamed as blocks: real output of every kind."""
    files = [p for pattern in ("clover_code/**/*.py", "tests/**/*.py", "docs/*.md", "README.md", "prompts/**/*")
             for p in ROOT.glob(pattern) if p.is_file()]
    assert len(files) > 100
    for path in files:
        text, watch = path.read_text(encoding="utf-8", errors="replace"), DegenerationWatch()
        assert not any(watch.add(text[i:i + 128]) for i in range(0, len(text), 128)), path


def test_a_degenerate_reply_is_cancelled_and_the_turn_gives_up(git_repo, make_agent):
    """The issue's case: after a failing command the model writes `kkkk` for thousands of tokens."""
    (git_repo / "notes.txt").write_text("to do\n")
    garbage = "kkkk " * 3000  # 94 blocks of 32 words
    engine = ClosedEarly([call("run_shell", command="git frobnicate"), "I see.\n" + garbage, "never asked"])
    agent = make_agent(None, engine=engine)
    events = asyncio.run(collect(agent, "commit the notes"))
    done = events[-1]
    assert isinstance(done, TurnFinished) and done.reason == "gave_up", done
    assert "degenerated" in done.text and "'kkkk kkkk" in done.text
    assert any(isinstance(e, Notice) and e.text == done.text for e in events)
    second_reply = [e for e in events if isinstance(e, BlockCommitted)][1:]
    assert 1 < len(second_reply) <= 5, "stopped within a few blocks, not after 94"
    assert engine.closed_early and len(engine.requests) == 2  # the request was cancelled; no third one
    assert engine.replies == ["never asked"]


def test_calls_completed_before_the_garbage_run_and_one_inside_it_does_not(git_repo, make_agent):
    garbage_call = '<tool_call>\n{"name": "write_file", "arguments": {"path": "out.txt", "content": "' + "xx " * 700
    reply = call("write_file", path="kept.txt", content="fine\n") + "\n" + garbage_call + '"}}\n</tool_call>'
    engine = ClosedEarly([reply], block_size=4)
    agent = make_agent(None, engine=engine)
    events = asyncio.run(collect(agent, "write two files"))
    assert events[-1].reason == "gave_up"
    assert [(e.call.name, e.ok) for e in events if isinstance(e, ToolFinished)] == [("write_file", True)]
    assert (git_repo / "kept.txt").read_text() == "fine\n"
    assert not (git_repo / "out.txt").exists() and engine.closed_early
