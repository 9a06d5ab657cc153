from textkit import normalize_spaces, title_case, truncate


def test_normalize_spaces():
    assert normalize_spaces("  a \t b\n c ") == "a b c"


def test_title_case():
    assert title_case("hello  wide world") == "Hello Wide World"


def test_truncate():
    assert truncate("abcdef", 10) == "abcdef"
    assert truncate("abcdefghij", 6) == "abc..."
