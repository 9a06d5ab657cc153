"""A TUI whose terminal goes away ends (a closed window, a killed tmux): judged on a real pty
and on the real `clover-code` in tmux, from outside the process."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

from clover_code.ui.tui.terminal_guard import EXIT_HUNG_UP, terminal_gone, watch_terminal
from tests.support.tmux import ROOT, Tmux, make_repo, needs_tmux, write_replies


def test_a_hung_up_pty_is_told_from_one_that_never_was(tmp_path):
    master, follower = os.openpty()
    assert not terminal_gone(follower)
    os.close(master)
    assert terminal_gone(follower)
    os.close(follower)
    with open(tmp_path / "plain", "w") as plain:
        assert not terminal_gone(plain.fileno())  # not a terminal: not gone either
        assert watch_terminal(plain.fileno()) is None


def test_the_watcher_hangs_up_then_ends_a_process_that_lives_on():
    master, follower = os.openpty()
    calls: list[tuple[str, float]] = []
    ended = threading.Event()
    watch_terminal(follower, hang_up=lambda: calls.append(("hang_up", time.monotonic())),
                   hard_exit=lambda code: (calls.append((f"exit {code}", time.monotonic())), ended.set()),
                   poll_s=0.05, grace_s=0.3)
    time.sleep(0.3)
    assert calls == []  # a live terminal is left alone
    os.close(master)
    assert ended.wait(10)
    assert [name for name, _ in calls] == ["hang_up", f"exit {EXIT_HUNG_UP}"]
    assert calls[1][1] - calls[0][1] >= 0.3
    os.close(follower)


def test_a_process_that_never_gets_its_hangup_is_ended_all_the_same():
    """SIGHUP ignored stands for a shutdown stuck for ever: only the hard exit can end it."""
    child = textwrap.dedent("""
        import signal, time
        from clover_code.ui.tui.terminal_guard import watch_terminal
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        watch_terminal(0, poll_s=0.05, grace_s=0.5)
        print("watching", flush=True)
        time.sleep(120)
    """)
    master, follower = os.openpty()
    proc = subprocess.Popen([sys.executable, "-c", child], stdin=follower, stdout=follower, stderr=follower,
                            cwd=ROOT, start_new_session=True)
    os.close(follower)
    said = b""
    deadline = time.monotonic() + 60
    while b"watching" not in said and time.monotonic() < deadline:
        if select.select([master], [], [], 1)[0]:
            said += os.read(master, 1024)
    assert b"watching" in said, said
    os.close(master)  # the terminal goes away
    assert proc.wait(timeout=30) == EXIT_HUNG_UP


@needs_tmux
def test_killing_tmux_ends_clover_code(tmux: Tmux, tmp_path: Path):
    repo = make_repo(tmp_path / "repo", {"app.py": "x = 1\n"})
    tmux.start(repo, write_replies(tmp_path / "r.jsonl", ["Hello."]), (80, 24))
    pid = tmux.program_pid()
    tmux("kill-server")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.2)
    assert not _alive(pid), subprocess.run(["ps", "-o", "pid,stat,cmd", "-p", str(pid)],
                                           capture_output=True, text=True).stdout


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
