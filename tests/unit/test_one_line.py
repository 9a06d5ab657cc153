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
