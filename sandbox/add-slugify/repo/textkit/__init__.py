from textkit.strings import normalize_spaces, title_case, truncate

__all__ = ["normalize_spaces", "title_case", "truncate"]
