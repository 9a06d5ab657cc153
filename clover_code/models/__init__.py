"""Checkpoints shipped inside the package: the demo model that makes the embedded engine
work on any machine (trained by tools/training/train_demo_model.py; see clover-demo/README.md)."""

from __future__ import annotations

from pathlib import Path

DEMO_NAME = "clover-demo"
DEMO_NOTICE = (
    "using {name}, the small demo model shipped with clover-code: it knows the sandbox task families "
    "(fix a bug a test shows, add a function, rename one) and little else. For real work point clover-code "
    "at Clover: --model DIR on a GPU box, or --endpoint URL for SGLang, vLLM or `clover-code serve` "
    "(or set CLOVER_MODEL / CLOVER_ENDPOINT)."
)


def demo_model() -> Path | None:
    """The shipped demo checkpoint's folder, or None when this install lacks it."""
    folder = Path(__file__).resolve().parent / DEMO_NAME
    return folder if (folder / "config.json").is_file() else None
