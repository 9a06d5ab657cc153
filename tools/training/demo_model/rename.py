"""Fresh names for a generated session, so that copying is the only way to be right.

The families draw package, module and function names from small pools; a small model
learns those pools and writes `numkit` where the task says `netkit`. Training on copies
of sessions whose names are replaced, consistently in every message and tool result, by
invented ones it has never seen makes remembering useless and copying pay. The
replacement treats `_` as a boundary (as the rename family's `sed` does), so
`test_strip_digits` follows `strip_digits`. Parameters and local variables are renamed too:
a fix must write the names the file it read uses (`ordered`), not the pool's (`s`). The
names of the fix-bug family's functions stay (`MEANINGFUL`).

An invented word is spelled in single characters by a tokenizer that never saw it, while
the pool's names are single tokens; so most new names are drawn instead from the words the
tokenizer has a token for (`vocabulary_words`), which makes copying a whole-word token, the
case the real tasks need, the only way to be right.
"""

from __future__ import annotations

import json
import keyword
import random
import re

from tools.training.demo_model.families import NEW_FUNCTIONS, numeric_functions

ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z",
          "br", "cr", "dr", "fl", "gr", "kl", "pl", "pr", "st", "tr", "sk"]
VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o"]
CODAS = ["", "", "", "n", "r", "l", "s", "x", "k", "m"]
KEEP = set(keyword.kwlist) | {"test", "tests", "main", "self", "cls", "print", "len", "sum", "min", "max",
                              "sorted", "list", "dict", "str", "int", "float", "range", "pytest", "python"}
# A fix-bug task's bug is known by its function's name (a median of an even-length list is
# the mean of the two middle values); renamed, the right fix is unknowable and the model
# learns to guess one (the runs after K wrote mean's, clamp's or mode's fix for the demo's median).
# Likewise the add-function family's new function: renamed, its body is no longer tied to its
# name, and runs up to N2 wrote count_vowels' body under strip_digits' signature.
MEANINGFUL = ({bug.name for bug in numeric_functions({"xs": "xs", "ordered": "o", "mid": "m"})}
              | {new.name for new in NEW_FUNCTIONS})


def invented_word(rng: random.Random) -> str:
    return "".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS) for _ in range(rng.randint(1, 3)))


WORD_SHARE = 0.7  # of the parts of new names that are vocabulary words


def vocabulary_words(tokenizer) -> list[str]:
    """Lower-case words of 3+ letters that are one token, less the hex runs of commit ids."""
    return sorted(w for w in tokenizer.get_vocab()
                  if w.isascii() and w.isalpha() and w.islower() and len(w) >= 3 and set(w) - set("abcdef"))


def invented_name(rng: random.Random, like: str, words: list[str] = ()) -> str:
    """As many `_`-joined parts as `like` has (at most 3), each a vocabulary word or an
    invented one."""
    return "_".join(rng.choice(words) if words and rng.random() < WORD_SHARE else invented_word(rng)
                    for _ in range(min(3, like.count("_") + 1)))


PARAMS = re.compile(r"^def \w+\(([^)]*)\)", re.M)
ASSIGNED = re.compile(r"^\s+(\w+) = ", re.M)


def local_names(code: str) -> set[str]:
    """The parameters and assigned local variables of a module's functions, less any name
    also used as an attribute (`counts.values()` must keep its `values`)."""
    names = set(ASSIGNED.findall(code))
    for params in PARAMS.findall(code):
        names.update(re.match(r"\s*(\w*)", p).group(1) for p in params.split(","))
    return {n for n in names if n and not re.search(rf"\.{n}\b", code)}


def session_names(session: dict) -> set[str]:
    """The names a session's task is about: its packages and modules, the functions its
    files and its tool calls define with their parameters and locals, and the identifiers
    the user put in backticks."""
    names: set[str] = set()
    for path, text in session["files"].items():
        parts = path.removesuffix(".py").split("/")
        if path.endswith(".py") and parts[0] != "tests":
            names.update(p for p in parts if p != "__init__")
            names.update(re.findall(r"^def (\w+)", text, re.M))
            names.update(local_names(text))
    for m in session["messages"]:
        if m["role"] == "user":
            names.update(re.findall(r"`(\w+)`", m["content"]))
        for call in m.get("tool_calls") or []:
            names.update(re.findall(r"def (\w+)", call["function"]["arguments"]))
    return {n for n in names if len(n) >= 3 and n not in KEEP and n not in MEANINGFUL
            and not n.startswith(("test", "_"))}


def renamed(session: dict, rng: random.Random, words: list[str] = ()) -> dict:
    """The session with every one of its names replaced by a fresh one: a word no message
    or file of the session uses, so that the renaming never collides with its code."""
    # longest first, so a name is replaced before any name inside it; ties by spelling, since
    # a set's order changes with the interpreter's hash seed and the renaming must not
    names = sorted(session_names(session), key=lambda n: (-len(n), n))
    if not names:
        return session
    mapping: dict[str, str] = {}
    texts = [json.dumps(session["messages"]), *session["files"].values()]
    used = set(names) | {w for text in texts for w in re.findall(r"[A-Za-z0-9]+", text)}
    for name in names:
        new = invented_name(rng, name, words)
        while new in KEEP or keyword.iskeyword(new) or used & set(new.split("_")):
            new = invented_name(rng, name, words)
        mapping[name] = new
        used.update(new.split("_"))
    pattern = re.compile(r"(?<![A-Za-z0-9])(" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9])")

    def sub(text: str) -> str:
        return pattern.sub(lambda m: mapping[m.group(1)], text)

    messages = []
    for m in session["messages"]:
        m = dict(m)
        if m["role"] != "system" and m.get("content"):
            m["content"] = sub(m["content"])
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "function": {**c["function"], "arguments": sub(c["function"]["arguments"])}}
                               for c in m["tool_calls"]]
        messages.append(m)
    return {**session, "messages": messages}
