"""What the scaffold needs to know about a tokenizer, computed once per checkpoint: the text
of every token id, which ids are added tokens (`<|im_end|>`, `<tool_call>`: never part of a
string), and how the tokenizer itself would write a piece of forced text."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    added: int | None  # the id, when the span is an added token


class Vocabulary:
    def __init__(self, tokenizer: PreTrainedTokenizerBase):
        self.tokenizer = tokenizer
        size = len(tokenizer)
        self.texts: list[str] = tokenizer.batch_decode([[i] for i in range(size)], skip_special_tokens=False,
                                                       clean_up_tokenization_spaces=False)
        added = {i: t.content for i, t in tokenizer.added_tokens_decoder.items() if i < size}
        self.added = frozenset(added)
        self._added_ids = {text: i for i, text in added.items()}
        longest_first = sorted(self._added_ids, key=len, reverse=True)
        self._added_re = re.compile("|".join(map(re.escape, longest_first))) if longest_first else None
        backend = getattr(tokenizer, "backend_tokenizer", None)
        self._pre = backend.pre_tokenizer if backend is not None else None

    def text(self, token: int) -> str | None:
        """The token's text; None for ids the tokenizer lacks (a padded output layer's rows)."""
        return self.texts[token] if 0 <= token < len(self.texts) else None

    def spans(self, text: str) -> list[Span]:
        """Where the tokenizer cuts `text` before BPE: added tokens, then pre-tokens. Tokens never
        cross these cuts, so each span's tokens are its own encoding."""
        out: list[Span] = []
        at = 0
        for m in self._added_re.finditer(text) if self._added_re else ():
            out += self._pieces(text, at, m.start())
            out.append(Span(m.start(), m.end(), self._added_ids[m.group()]))
            at = m.end()
        return out + self._pieces(text, at, len(text))

    def _pieces(self, text: str, start: int, end: int) -> list[Span]:
        if start == end:
            return []
        if self._pre is None:  # no pre-tokenizer: one piece (so nothing is forced across it)
            return [Span(start, end, None)]
        return [Span(start + a, start + b, None) for _, (a, b) in self._pre.pre_tokenize_str(text[start:end])]

    def encode(self, spans: list[Span], text: str) -> list[int]:
        ids: list[int] = []
        for s in spans:
            ids += [s.added] if s.added is not None else self.tokenizer.encode(text[s.start:s.end],
                                                                                add_special_tokens=False)
        return ids

    def forced_tokens(self, prev: str, text: str, following: frozenset[str] | None) -> list[int]:
        """The tokens the tokenizer writes for the start of `text` that neither `prev` (the text just
        before) nor what follows (`following`: its possible first characters, None if unknown) can
        change: whole pieces from the first, the last only if no possible next character would
        join it. [] when the first piece would join `prev` (the model finishes that piece)."""
        joint = prev + text
        spans = [s for s in self.spans(joint) if s.end > len(prev)]
        if not spans or spans[0].start != len(prev):
            return []
        last = spans[-1]
        if last.added is None and not self._closed(joint[last.start:], following):
            spans = spans[:-1]
        if not spans:
            return []
        ids = self.encode(spans, joint)
        covered = joint[len(prev):spans[-1].end]
        return ids if "".join(self.texts[i] for i in ids) == covered else []

    def _closed(self, piece: str, following: frozenset[str] | None) -> bool:
        """Whether no character of `following` would join the end of `piece` into one pre-token."""
        if not following:
            return False
        return all(self.spans(piece + c)[0].end == len(piece) for c in following)
