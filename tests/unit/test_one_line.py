"""Cutting text to a width for the TUI's one-line rows: in terminal cells, so a row with wide
characters (CJK, emoji) never wraps."""

from rich.cells import cell_len

from clover_code.ui.terminal_text import one_line
from clover_code.ui.tui.widgets.spinner import _fit


def test_short_text_is_kept_on_one_line():
    assert one_line("fix\nthe   parser", 20) == "fix the parser"


def test_a_cut_fits_its_cells_wide_characters_counted_twice():
    for text in ("修复解析器中的错误并添加测试" * 3, "🚀 deploy 🚀 the 🚀 thing " * 4, "plain ascii text " * 10):
        for room in range(1, 40):
            cut = one_line(text, room)
            assert cell_len(cut) <= room and cut.endswith("…")


def test_the_spinner_says_nothing_rather_than_a_stub():
    assert _fit("pytest -q tests/unit", 5) == "" and _fit("ls", 5) == "ls"
    assert cell_len(_fit("修复解析器中的错误" * 4, 20)) <= 20


def test_a_card_heading_keeps_its_mark_and_cuts_the_command_first():
    from clover_code.tools.touches import Touches
    from clover_code.ui.tui.widgets.tool_card import fit_heading

    call = Touches(runs="修复 pytest -q " * 20)
    for room in range(18, 90):  # from the mark, its gap and one cell of the name
        heading = fit_heading("run_shell", call, "✗ exit 1 0.84s", room)
        assert heading.endswith("   ✗ exit 1 0.84s") and cell_len(heading) <= room, (room, heading)
    assert fit_heading("run_shell", call, "✓", 200).count("…") == 1  # wide: still at most 60 cells of it
    assert fit_heading("run_shell", call, "✓", 20) == "run_shell  修复…   ✓"
    assert fit_heading("mcp__server__a_very_long_tool_name", call, "✓", 16) == "mcp__server…   ✓"
