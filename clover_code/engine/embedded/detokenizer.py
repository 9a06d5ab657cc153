"""Committed token ids -> text, block by block."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


class Detokenizer:
    """Incremental detokenizer: text is released only once its bytes are complete, so a
    multi-byte character split across blocks comes out whole."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, drop_ids: frozenset[int]):
        self.tokenizer, self.drop_ids = tokenizer, drop_ids  # drop_ids: stop tokens, never text
        self.window: list[int] = []  # ids since the last clean text boundary

    def push(self, ids: list[int]) -> str:
        self.window += [i for i in ids if i not in self.drop_ids]
        text = str(self.tokenizer.decode(self.window, skip_special_tokens=False))
        if text.endswith("\ufffd"):
            return ""  # an incomplete character: wait for its remaining bytes
        self.window = []
        return text

    def flush(self) -> str:
        text = str(self.tokenizer.decode(self.window, skip_special_tokens=False)) if self.window else ""
        self.window = []
        return text
