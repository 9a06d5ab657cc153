"""Bare copy rows: the densest copy signal there is, to form a copy circuit early.

A user message holds a span of random words between backticks, amid other random words;
the assistant turn repeats the span. Nothing in the row can be remembered: every target
token is in the prompt, and only attention that finds the span and follows it along
predicts it. In session 7 a 4-layer model of this size copied nothing after 1,200 such
sequences and every span after some 5,000; the task families' sparse copy signal never
formed that circuit. The rows are trained with the same block-diffusion objective (and
next-token loss) as the sessions, so the circuit is one the denoiser uses.
"""

from __future__ import annotations

import random

from tools.demo_model.chat import Row

# what joins the words of a span: the separators of code, paths and prose
SEPARATORS = [" ", " ", " ", "_", "_", "/", ".", ", ", " = ", "(", ") ", "\n    ", ": "]


def random_words(rng: random.Random, words: list[str], count: int) -> str:
    text = rng.choice(words)
    for _ in range(count - 1):
        text += rng.choice(SEPARATORS) + rng.choice(words)
    return text


def copy_row(tokenizer, rng: random.Random, words: list[str]) -> Row:
    """`... `span` ...` in a user turn, the span as the assistant's turn."""
    span = random_words(rng, words, rng.randint(1, 24))
    before, after = random_words(rng, words, rng.randint(1, 40)), random_words(rng, words, rng.randint(1, 40))
    prompt = f"<|im_start|>user\n{before} `{span}` {after}<|im_end|>\n<|im_start|>assistant\n"
    ids = tokenizer.encode(prompt, add_special_tokens=False)
    turn = tokenizer.encode(f"{span}<|im_end|>", add_special_tokens=False)
    return Row(ids + turn, [(len(ids), len(ids) + len(turn))], "copy")
