"""The status bar at 80 and 120 columns (issue 34): what matters still shows, nothing is cut
mid-number. Snapshots (pytest-textual-snapshot; `--snapshot-update` to accept) and checks."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult

from clover_code.ui.tui.widgets.status_bar import StatusBar, StatusInfo, render_status

MODEL = "/home/user/models/Clover-35B-A3B-Preview"
WORKING = dict(engine="embedded", model=MODEL, approval="auto-edit", context_used=48_200, context_window=131_072,
               block_tokens=29, block_forward_passes=4, block_ms=83.0, session_tokens=1_840, session_seconds=5.2,
               state="working")


class StatusOnly(App[None]):
    """The bar alone, docked at the bottom as in the app."""

    def __init__(self, **info: object) -> None:
        super().__init__()
        self.info = info

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")

    def on_mount(self) -> None:
        self.query_one(StatusBar).show(**self.info)


@pytest.mark.parametrize("width", [80, 120])
def test_status_bar_snapshot(snap_compare, width):
    assert snap_compare(StatusOnly(**WORKING), terminal_size=(width, 3))


@pytest.mark.parametrize("width", [80, 120])
def test_loading_status_bar_snapshot(snap_compare, width):
    loading = dict(engine="embedded", model=MODEL, approval="ask", context_used=None,
                   state="loading: reading weights (2/6)")

    async def progress(pilot):
        pilot.app.query_one(StatusBar).show_progress(0.42, "reading weights (2/6)")
        await pilot.pause()

    assert snap_compare(StatusOnly(**loading), terminal_size=(width, 3), run_before=progress)


@pytest.mark.parametrize("width", [80, 120])
def test_what_a_user_needs_fits(width):
    line = render_status(StatusInfo(**WORKING), width).plain  # type: ignore[arg-type]
    assert len(line) <= width and not line.endswith("…")
    for needed in ("Clover", "auto-edit", "ctx", "working", "7.2 tok/pass", "83 ms", "354 tok/s"):
        assert needed in line, (needed, line)
    assert MODEL not in line  # the folder's name, not the whole path
    if width >= 120:
        assert "48.2k/131.1k" in line


def test_one_pass_is_singular():
    info = StatusInfo(block_tokens=1, block_forward_passes=1, block_ms=5.0)
    assert "1 pass ·" in render_status(info).plain and "1 passes" not in render_status(info).plain
