"""Scripted model replies for the tests: Qwen tool-call markup as the model writes it, and
the JSONL files `--engine scripted:FILE` replays (clover_code/engine/scripted.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def tool_call(name: str, **arguments: Any) -> str:
    """Qwen tool-call markup, as the model writes it."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def write_replies(path: Path, replies: list[Any]) -> Path:
    """One reply per line: a string is the reply's text, a dict is taken as it is."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"content": r} if isinstance(r, str) else r) + "\n" for r in replies),
                    encoding="utf-8")
    return path


def scripted_engine(path: Path, *replies: str) -> str:
    """The --engine value that replays `replies` (written to `path`)."""
    return f"scripted:{write_replies(path, list(replies))}"
