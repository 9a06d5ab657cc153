"""The prefix-state cases of tools/bench/bench_engine.py (issue 35), one function per case, each
measured side by side (A B A B ...) through EmbeddedEngine on one tiny checkpoint:

  fusion          TPF and passes per denoise step, fused commit vs a pass of its own per commit
  edited_history  a 16K-token conversation (encoded once, cold) whose last user message is then
                  edited: the edited turn with state checkpoints vs without (a hybrid then
                  re-encodes from zero)
  alternating     three conversations of 8K tokens taking turns through one engine: per-turn
                  latency with the per-person prefix cache, without it, and one conversation alone
"""

from __future__ import annotations

import asyncio
import statistics
import time

RUNS = 5


def chat(messages: list[dict], max_tokens: int = 32):
    from clover_code.engine import ChatRequest

    return ChatRequest(messages=messages, max_tokens=max_tokens)


def stream(engine, request) -> tuple[float, list]:
    async def go():
        return [b async for b in engine.stream(request)]
    start = time.perf_counter()
    blocks = asyncio.run(go())
    return time.perf_counter() - start, blocks


def conversation(tokens: int, seed: int, turn_tokens: int = 1000) -> list[dict]:
    """User/assistant turns of about `turn_tokens` byte-level tokens each, `tokens` in all."""
    messages = []
    for n in range(max(1, tokens // turn_tokens)):
        text = " ".join(f"p{seed} t{n} line {i}: x = {i} * {seed}" for i in range(turn_tokens // 15))
        messages.append({"role": "user" if n % 2 == 0 else "assistant", "content": text[:turn_tokens - 12]})
    if messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": "and now?"})
    return messages


def fusion(folder) -> dict:
    from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
    from clover_code.engine.embedded.engine import EmbeddedEngine

    engine = EmbeddedEngine(folder)
    den = engine.denoiser
    import torch

    prompt = torch.tensor(engine.template.encode(chat([{"role": "user", "content": "Write a CSV parser in Python."}])))
    opts = DecodeOptions(mask_id=den.props.mask_token_id, stop_ids=engine.stop_ids, max_tokens=256)
    figures = {}
    for fuse in (True, False) * (RUNS + 1):
        den.fuse = fuse
        den.reset()
        steps = []
        start = time.perf_counter()
        blocks = list(decode_blocks(den, prompt, opts, on_step=steps.append))
        wall = time.perf_counter() - start
        tokens, passes = sum(len(b.tokens) for b in blocks), sum(b.steps for b in blocks)
        figures.setdefault(fuse, []).append((tokens / passes, passes / len(steps), wall))
    den.fuse = True
    fused, unfused = figures[True][1:], figures[False][1:]  # the first of each is the warm-up
    return {"tpf_fused": round(fused[0][0], 2), "tpf_unfused": round(unfused[0][0], 2),
            "passes_per_step_fused": round(fused[0][1], 3), "passes_per_step_unfused": round(unfused[0][1], 3),
            "fused_speedup": round(statistics.median(u[2] / f[2] for f, u in zip(fused, unfused, strict=False)), 2)}


def edited_history(folder, tokens: int = 16384) -> dict:
    from clover_code.engine.embedded.engine import EmbeddedEngine

    engines = {"with": EmbeddedEngine(folder), "without": EmbeddedEngine(folder, checkpoint_mb=0)}
    messages = conversation(tokens, 1)
    times, reuse = {"with": [], "without": []}, {}
    for run in range(RUNS + 1):
        edit = messages[-1]["content"][:-40] + f" (edit {run})"  # a new edit each run: never cached
        edited = messages[:-1] + [{"role": "user", "content": edit}]
        for name, engine in engines.items():
            engine.denoiser.reset()  # nothing from earlier runs: the first edit of this conversation
            stream(engine, chat(messages))  # untimed: the conversation as it was, cached
            elapsed, _ = stream(engine, chat(edited))
            times[name].append(elapsed)
            reuse[name] = engine.last_reuse
    ratio = statistics.median(b / a for a, b in zip(times["with"][1:], times["without"][1:], strict=False))
    return {"prompt_tokens": reuse["with"].reused + reuse["with"].encoded,
            "edit_turn_s_with_checkpoints": round(statistics.median(times["with"][1:]), 3),
            "edit_turn_s_without": round(statistics.median(times["without"][1:]), 3),
            "encoded_with_checkpoints": reuse["with"].encoded, "encoded_without": reuse["without"].encoded,
            "edit_speedup": round(ratio, 1)}


def alternating(folder, tokens: int = 8192, people: int = 3, rounds: int = 3) -> dict:
    from clover_code.engine.embedded.engine import EmbeddedEngine

    engines = {"cache": EmbeddedEngine(folder), "no_cache": EmbeddedEngine(folder, prefix_cache_mb=0),
               "single": EmbeddedEngine(folder)}
    histories = {(name, p): conversation(tokens, 10 + p) for name in engines for p in range(people)}
    times = {name: [] for name in engines}
    for r in range(rounds + 1):  # round 0 encodes every conversation once: not timed
        for p in range(people):
            for name, engine in engines.items():
                history = histories[name, 0 if name == "single" else p]  # "single": one conversation alone
                elapsed, blocks = stream(engine, chat(history))
                history += [{"role": "assistant", "content": "".join(b.text for b in blocks)},
                            {"role": "user", "content": f"round {r}: go on"}]
                if r:
                    times[name].append(elapsed)
    med = {name: statistics.median(t) for name, t in times.items()}
    return {"conversation_tokens": tokens, "people": people, "turn_s_cache": round(med["cache"], 3),
            "turn_s_no_cache": round(med["no_cache"], 3), "turn_s_single": round(med["single"], 3),
            "cache_vs_single": round(med["cache"] / med["single"], 2),
            "no_cache_vs_single": round(med["no_cache"] / med["single"], 2),
            **{k: v for k, v in engines["cache"].denoiser.report().items() if k.startswith(("cache", "conv"))}}
