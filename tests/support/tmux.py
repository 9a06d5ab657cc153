"""Driving the real `clover-code` in tmux, as a user's terminal does: keys, bracketed pastes,
signals, and reading back the screen and the terminal's modes."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
WAIT_S = 90.0  # the most a step may take on a busy machine before the test calls it broken
needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


class Tmux:
    """A private tmux server (its own socket, a path: in the test's folder, gone with it):
    sessions named by the test."""

    def __init__(self, socket: Path):
        self.base = ["tmux", "-S", str(socket)]

    def __call__(self, *args: str) -> str:
        return subprocess.run([*self.base, *args], capture_output=True, text=True, timeout=30).stdout

    def screen(self, target: str = "tui") -> str:
        return self("capture-pane", "-p", "-t", target)

    def wait_until(self, shown: Callable[[str], bool], what: str, timeout: float = WAIT_S,
                   target: str = "tui") -> str:
        """The screen, once `shown(screen)`: polled, never a fixed sleep, so a loaded machine
        only makes it slower (`timeout` is an upper bound for a broken flow, not a pace)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen(target)
            if shown(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"{what} never showed; the screen:\n{self.screen(target)}")

    def wait_for(self, text: str, timeout: float = WAIT_S, target: str = "tui") -> str:
        return self.wait_until(lambda screen: text in screen, repr(text), timeout, target)

    def press_until(self, key: str, text: str, timeout: float = WAIT_S, target: str = "tui") -> str:
        """Press `key` until `text` shows (again every 2 s: a key that reached a screen still
        being drawn is sent once more; use only for keys that do no harm twice)."""
        deadline = time.monotonic() + timeout
        while True:
            self.keys(key, target=target)
            try:
                return self.wait_for(text, min(2.0, max(deadline - time.monotonic(), 0.1)), target)
            except AssertionError:
                if time.monotonic() >= deadline:
                    raise

    def paste(self, text: str, target: str = "tui") -> None:
        """A bracketed paste, as a terminal sends one (`paste-buffer -p`)."""
        self("set-buffer", "-b", "clip", "--", text)
        self("paste-buffer", "-p", "-d", "-b", "clip", "-t", target)

    def keys(self, *keys: str, target: str = "tui") -> None:
        self("send-keys", "-t", target, *keys)

    def type(self, text: str, target: str = "tui") -> None:
        self("send-keys", "-t", target, "-l", text)

    def send(self, text: str, target: str = "tui") -> None:
        """Type `text` and press Enter, as a user sends a message or a command."""
        self.type(text, target)
        self.keys("Enter", target=target)

    def modes(self, target: str = "tui") -> dict[str, str]:
        """The terminal modes the program left: alternate screen, mouse tracking, cursor shown."""
        out = self("display-message", "-p", "-t", target,
                   "#{alternate_on} #{mouse_any_flag} #{mouse_button_flag} #{mouse_sgr_flag} #{cursor_flag}")
        names = ("alternate_on", "mouse_any", "mouse_button", "mouse_sgr", "cursor_visible")
        return dict(zip(names, out.split(), strict=False))

    def program_pid(self, target: str = "tui") -> int:
        """The clover-code process: the child of the pane's shell."""
        shell = self("display-message", "-p", "-t", target, "#{pane_pid}").strip()
        children = subprocess.run(["pgrep", "-P", shell], capture_output=True, text=True).stdout.split()
        assert children, f"no program under the pane's shell {shell}"
        return int(children[0])

    def start(self, repo: Path, replies: Path, size: tuple[int, int], target: str = "tui",
              args: tuple[str, ...] = ()) -> None:
        """clover-code (this checkout's, whatever is installed) on scripted replies in `repo`;
        `args` before the flags (a first prompt)."""
        given = "".join(f"{shlex.quote(arg)} " for arg in args)
        command = (f"cd {repo} && env -u COLUMNS -u LINES PYTHONPATH={ROOT} {sys.executable} -m clover_code.cli "
                   f"{given}--engine scripted:{replies} --no-sandbox; echo EXITED $?; sleep 60")
        width, height = size
        self("new-session", "-d", "-s", target, "-x", str(width), "-y", str(height), command)
        self.wait_for("scripted", target=target)  # the status bar: first paint


def make_repo(path: Path, files: dict[str, str]) -> Path:
    path.mkdir(parents=True)
    for name, text in files.items():
        (path / name).write_text(text)
    env = {**os.environ, **GIT_ENV}
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-qm", "init"]):
        subprocess.run(argv, cwd=path, check=True, env=env)
    return path


def write_replies(path: Path, replies: list[Any]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in replies))
    return path


def logged_events(repo: Path) -> list[dict[str, Any]]:
    logs = sorted((repo / ".clover" / "sessions").glob("*.jsonl"))
    return [json.loads(line) for log in logs for line in log.read_text().splitlines() if line.strip()]
