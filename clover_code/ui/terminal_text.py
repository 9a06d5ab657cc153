"""Text from the model, tools, commands and repositories, made safe to show on a terminal.

Any of those may hold escape sequences: an OSC 52 clipboard write (`ESC ] 52 ; c ; ... BEL`),
a screen clear (`ESC [ 2 J`), cursor moves that paint over what was shown, C1 controls
(0x9b is a one-byte CSI), bidi overrides that show text in another order than it runs.
Written raw, the terminal acts on them. `visible` keeps newlines and tabs and shows every
other such character as its escape (`\\x1b`, `\\x9b`, `\\u202e`), so the user sees that it
was there and the terminal does nothing. The one home of that rule, used by the headless
runner (progress and text output) and the TUI (before Rich or Textual see the text).
It works per character, so text streamed in pieces is safe whatever the cut.
`one_line` is the one home of cutting text to a width: in terminal cells, where CJK and
emoji take two, so a cut line never wraps.
"""

from __future__ import annotations

import re

from rich.cells import cell_len, set_cell_size

# C0 controls but tab and newline, DEL, C1 controls, bidi embeddings/overrides/isolates,
# lone surrogates (no terminal encoding can carry them).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _shown(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every character a terminal would act on shown as its escape instead."""
    if not _UNSAFE.search(text):
        return text  # the common case: nothing to copy
    return _UNSAFE.sub(_shown, text.replace("\r\n", "\n"))


def one_line(text: str, room: int) -> str:
    """`text` on one line of at most `room` terminal cells, cut with an ellipsis."""
    flat = " ".join(text.split())
    if cell_len(flat) <= room:
        return flat
    if room < 1:
        return ""
    return set_cell_size(flat, room - 1).rstrip() + "…"  # a wide character that does not fit is padded: rstrip
