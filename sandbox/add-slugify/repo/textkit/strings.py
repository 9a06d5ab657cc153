"""Small string helpers."""

import re

_SPACES = re.compile(r"\s+")


def normalize_spaces(text: str) -> str:
    """Collapse runs of whitespace into one space and trim both ends."""
    return _SPACES.sub(" ", text).strip()


def title_case(text: str) -> str:
    """Capitalize each word, keeping the rest of the word as it is."""
    return " ".join(word[:1].upper() + word[1:] for word in normalize_spaces(text).split(" "))


def truncate(text: str, width: int, ellipsis: str = "...") -> str:
    """Cut text to at most `width` characters, marking the cut with `ellipsis`."""
    if len(text) <= width:
        return text
    return text[: max(0, width - len(ellipsis))] + ellipsis
