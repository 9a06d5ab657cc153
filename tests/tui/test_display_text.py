"""Turning streamed model text into what the conversation shows."""

from clover_code.ui.tui.display_text import ToolMarkupFilter, safe_cut

RAW = 'Reading it.<tool_call>{"name": "read_file", "arguments": {"path": "a"}}</tool_call> Done.'


def test_tool_markup_is_hidden_however_the_text_is_cut():
    for size in (1, 2, 3, 7, 11, len(RAW)):
        markup = ToolMarkupFilter()
        shown = "".join(markup.feed(RAW[i:i + size]) for i in range(0, len(RAW), size))
        assert shown == "Reading it. Done.", size


def test_a_lone_angle_bracket_is_kept():
    markup = ToolMarkupFilter()
    assert markup.feed("a <") + markup.feed("b") == "a <b"


def test_safe_cut_avoids_fences_lists_and_continuations():
    text = "Intro.\n\n```\ncode\n\nmore code\n```\n\n- a\n\n- b\n\nEnd.\n"
    cut = safe_cut(text, 1)
    assert text[cut:] == "End.\n"  # after the list, not inside the fence or between items
    assert safe_cut("```\nx\n\ny\n", 1) is None
    assert safe_cut("para one\n\npara two", 1) == len("para one\n\n")
