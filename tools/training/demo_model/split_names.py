"""Spell the families' compound package names with frequent tokens (tokenizer surgery).

The demo tokenizer was trained on the generated sessions, so each compound package name
(`pathops`: the word `path` and the suffix `ops`) became a token of its own. Each is rare: run
Y's embeddings of the 336 compounds have norm 0.95 against the vocabulary's 2.9 and cosine
0.66 to one another, a cluster the model cannot tell apart, so it cannot copy one (add-function's
first read right in 29 of 57 held-out sessions, 0.5%-14% on the right name teacher-forced).
The bare words (`budget`, `shop`) are frequent tokens and copy (p 0.97 and up). Spelled as
word + suffix, the first token of the name is right in 36 of 40 with no training at all.

So: remove the merges that make a compound, and the merges that make a token spanning a
compound's word/suffix boundary (`tops` in `stat|ops`). One round of the latter only: the next
ones are the pieces the words themselves are built from (`co` of `core`), and BPE's merge order
then still cuts 26 of the 336 oddly, into frequent pieces (`sta to ps`). Token ids stay, so a
checkpoint keeps its shape; the compound tokens are simply never produced again.
"""

from __future__ import annotations

import json

from tools.training.demo_model.families import SUFFIXES, WORDS


def compound_names(words=WORDS, suffixes=SUFFIXES) -> dict[str, tuple[str, str]]:
    """Each compound package name the families make, with its word and suffix."""
    return {w + s: (w, s) for w in words for s in suffixes if s not in ("", "s")}


def _without(tokenizer_json: dict, names: set[str]) -> dict:
    merges = [m for m in tokenizer_json["model"]["merges"] if "".join(m) not in names]
    return {**tokenizer_json, "model": {**tokenizer_json["model"], "merges": merges}}


def split_compounds(tokenizer_json: dict, compounds: dict[str, tuple[str, str]]) -> dict:
    """The tokenizer (tokenizer.json's content) less the merges that make a compound or a token
    crossing a compound's word/suffix boundary."""
    from tokenizers import Tokenizer

    first = _without(tokenizer_json, set(compounds))
    tokenizer = Tokenizer.from_str(json.dumps(first))
    crossing = set()
    for name, (word, _) in compounds.items():
        encoding = tokenizer.encode(name, add_special_tokens=False)
        crossing |= {t for t, (a, b) in zip(encoding.tokens, encoding.offsets, strict=True) if a < len(word) < b}
    return _without(tokenizer_json, set(compounds) | crossing)
