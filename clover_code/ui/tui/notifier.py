"""A nudge when the agent waits for the user (an approval) or a turn ends while the terminal is
not focused: a desktop notification where the terminal shows one (OSC 9 or OSC 777), else the
bell. Focus comes from the terminal's focus reports (DECSET 1004, which Textual turns on and
reads as App.app_focus); a terminal that never reports focus counts as focused: no nudge.

`notify` in the user's config: "auto" (a notification where the terminal is known to show one,
else the bell), "bell" (the bell only) or "off".
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping

from clover_code.settings import NotifyMode

BELL = "\a"
# Terminals known to show OSC 9 as a desktop notification, by TERM_PROGRAM.
OSC9_PROGRAMS = frozenset({"iTerm.app", "WezTerm", "ghostty", "kitty"})
# ... and OSC 777 (`notify;TITLE;BODY`), by the start of TERM.
OSC777_TERMS = ("foot", "rxvt")
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f;]")  # a control character would end the sequence early


def notification(title: str, body: str, mode: NotifyMode, env: Mapping[str, str]) -> str:
    """The bytes to write for a nudge in `mode` on the terminal `env` describes; "" for none."""
    if mode == "off":
        return ""
    if mode == "bell" or env.get("TMUX"):  # tmux keeps OSC 9 to itself; the bell reaches the window
        return BELL
    title, body = _UNSAFE.sub(" ", title), _UNSAFE.sub(" ", body)
    if env.get("TERM_PROGRAM") in OSC9_PROGRAMS or env.get("WT_SESSION") or env.get("KITTY_WINDOW_ID"):
        return f"\x1b]9;{title}: {body}\x07"
    if env.get("TERM", "").startswith(OSC777_TERMS):
        return f"\x1b]777;notify;{title};{body}\x07"
    return BELL


class Notifier:
    def __init__(self, mode: NotifyMode, write: Callable[[str], None], env: Mapping[str, str] | None = None):
        self.mode = mode
        self.write = write  # to the terminal, past the screen (the app's driver)
        self.env = os.environ if env is None else env

    def nudge(self, body: str, *, focused: bool) -> None:
        """Tell a user who looks elsewhere that the agent `body` (waits, is done)."""
        if focused:
            return
        sequence = notification("clover-code", body, self.mode, self.env)
        if sequence:
            self.write(sequence)
