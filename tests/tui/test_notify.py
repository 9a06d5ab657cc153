"""A nudge when the agent waits or is done (issue 45, item 6): sent only while the terminal
reports it is not focused (DECSET 1004 focus events), as OSC 9 / OSC 777 where the terminal shows
them, else the bell; `notify = "bell"` rings the bell only, `"off"` sends nothing."""

from __future__ import annotations

import sys
import time

import pytest
from textual import events

from clover_code.config import load_settings
from clover_code.settings import ConfigError
from clover_code.ui.tui.notifier import BELL, notification
from clover_code.ui.tui.widgets.approval_prompt import ApprovalPrompt
from tests.support.tmux import ROOT, WAIT_S, Tmux, needs_tmux, write_replies
from tests.support.tui import call, idle, ready, scripted_app, send, wait_for


@pytest.mark.parametrize(("env", "expected"), [
    ({"TERM_PROGRAM": "WezTerm"}, "\x1b]9;clover-code: done\x07"),
    ({"TERM_PROGRAM": "iTerm.app"}, "\x1b]9;clover-code: done\x07"),
    ({"TERM": "foot"}, "\x1b]777;notify;clover-code;done\x07"),
    ({"TERM": "xterm-256color"}, BELL),
    ({"TERM_PROGRAM": "WezTerm", "TMUX": "/tmp/tmux-0/default,1,0"}, BELL),
])
def test_the_escape_fits_the_terminal(env, expected):
    assert notification("clover-code", "done", "auto", env) == expected
    assert notification("clover-code", "done", "bell", env) == BELL
    assert notification("clover-code", "done", "off", env) == ""


def test_text_cannot_end_the_sequence_early():
    sent = notification("t", "a\x07b\x1b]0;x;y", "auto", {"TERM": "foot"})
    assert sent == "\x1b]777;notify;t;a b ]0 x y\x07"


def test_notify_is_a_user_setting(tmp_path, monkeypatch, git_repo):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    (tmp_path / "xdg" / "clover-code").mkdir(parents=True)
    (tmp_path / "xdg" / "clover-code" / "config.toml").write_text('notify = "bell"\n')
    assert load_settings(git_repo, demo_default=False).notify == "bell"
    (git_repo / ".clover").mkdir()
    (git_repo / ".clover" / "config.toml").write_text('notify = "off"\n')  # a repository may not silence it
    settings = load_settings(git_repo, demo_default=False)
    assert settings.notify == "bell" and any("ignored notify" in n for n in settings.notices)
    (tmp_path / "xdg" / "clover-code" / "config.toml").write_text('notify = "loud"\n')
    with pytest.raises(ConfigError, match="notify = 'loud' is not valid; it must be one of: auto, bell, off"):
        load_settings(git_repo, demo_default=False)


async def test_a_nudge_only_while_the_terminal_is_unfocused(repo, monkeypatch):
    monkeypatch.setenv("TERM_PROGRAM", "WezTerm")
    monkeypatch.delenv("TMUX", raising=False)
    replies = ["First.", call("run_shell", command="echo hi"), "Ran it.", "Done again."]
    app = scripted_app(repo, replies)
    async with app.run_test(size=(100, 30)) as pilot:
        sent: list[str] = []
        app.notifier.write = sent.append  # the terminal's side of the driver: Pilot runs headless
        await ready(pilot)
        await send(pilot, "say something")
        await idle(pilot)
        assert sent == []  # focused: the user sees it end
        await blur(pilot)
        app.send_prompt("run echo", "run echo")  # sent without a key (a key means focus is back)
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: prompt.request is not None)
        assert sent == ["\x1b]9;clover-code: waiting for your approval (run_shell)\x07"]
        await pilot.press("y")  # a key: the terminal is focused again
        await idle(pilot)
        assert len(sent) == 1  # focused when the turn ended: no second nudge
        await blur(pilot)
        app.send_prompt("once more", "once more")
        await wait_for(pilot, lambda: len(sent) == 2)
        assert sent[1] == "\x1b]9;clover-code: the turn has ended\x07"


async def blur(pilot) -> None:
    """What the terminal's focus-out report (ESC [ O, DECSET 1004) becomes in Textual."""
    pilot.app.post_message(events.AppBlur())
    await wait_for(pilot, lambda: not pilot.app.app_focus)


@needs_tmux
def test_the_real_terminal_gets_the_escape_only_after_focus_out(tmux: Tmux, repo, tmp_path):
    """The real process in tmux: the bytes it writes to the terminal (pipe-pane) hold the
    notification only for the turn that ended after the terminal reported focus-out."""
    go = repo / "go"  # in the workspace: commands get a /tmp of their own
    wait = "while [ ! -e go ]; do sleep 0.05; done"  # the command ends when the test says so
    replies = write_replies(tmp_path / "replies.jsonl", [
        "Hello.", {"content": "Waiting.", "tool_calls": [{"name": "run_shell", "arguments": {"command": wait}}]},
        "All done."])
    raw = tmp_path / "terminal.raw"
    command = (f"cd {repo} && env -u TMUX -u COLUMNS -u LINES TERM_PROGRAM=WezTerm XDG_CONFIG_HOME={tmp_path / 'xdg'} "
               f"PYTHONPATH={ROOT} {sys.executable} -m clover_code.cli --engine scripted:{replies} --no-sandbox "
               f"--approval full-auto; echo EXITED $?; sleep 60")
    tmux("new-session", "-d", "-s", "tui", "-x", "100", "-y", "30", command)
    tmux("pipe-pane", "-O", "-t", "tui", f"cat >> {raw}")
    tmux.wait_for("scripted")
    tmux.send("hi")
    tmux.wait_for("Hello.")
    assert b"\x1b[?1004h" in raw.read_bytes()  # focus reporting is on
    tmux.send("wait for it")
    tmux.wait_for("Waiting.")
    tmux("send-keys", "-t", "tui", "-H", "1b", "5b", "4f")  # the terminal reports focus-out: ESC [ O
    go.touch()
    tmux.wait_for("All done.")
    nudge = b"\x1b]9;clover-code: the turn has ended\x07"
    deadline = time.monotonic() + WAIT_S
    while raw.read_bytes().count(nudge) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert raw.read_bytes().count(nudge) == 1  # not for the first turn, which ended in focus
