"""Splitting the conversation's growing Markdown text (tool-call markup: tests/agent/test_reply.py)."""

from clover_code.ui.tui.display_text import safe_cut


def test_safe_cut_avoids_fences_lists_and_continuations():
    text = "Intro.\n\n```\ncode\n\nmore code\n```\n\n- a\n\n- b\n\nEnd.\n"
    cut = safe_cut(text, 1)
    assert text[cut:] == "End.\n"  # after the list, not inside the fence or between items
    assert safe_cut("```\nx\n\ny\n", 1) is None
    assert safe_cut("para one\n\npara two", 1) == len("para one\n\n")
