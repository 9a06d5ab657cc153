"""Teacher-forced copy probe: can the model write a name it has never seen used there?

Each held-out session is renamed with fresh words (tools/training/demo_model/rename.py); every block
of every assistant turn that holds one of the new names is then scored at each name token
twice: with only that token masked and the rest of the block given (the last denoising
step, the easiest case), and with the whole block masked (the first step). A model that
copies from the prompt and the tool results scores on both; one that recalls its training
pools scores 0 even on the first, which is what run F did (docs/demo-model-training.md).
"""

from __future__ import annotations

import json
import random
import re

import torch

from tools.training.demo_model.attention import BLOCK, Layout
from tools.training.demo_model.chat import session_row
from tools.training.demo_model.rename import renamed, vocabulary_words
from tools.training.demo_model.train import Batch, forward, turn_blocks


def words_of(session: dict) -> set[str]:
    return set(re.findall(r"[A-Za-z]+", json.dumps(session["messages"])))


def name_blocks(tokenizer, row, new_words: set[str]):
    """(block start, 32 ids, offsets of new-name tokens) for each turn block holding one."""
    for start, block in turn_blocks(row, tokenizer.pad_token_id):
        names = [j for j, t in enumerate(block) if tokenizer.decode([t]).strip() in new_words]
        if names:
            yield start, block, names


@torch.no_grad()
def block_hits(model, ids: list[int], start: int, block: list[int], names: list[int], mask_id: int):
    """(hits with only the name masked, hits with the whole block masked) over `names`."""
    noisy = [[mask_id] * BLOCK] + [[mask_id if k == j else t for k, t in enumerate(block)] for j in names]
    L = len(ids)
    batch = Batch(torch.tensor([ids + [t for n in noisy for t in n]]),
                  torch.tensor([list(range(L)) + list(range(start, start + BLOCK)) * len(noisy)]),
                  None, Layout.of(L, [start] * len(noisy)), None, None, L)
    pred = model.lm_head(forward(model, batch).last_hidden_state[0]).argmax(-1)  # [T]
    first = sum(int(pred[L + j] == block[j]) for j in names)
    last = sum(int(pred[L + (k + 1) * BLOCK + j] == block[j]) for k, j in enumerate(names))
    return last, first


def copy_probe(model, tokenizer, sessions: list[dict], tools, seed: int = 7) -> dict:
    rng, words = random.Random(seed), vocabulary_words(tokenizer)
    last = first = count = 0
    model.eval()
    for session in sessions:
        fresh = renamed(session, rng, words)
        row = session_row(tokenizer, fresh, tools)
        for start, block, names in name_blocks(tokenizer, row, words_of(fresh) - words_of(session)):
            hit_last, hit_first = block_hits(model, row.ids, start, block, names, tokenizer.mask_token_id)
            last, first, count = last + hit_last, first + hit_first, count + len(names)
    return {"name_tokens": count, "only_name_masked": round(last / max(1, count), 4),
            "whole_block_masked": round(first / max(1, count), 4), "sessions": len(sessions)}
