"""The code map behind the symbols and repo_map tools: tree-sitter definitions and
references per file (tags.py, with per-language queries as data files in queries/),
ranked by PageRank and fitted to a token budget (ranking.py)."""
