"""Attack: escape sequences in model text, tool arguments and tool output, aimed at the user's
terminal: an OSC 52 clipboard write, a screen clear, a one-byte C1 CSI, a bidi override.
The real headless process (scripted model, temp repo) and the real TUI (Textual pilot, the
frame it would send to the terminal) must show them as text and never emit them raw;
text that looks like Rich markup stays text."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clover_code.engine.scripted import ScriptedEngine
from clover_code.settings import Settings
from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.app import make_app
from clover_code.ui.tui.widgets.approval_prompt import ApprovalPrompt
from clover_code.wiring.assemble import build_agent

CLIPBOARD, CLEAR, CSI, RLO = "\x1b]52;c;aGk=\x07", "\x1b[2J", "\x9b31m", "\u202e"
HOSTILE = f"{CLIPBOARD} {CLEAR} {CSI} {RLO}txt.exe [/] [bold]x"
RAW = [b"\x1b", b"\x07", "\x9b".encode(), RLO.encode()]  # what must never be written


def test_visible_keeps_text_and_shows_controls():
    assert visible("a\tb\nc é 日本") == "a\tb\nc é 日本"
    assert visible(HOSTILE) == "\\x1b]52;c;aGk=\\x07 \\x1b[2J \\x9b31m \\u202etxt.exe [/] [bold]x"
    assert visible("line\r\nnext\rover") == "line\nnext\\x0dover"
    assert visible("\ud800") == "\\ud800"


def tool_call(name: str, **arguments: str) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def run_headless(repo: Path, tmp_path: Path, fmt: str) -> subprocess.CompletedProcess:
    failing = tool_call("run_shell", command=f"printf '%s' '{HOSTILE}'; exit 1")  # raw ESC in the command
    replies = [f"Look: {HOSTILE}\n" + failing, "Again.\n" + failing, "Once more.\n" + failing]
    script = tmp_path / "r.jsonl"
    script.write_text("".join(json.dumps({"content": r}) + "\n" for r in replies))
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "CLOVER_APPROVAL": "full-auto"}
    # Gives up after the third identical failure: the notice quotes the output.
    return subprocess.run([sys.executable, "-m", "clover_code.cli", "--task", f"do it {HOSTILE}", "--cwd", str(repo),
                           "--engine", f"scripted:{script}", "--output-format", fmt],
                          env=env, capture_output=True, timeout=60)


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
def test_headless_output_never_carries_raw_escapes(fmt, git_repo, tmp_path):
    proc = run_headless(git_repo, tmp_path, fmt)
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]  # gave up
    for where, data in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        assert [r for r in RAW if r in data] == [], where
    err = proc.stderr.decode()
    assert "run_shell printf" in err and "\\x1b]52;c;aGk=\\x07" in err  # shown, visibly
    if fmt != "text":  # JSON escapes them: the exact text reads back
        result = json.loads(proc.stdout.decode().strip().splitlines()[-1])
        assert HOSTILE in result["result"]
    if fmt == "stream-json":
        events = [json.loads(line) for line in proc.stdout.decode().splitlines()]
        assert any(e["type"] == "ToolFinished" and HOSTILE in e["output"] for e in events)
    [log] = (git_repo / ".clover" / "sessions").glob("*.jsonl")
    assert [r for r in RAW if r in log.read_bytes()] == [], "session log"  # `cat` of a log is safe too


def frame(app) -> str:
    """Everything the app would write to the terminal for a full repaint."""
    return app.screen._compositor.render_update(full=True).render_segments(app.console)


def assert_clean(screen: str) -> None:
    for raw in (CLIPBOARD[:4], CLEAR, "\x9b", RLO, "\x07"):
        assert raw not in screen, repr(raw)


async def wait_until(pilot, condition, timeout: float = 10.0):
    for _ in range(int(timeout / 0.05)):
        if condition():
            return
        await pilot.pause(0.05)
    raise AssertionError("timed out")


async def test_tui_shows_escapes_and_markup_as_text(git_repo):
    """Model text, an approval preview, a failing command's output, a tool card's title and the
    give-up notice (with `[/]`, which Textual markup would reject) all hold the attack."""
    failing = {"name": "run_shell", "arguments": {"command": f"printf '%s' '{HOSTILE}'; exit 1"}}
    replies = [{"content": f"Look: {HOSTILE}", "tool_calls": [failing]}] * 3
    settings = Settings(engine="scripted", approval="ask", sandbox=False)

    def factory(approver, resume):
        return build_agent(settings, git_repo, approver, resume=resume, engine=ScriptedEngine(replies))

    app = make_app(settings, git_repo, agent_factory=factory)
    async with app.run_test(size=(140, 60)) as pilot:
        await wait_until(pilot, lambda: app.agent is not None)
        editor = app.query_one("#input")
        editor.insert("go")
        await pilot.press("enter")
        prompt, answered = app.query_one(ApprovalPrompt), []
        for _ in range(3):
            await wait_until(pilot, lambda: prompt.request is not None
                             and all(prompt.request is not a for a in answered))
            await pilot.pause(0.05)
            assert_clean(frame(app))  # the command to approve, shown
            answered.append(prompt.request)
            await pilot.press("y")
        await wait_until(pilot, lambda: not app.busy)
        await pilot.pause(0.1)
        screen = frame(app)
        assert_clean(screen)
        assert "\\x1b]52;c;aGk=\\x07" in screen and "[/] [bold]x" in screen
