"""What serving costs: `clover-code serve` + RemoteEngine on loopback vs the embedded
engine in-process, for the same request on the same checkpoint.

    python -m tools.bench.bench_remote [--json] [--model CKPT] [--runs 7] [--max-tokens 128]

block_latency_overhead_ms: per block, how much later it reaches the consumer through
serve + RemoteEngine than in-process, counted from the request (median over blocks and
runs; runs alternate A B A B after a warm-up). It holds the one-time request cost too;
first_block_overhead_ms is that block alone, added_per_later_block_ms how much the gap
grows from one block to the next. concurrent_sessions: the most sessions started at once
(1, 2, 4, 8, 16) that all got every block without an error. The server runs as a real
`clover-code serve` process; without --model a tiny checkpoint is built first.
Goal: block_latency_overhead_ms <= 5.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from clover_code.engine import ChatRequest
from clover_code.engine.wire.remote import RemoteEngine
from tools.bench.bench_machine import cpu_model

PROMPT = [{"role": "user", "content": "Write a short note about block diffusion."}]




def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(model: Path, port: int, threads: int) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    proc = subprocess.Popen([sys.executable, "-m", "clover_code.cli", "serve", "--model", str(model),
                             "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"clover-code serve exited: {proc.stderr.read()}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("clover-code serve did not come up within 180 s")


async def arrivals(engine, request: ChatRequest) -> list[float]:
    """Seconds from the request to each block's arrival."""
    return [block.seconds_since_start async for block in engine.stream(request)]


async def concurrent(url: str, request: ChatRequest, expected: int) -> int:
    best = 0
    for n in (1, 2, 4, 8, 16):
        engines = [RemoteEngine(url, idle_timeout=300) for _ in range(n)]
        results = await asyncio.gather(*(arrivals(e, request) for e in engines), return_exceptions=True)
        for e in engines:
            await e.aclose()
        if any(isinstance(r, BaseException) or len(r) != expected for r in results):
            break
        best = n
    return best


async def measure(model: Path, runs: int, max_tokens: int, threads: int) -> dict:
    import torch

    from clover_code.engine.embedded.engine import EmbeddedEngine

    torch.set_num_threads(threads)
    request = ChatRequest(messages=PROMPT, max_tokens=max_tokens)
    local = EmbeddedEngine(str(model))
    port = free_port()
    server = start_server(model, port, threads)
    url = f"http://127.0.0.1:{port}/v1"
    remote = RemoteEngine(url, idle_timeout=300)
    try:
        await arrivals(local, request), await arrivals(remote, request)  # warm-up
        per_block, firsts, growth, blocks = [], [], [], 0
        for _ in range(runs):
            a = await arrivals(local, request)
            b = await arrivals(remote, request)
            blocks = len(a)
            per_block += [rb - la for la, rb in zip(a, b, strict=False)]
            firsts.append(b[0] - a[0])
            growth += [(b[i] - b[i - 1]) - (a[i] - a[i - 1]) for i in range(1, min(len(a), len(b)))]
        sessions = await concurrent(url, request, blocks)
    finally:
        await remote.aclose()
        await local.aclose()
        server.terminate()
        server.wait(10)
    return {
        "block_latency_overhead_ms": round(statistics.median(per_block) * 1000, 3),
        "first_block_overhead_ms": round(statistics.median(firsts) * 1000, 3),
        "added_per_later_block_ms": round(statistics.median(growth) * 1000, 3),
        "blocks_per_reply": blocks, "runs": runs, "concurrent_sessions": sessions,
        "goal_block_latency_overhead_ms": 5.0, "threads": threads, "nproc": os.cpu_count(),
        "cpu": cpu_model(), "model": str(model)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--model", type=Path, help="checkpoint folder (default: build a tiny one)")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--threads", type=int, default=1, help="torch threads, per process")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model
        if model is None:
            from tools.training.make_tiny_model import make_tiny_model
            model = make_tiny_model(Path(tmp) / "tiny", "attention", peaked=True)
        result = asyncio.run(measure(model, args.runs, args.max_tokens, args.threads))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:32} {value}")


if __name__ == "__main__":
    main()
