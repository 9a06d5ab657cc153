"""Block-diffusion training of the demo model over the assistant turns of sessions.

Attention-only models (`qwen3_moe`) train with two streams in one pass: the clean
sequence (causal), then noisy copies of every assistant block, each seeing the clean
tokens before the block and itself both ways: exactly what the engine's denoiser sees
at inference (prefix_attention "causal", blocks aligned at the prompt's end, logits at
position i predicting token i). Hybrids (`qwen3_5_moe`) cannot: their DeltaNet layers
read the sequence in order, so a noisy block must directly follow its prefix; they
train one block per sequence.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from tools.training.demo_model.attention import BLOCK, Layout
from tools.training.demo_model.attention import NAME as TWO_STREAM
from tools.training.demo_model.chat import Row


@dataclass
class Batch:
    """One sequence (B = 1) or several packed side by side (`pack`). Positions are flat
    indices into the [B * T] tokens, so one gather serves either."""

    input_ids: torch.Tensor  # [B, T]
    position_ids: torch.Tensor  # [B, T]
    mask: torch.Tensor | None  # [1, 1, T, T] additive (one_block)
    layout: Layout | None  # or the two-stream layout (tools/training/demo_model/attention.py)
    targets: torch.Tensor  # [N] token ids at the noisy positions that are masked
    rows: torch.Tensor  # [N] their flat positions
    noisy_from: int  # first position of the noisy stream (in every row)
    answers: torch.Tensor | None = None  # [A] flat clean positions inside assistant turns
    clean: torch.Tensor | None = None  # [C] flat clean positions that have a token before them
    tokens: int = 0  # real (unpadded) sequence tokens

    def to(self, device, non_blocking: bool = False) -> Batch:
        moved = {f.name: getattr(self, f.name).to(device, non_blocking=non_blocking)
                 for f in dataclasses.fields(self) if isinstance(getattr(self, f.name), torch.Tensor)}
        if self.layout is not None:
            moved["layout"] = self.layout.to(device, non_blocking)
        return dataclasses.replace(self, **moved)


def answer_positions(row: Row, before: int) -> torch.Tensor:
    """Positions of assistant-turn tokens that have a token before them and lie before `before`."""
    return torch.tensor([t for start, end in row.turns for t in range(max(1, start), min(end, before))],
                        dtype=torch.long)


def turn_blocks(row: Row, filler: int) -> list[tuple[int, list[int]]]:
    """(start position, 32 target ids) for every block of every assistant turn; a turn's
    last block is padded with the filler token after <|im_end|>."""
    blocks = []
    for start, end in row.turns:
        for b in range(start, end, BLOCK):
            ids = row.ids[b:min(b + BLOCK, end)]
            blocks.append((b, ids + [filler] * (BLOCK - len(ids))))
    return blocks


def noise(block: list[int], mask_id: int, rng: random.Random) -> tuple[list[int], list[int]]:
    """The block with a random fraction of positions masked (at least one); masked offsets."""
    rate = rng.uniform(0.02, 1.0)
    hidden = [j for j in range(BLOCK) if rng.random() < rate] or [rng.randrange(BLOCK)]
    noisy = list(block)
    for j in hidden:
        noisy[j] = mask_id
    return noisy, hidden


State = tuple[int, list[int], list[int]]  # a noisy block: (start position, 32 target ids, 32 ids with masks)


def two_stream(row: Row, mask_id: int, filler: int, rng: random.Random, copies: int,
               states: list[State] = ()) -> Batch:
    """Clean sequence + `copies` noisy versions of each assistant block with random masks,
    then the given (start, block, noisy block) states (tools/training/demo_model/on_policy.py)."""
    L = len(row.ids)
    ids, pos, targets, where, starts = list(row.ids), list(range(L)), [], [], []
    randomly = [(start, block, *noise(block, mask_id, rng)) for _ in range(copies)
                for start, block in turn_blocks(row, filler)]
    given = [(start, block, noisy, [j for j, t in enumerate(noisy) if t == mask_id]) for start, block, noisy in states]
    for start, block, noisy, hidden in randomly + given:
        at = len(ids)
        starts.append(start)
        ids += noisy
        pos += range(start, start + BLOCK)
        targets += [block[j] for j in hidden]
        where += [at + j for j in hidden]
    return Batch(torch.tensor([ids]), torch.tensor([pos]), None, Layout.of(L, starts), torch.tensor(targets),
                 torch.tensor(where), L, answer_positions(row, L), torch.arange(1, L), len(ids))


def pack(parts: list[Batch], filler: int) -> Batch:
    """Several rows' two-stream batches as one padded batch [B, L + N]: every row's clean
    stream from 0, its noisy blocks from L (the longest clean stream, rounded up to a
    block so the mask's rows stay aligned for the GPU kernels). No real query sees a
    padded key, and padding is never a target."""
    L = -(-max(p.noisy_from for p in parts) // BLOCK) * BLOCK
    N = max(p.input_ids.shape[1] - p.noisy_from for p in parts)
    B, T = len(parts), L + N
    ids = torch.full((B, T), filler, dtype=torch.long)
    pos = torch.zeros((B, T), dtype=torch.long)
    prefix = torch.ones((B, N), dtype=torch.long)  # a padded query sees the first key (none at all gives NaN)
    own = torch.full((B, N), T, dtype=torch.long)  # and no block
    rows, answers, clean = [], [], []
    for b, p in enumerate(parts):
        kept, n = p.noisy_from, p.input_ids.shape[1] - p.noisy_from
        for dst, src in ((ids, p.input_ids), (pos, p.position_ids)):
            dst[b, :kept], dst[b, L:L + n] = src[0, :kept], src[0, kept:]
        prefix[b, :n], own[b, :n] = p.layout.prefix[0], p.layout.own[0] - kept + L
        rows.append(b * T + torch.where(p.rows >= kept, p.rows - kept + L, p.rows))
        answers.append(b * T + p.answers)
        clean.append(b * T + p.clean)
    return Batch(ids, pos, None, Layout(L, prefix, own, T), torch.cat([p.targets for p in parts]),
                 torch.cat(rows), L, torch.cat(answers), torch.cat(clean), sum(p.tokens for p in parts))


def one_block(row: Row, mask_id: int, filler: int, rng: random.Random) -> Batch:
    """Prefix + one noisy block, for hybrids: the block directly follows its prefix."""
    start, block = rng.choice(turn_blocks(row, filler))
    noisy, hidden = noise(block, mask_id, rng)
    ids = row.ids[:start] + noisy
    T = len(ids)
    visible = torch.ones(T, T, dtype=torch.bool).tril()
    visible[start:, start:] = True
    mask = torch.zeros(T, T).masked_fill(~visible, torch.finfo(torch.float32).min)
    return Batch(torch.tensor([ids]), torch.arange(T)[None], mask[None, None], None,
                 torch.tensor([block[j] for j in hidden]), torch.tensor([start + j for j in hidden]), start,
                 answer_positions(row, start), torch.arange(1, start), T)


def balance_loss(router_logits, experts: int, top_k: int) -> torch.Tensor:
    """Switch-style load balancing over the routed tokens of every MoE layer."""
    total = 0.0
    for logits in router_logits:  # [T, E] per layer
        probs = logits.float().softmax(-1)
        chosen = F.one_hot(probs.topk(top_k, -1).indices, experts).sum(1).float()  # [T, E]
        total = total + experts * (chosen.mean(0) / top_k * probs.mean(0)).sum()
    return total / max(1, len(router_logits))


def forward(model, batch: Batch, **kwargs):
    """The model's forward over a training batch (last_hidden_state [1, T, H])."""
    if batch.layout is not None:
        if model.config._attn_implementation != TWO_STREAM:
            model.set_attn_implementation(TWO_STREAM)
        kwargs["two_stream"] = batch.layout
    return model.model(input_ids=batch.input_ids, position_ids=batch.position_ids, attention_mask=batch.mask,
                       use_cache=False, **kwargs)


def next_token_loss(model, hidden: torch.Tensor, batch: Batch, scope: str) -> torch.Tensor:
    """Causal LM loss over the clean stream ([B * T, H] hidden): every token after the
    first, or (scope "turns") the assistant turns' tokens only."""
    targets = batch.clean if scope == "all" else batch.answers  # [A] flat positions
    if not targets.numel():  # a hybrid's first block has no turn before it
        return hidden.new_zeros(())
    logits = model.lm_head(hidden[targets - 1]).float()  # [A, V]: each predicts the token after it
    return F.cross_entropy(logits, batch.input_ids.flatten()[targets])


def certainty_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean entropy of the predictions ([N, V] logits) whose top pick is already the target:
    dParallel's certainty forcing. Cross-entropy alone leaves a right pick at 0.7 as happy as
    at 0.99; the threshold rule commits it only at 0.95, so a pass at a high mask ratio commits
    few of the tokens the model already knows. Wrong picks get no such push."""
    right = logits.argmax(-1) == targets  # [N]
    if not right.any():
        return logits.new_zeros(())
    log_p = logits[right].log_softmax(-1)  # [R, V]
    return -(log_p.exp() * log_p).sum(-1).mean()


def step_loss(model, batch: Batch, aux_coef: float, ar_weight: float = 0.0,
              ar_scope: str = "all", certainty_weight: float = 0.0) -> tuple[torch.Tensor, float, int]:
    """Cross-entropy over the masked noisy positions; (loss, accuracy, count).

    With `ar_weight`, plus next-token cross-entropy over the clean (causal) prefix stream:
    every token of the session then teaches the prefix states what comes next, the
    signal that copying (induction) is learned from, as in the AR models block-diffusion
    LMs are usually converted from. It costs one head product over the clean stream.
    `ar_scope` "turns" keeps only the tokens of assistant turns as next-token targets:
    file contents, invented names and test output are unpredictable where they first
    appear, and their loss would outweigh the calls that copy them. `certainty_weight` adds
    `certainty_loss` over the masked positions (issue 46: more tokens per pass)."""
    moe = aux_coef > 0 and hasattr(model.config.get_text_config(), "num_experts")
    out = forward(model, batch, output_router_logits=moe)
    every = out.last_hidden_state.flatten(0, 1)  # [B * T, H]
    logits = model.lm_head(every[batch.rows]).float()  # [N, V]
    loss = F.cross_entropy(logits, batch.targets)
    if certainty_weight > 0:
        loss = loss + certainty_weight * certainty_loss(logits, batch.targets)
    if ar_weight > 0:
        loss = loss + ar_weight * next_token_loss(model, every, batch, ar_scope)
    if moe and getattr(out, "router_logits", None):
        cfg = model.config.get_text_config()
        loss = loss + aux_coef * balance_loss(out.router_logits, cfg.num_experts, cfg.num_experts_per_tok)
    acc = (logits.argmax(-1) == batch.targets).float().mean().item()
    return loss, acc, int(batch.targets.numel())


def lr_at(step: int, steps: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


class Meter:
    """Running means for the log line."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.loss = self.acc = 0.0
        self.n = self.tokens = 0
        self.start = time.perf_counter()

    def add(self, loss: float, acc: float, tokens: int):
        self.loss += loss
        self.acc += acc
        self.n += 1
        self.tokens += tokens

    def line(self) -> str:
        n = max(1, self.n)
        secs = time.perf_counter() - self.start
        return (f"loss {self.loss / n:.3f} acc {self.acc / n:.3f} seq-tokens/s {self.tokens / secs:.0f} "
                f"batches/s {self.n / secs:.2f}")
