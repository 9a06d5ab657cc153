"""Benchmark the embedded block-diffusion engine on the peaked tiny checkpoints.

    python tools/bench_engine.py [--json] [--kinds attention,hybrid] [--threads N]

Prints one JSON object keyed by checkpoint kind (`attention`, `hybrid`), each holding:
  tpf, tokens_per_s          a 256-token greedy reply through EmbeddedEngine.stream
  block_ms_by_prefix         one denoise pass of a 32-token block over 512 / 4096 / 16384 cached tokens
  speedup_vs_one_per_step    same model and cache, threshold 0.95 vs one token committed per forward
  speedup_vs_hf_generate     vs transformers generate() (greedy, autoregressive) on the attention-only
                             tiny model of the same size, same number of new tokens
  prefix_reuse_speedup       follow-up turn of a 16K-token conversation: prefix reused vs re-encoded
  python_overhead_fraction   share of decode wall time spent outside model forward passes
  peak_rss_mb                peak resident memory of the process that measured this kind
Timings are medians of >= 5 runs after a warm-up; ratios are medians of A/B pairs run
side by side. Each kind runs in its own process, so peak_rss_mb is its own.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from bench_machine import cpu_model

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tools")]

RUNS = 5
REPLY_TOKENS = 256
PREFIXES = (512, 4096, 16384)
CONVERSATION_TOKENS = 16384


def median_time(fn, runs: int = RUNS) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def paired_ratio(slow, fast, runs: int = RUNS) -> float:
    """Median over A/B pairs of time(slow) / time(fast), run alternately after a warm-up."""
    slow(), fast()
    ratios = []
    for _ in range(runs):
        t0 = time.perf_counter()
        slow()
        t1 = time.perf_counter()
        fast()
        t2 = time.perf_counter()
        ratios.append((t1 - t0) / (t2 - t1))
    return statistics.median(ratios)


def chat(text: str, max_tokens: int):
    from clover_code.engine import ChatRequest

    return ChatRequest(messages=[{"role": "user", "content": text}], max_tokens=max_tokens)


def run_stream(engine, request) -> list:
    async def go():
        return [b async for b in engine.stream(request)]
    return asyncio.run(go())


def measure_kind(kind: str, folders: dict[str, Path]) -> dict:
    import torch

    from clover_code.engine.decoding import DecodeOptions, decode_blocks
    from clover_code.engine.embedded import EmbeddedEngine

    engine = EmbeddedEngine(folders[kind])
    den = engine.denoiser
    forward_s = [0.0]
    raw_forward = den._forward

    def timed_forward(*a, **kw):
        start = time.perf_counter()
        try:
            return raw_forward(*a, **kw)
        finally:
            forward_s[0] += time.perf_counter() - start

    den._forward = timed_forward

    # tpf, tokens/s, Python overhead: whole replies through the engine's stream.
    request = chat("Write a Python function that parses a CSV file.", REPLY_TOKENS)
    stats = []
    for i in range(RUNS + 1):
        forward_s[0] = 0.0
        start = time.perf_counter()
        blocks = run_stream(engine, request)
        wall = time.perf_counter() - start
        if i:  # the first run is the warm-up
            tokens, passes = sum(b.tokens for b in blocks), sum(b.steps for b in blocks)
            stats.append((tokens / passes, tokens / wall, 1 - forward_s[0] / wall))
    tpf = statistics.median(s[0] for s in stats)
    tokens_per_s = statistics.median(s[1] for s in stats)
    overhead = statistics.median(s[2] for s in stats)

    # One denoise pass over a cached prefix of growing length.
    block_ms = {}
    gen = torch.Generator().manual_seed(0)
    mask_block = torch.full((engine.block_size,), den.props.mask_token_id)
    for prefix in PREFIXES:
        den.reset()
        den.commit(torch.randint(0, 256, (prefix,), generator=gen))
        block_ms[str(prefix)] = round(median_time(lambda: den.denoise(mask_block)) * 1000, 2)

    # Same model, one token per forward: a threshold above 1 never passes, so each step commits its top-1.
    prompt = torch.tensor(engine._render(request))

    def decode(threshold: float, tokens: int = 96):
        den.reset()
        opts = DecodeOptions(mask_id=den.props.mask_token_id, stop_ids=engine.stop_ids, threshold=threshold,
                             max_tokens=tokens, block_size=engine.block_size)
        for _ in decode_blocks(den, prompt, opts):
            pass
    one_per_step = paired_ratio(lambda: decode(2.0), lambda: decode(engine.threshold))

    # transformers generate(), autoregressive, on the attention-only model of the same size.
    from transformers import AutoModelForCausalLM

    ar = AutoModelForCausalLM.from_pretrained(folders["attention"]).eval()
    ar_ids = prompt[None]

    def hf_generate():
        with torch.inference_mode():
            ar.generate(ar_ids, attention_mask=torch.ones_like(ar_ids), max_new_tokens=REPLY_TOKENS,
                        min_new_tokens=REPLY_TOKENS, do_sample=False, pad_token_id=0)
    vs_hf = paired_ratio(hf_generate, lambda: decode(engine.threshold, REPLY_TOKENS))

    # Follow-up turn of a 16K-token conversation: reuse vs re-encoding everything.
    words = " ".join(f"line {i}: x = {i} * 2" for i in range(CONVERSATION_TOKENS))
    first = chat(words.encode()[: CONVERSATION_TOKENS - 40].decode(errors="ignore"), 32)
    reply = "".join(b.text for b in run_stream(engine, first))
    follow = chat("", 32)
    follow.messages = first.messages + [{"role": "assistant", "content": reply},
                                        {"role": "user", "content": "now explain it"}]

    def with_reuse():
        run_stream(engine, follow)

    def re_encode():
        den.reset()
        run_stream(engine, follow)

    def prime_then(fn):
        def run():
            den.reset()
            run_stream(engine, first)  # untimed: leaves the first turn cached
            start = time.perf_counter()
            fn()
            return time.perf_counter() - start
        return run
    pairs = [(prime_then(re_encode)(), prime_then(with_reuse)()) for _ in range(RUNS + 1)][1:]
    reuse_speedup = statistics.median(a / b for a, b in pairs)
    reused = engine.reused_tokens

    return {
        "tpf": round(tpf, 2),
        "tokens_per_s": round(tokens_per_s, 1),
        "block_ms_by_prefix": block_ms,
        "speedup_vs_one_per_step": round(one_per_step, 2),
        "speedup_vs_hf_generate": round(vs_hf, 2),
        "prefix_reuse_speedup": round(reuse_speedup, 1),
        "prefix_reused_tokens": reused,
        "python_overhead_fraction": round(overhead, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "threads": torch.get_num_threads(),
        "machine": f"{os.cpu_count()} CPUs, {cpu_model()}",
    }




def build_checkpoints(out: Path) -> dict[str, Path]:
    from make_tiny_model import make_tiny_model

    return {kind: out / kind if (out / kind / "config.json").exists() else make_tiny_model(out / kind, kind,
                                                                                           peaked=True)
            for kind in ("attention", "hybrid")}


def table(results: dict) -> str:
    rows = ["kind", "tpf", "tokens_per_s", *(f"block_ms@{p}" for p in PREFIXES), "speedup_vs_one_per_step",
            "speedup_vs_hf_generate", "prefix_reuse_speedup", "python_overhead_fraction", "peak_rss_mb"]
    lines = []
    for name in rows:
        cells = []
        for kind, r in results.items():
            if name == "kind":
                cells.append(kind)
            elif name.startswith("block_ms@"):
                cells.append(str(r["block_ms_by_prefix"][name.split("@")[1]]))
            else:
                cells.append(str(r[name]))
        lines.append(f"{name:<26}" + "".join(f"{c:>14}" for c in cells))
    first = next(iter(results.values()))
    lines.append(f"threads {first['threads']}, {first['machine']}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--kinds", default="attention,hybrid")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: tiny models on shared cores)")
    p.add_argument("--checkpoints", help="folder for the tiny checkpoints (default: a temp dir)")
    p.add_argument("--only", help=argparse.SUPPRESS)  # child process: measure one kind, print its JSON
    a = p.parse_args()
    import torch

    torch.set_num_threads(a.threads)
    if a.only:
        print(json.dumps(measure_kind(a.only, build_checkpoints(Path(a.checkpoints)))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(a.checkpoints or tmp)
        build_checkpoints(folder)
        results = {}
        for kind in a.kinds.split(","):
            child = subprocess.run([sys.executable, __file__, "--only", kind, "--checkpoints", str(folder),
                                    "--threads", str(a.threads)], capture_output=True, text=True)
            if child.returncode:
                sys.exit(f"bench of {kind} failed:\n{child.stderr[-3000:]}")
            results[kind] = json.loads(child.stdout.strip().splitlines()[-1])
    print(json.dumps(results, indent=2) if a.json else table(results))


if __name__ == "__main__":
    main()
