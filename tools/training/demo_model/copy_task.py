"""Bare copy rows: the densest copy signal a session-shaped row can carry.

A user message holds a span of random words between backticks, amid other random words;
the assistant turn repeats the span. Nothing in the row can be remembered: every target
token is in the prompt, and only attention that finds the span and follows it along
predicts it. The rows are trained with the sessions' objective (`--copy-rate`), so a copy
learned here is one the denoiser uses. Unlike the bare span-repeat task of session 7 (a
copy from ~5,000 sequences), 9,600 of these rows taught the shipped model little (span
tokens 16% with only that token masked; see docs/demo-model-training.md). Without the
noise (`noise=0`) and with the next-token loss on the turn only (`--ar-scope turns`) they
did better but no more than half: the shipped model 46% in 1,400 steps of 16 rows, a new
model 36% in 600, rising slowly, and neither copy carried over to the drills."""

from __future__ import annotations

import random

from tools.training.demo_model.chat import Row

# what joins the words of a span: the separators of code, paths and prose
SEPARATORS = [" ", " ", " ", "_", "_", "/", ".", ", ", " = ", "(", ") ", "\n    ", ": "]


def random_words(rng: random.Random, words: list[str], count: int) -> str:
    text = rng.choice(words)
    for _ in range(count - 1):
        text += rng.choice(SEPARATORS) + rng.choice(words)
    return text


def copy_row(tokenizer, rng: random.Random, words: list[str], noise: int = 40) -> Row:
    """`... `span` ...` in a user turn (up to `noise` random words either side; none: the
    bare span), the span as the assistant's turn."""
    span = random_words(rng, words, rng.randint(1, 24))
    user = f"`{span}`"
    if noise:
        before, after = (random_words(rng, words, rng.randint(1, noise)) for _ in range(2))
        user = f"{before} {user} {after}"
    # the markup written out: the chat template would add its default system turn, and a
    # copy row is short so that it is cheap
    prompt = f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
    ids = tokenizer.encode(prompt, add_special_tokens=False)
    turn = tokenizer.encode(f"{span}<|im_end|>", add_special_tokens=False)
    return Row(ids + turn, [(len(ids), len(ids) + len(turn))], "copy")
