"""What Messages and Responses cost over Chat Completions in `clover-code serve`, and how soon
a Claude Code-sized request gets its first event.

    python tools/bench/bench_formats.py [--json] [--runs 9] [--threads 1] [--cold-runs 2] [--warm-runs 5] [--no-long]

writer_us_per_block     per committed block, in-process: splitting the block (reply.py) and
                        rendering its events, for each format; `*_over_chat` the difference
http_ms_per_block_over_chat
                        per block, over HTTP on loopback on the same tiny checkpoint and the same
                        greedy reply: a format's median gap between block events minus Chat's,
                        median of rounds that take the formats in turn (A B C, C B A, ...) after a
                        warm-up, with the spread of the rounds. Goal: within 1 ms.
first_event_85kb        an ~85 KB request shaped as Claude Code's (billing header, 24 tools with
                        long descriptions, system blocks, a user turn): seconds to the first event
                        (message_start) and to the first block (content_block_delta), cold (a
                        prompt the prefix cache has never seen) and warm (the next turn, under a
                        new billing header: only the new tokens are encoded); cold runs are few
                        (each encodes the whole prompt, minutes on 2 cores), warm ones >= 5
The server is a real `clover-code serve` process on a tiny attention checkpoint built here, its
window raised to 131,072 tokens (its tokenizer is byte-level: the 85 KB request is ~80K tokens,
some four times what a BPE tokenizer such as Clover's makes of it).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from clover_code.engine import Block
from clover_code.engine.wire.chat import ChatDialect
from clover_code.engine.wire.messages import MessagesDialect
from clover_code.engine.wire.reply import Reply
from clover_code.engine.wire.responses import ResponsesDialect
from tools.bench.bench_machine import machine_info
from tools.bench.bench_remote import free_port

ROOT = Path(__file__).resolve().parents[2]

ASK = "Write a short note about block diffusion."
BLOCK_TEXT = "the committed block of thirty-two tokens, as a model writes it, with words and spaces "
FORMATS = ("chat", "messages", "responses")


def tiny_checkpoint(folder: Path) -> Path:
    from tools.training.make_tiny_model import make_tiny_model

    path = make_tiny_model(folder / "tiny", "attention", peaked=True)
    config = json.loads((path / "config.json").read_text())
    config["max_position_embeddings"] = 131_072  # room for a Claude Code request in byte tokens
    (path / "config.json").write_text(json.dumps(config))
    return path


# --- in-process: the writers ------------------------------------------------------------------

def writer_seconds(name: str, blocks: list[Block]) -> float:
    dialect = {"chat": ChatDialect(), "messages": MessagesDialect(), "responses": ResponsesDialect()}[name]
    body = {"model": "m", "max_tokens": 4096, "stream": True}
    body |= {"input": ASK} if name == "responses" else {"messages": [{"role": "user", "content": ASK}]}
    call = dialect.parse(body, {}, 131_072)
    start = time.perf_counter()
    reply, writer = Reply(call.request, 20), dialect.writer(call, "m", 20)
    out = list(writer.start())
    for block in blocks:
        segments = reply.split(block)
        out += writer.block(segments, block, reply.end(block) if block.finish else None)
    return time.perf_counter() - start


def writer_costs(runs: int) -> dict[str, float]:
    blocks = [Block(BLOCK_TEXT, 32, 2, 0.1, 40.0, i, finish="stop" if i == 255 else None) for i in range(256)]
    per = {name: [] for name in FORMATS}
    for name in FORMATS:
        writer_seconds(name, blocks)  # warm-up
    for _ in range(runs):
        for name in FORMATS:
            per[name].append(writer_seconds(name, blocks) / len(blocks))
    out = {name: round(statistics.median(v) * 1e6, 2) for name, v in per.items()}
    for name in FORMATS[1:]:
        out[f"{name}_over_chat"] = round(out[name] - out["chat"], 2)
    return out


# --- over HTTP --------------------------------------------------------------------------------

def request_for(name: str, max_tokens: int) -> tuple[str, dict]:
    if name == "chat":
        return "/v1/chat/completions", {"messages": [{"role": "user", "content": ASK}], "max_tokens": max_tokens,
                                        "stream": True}
    if name == "messages":
        return "/v1/messages", {"model": "m", "messages": [{"role": "user", "content": ASK}],
                                "max_tokens": max_tokens, "stream": True}
    return "/v1/responses", {"model": "m", "input": ASK, "max_output_tokens": max_tokens, "stream": True}


def streamed(root: str, path: str, body: dict) -> tuple[float, list[float]]:
    """(seconds to the first event, seconds to each block event), counted from the request."""
    start, first, blocks = time.perf_counter(), None, []
    with httpx.stream("POST", root + path, json=body, timeout=3600) as r:
        for line in r.iter_lines():
            if not line.startswith("data: "):
                continue
            now = time.perf_counter() - start
            first = now if first is None else first
            if '"clover":' in line:
                blocks.append(now)
    return first or 0.0, blocks


def http_overhead(root: str, runs: int, max_tokens: int) -> dict:
    """Per round, each format's median gap between block events minus Chat's; median of rounds."""
    for name in FORMATS:
        streamed(root, *request_for(name, max_tokens))  # warm-up (and the prompt cached, alike for all)
    over: dict[str, list[float]] = {name: [] for name in FORMATS[1:]}
    counts = set()
    for run in range(runs):
        gaps = {}
        for name in FORMATS if run % 2 == 0 else FORMATS[::-1]:  # A B C, C B A, ...
            _, at = streamed(root, *request_for(name, max_tokens))
            gaps[name] = statistics.median(b - a for a, b in itertools.pairwise(at))
            counts.add(len(at))
        for name in FORMATS[1:]:
            over[name].append(gaps[name] - gaps["chat"])
    assert len(counts) == 1, f"the formats got different replies: {counts}"
    out: dict = {}
    for name, diffs in over.items():
        out[f"{name}_ms"] = round(statistics.median(diffs) * 1000, 3)
        out[f"{name}_rounds_ms"] = [round(min(diffs) * 1000, 1), round(max(diffs) * 1000, 1)]  # the spread
    return {**out, "blocks_per_reply": counts.pop(), "goal_ms": 1.0}


# --- a Claude Code-sized request -----------------------------------------------------------------

def claude_code_shaped(nonce: str) -> dict:
    """~85 KB in Claude Code's shape: its billing header, 24 tools, system blocks, a user turn."""
    prose = ("Use this tool when the task calls for it; read its parameters carefully, prefer the "
             "narrowest call that does the job, and report what it returned before going on. ")
    tools = [{"name": f"Tool{i}", "description": f"Tool {i}. " + prose * 18, "input_schema": {
        "type": "object", "properties": {"path": {"type": "string", "description": "an absolute path"},
                                         "limit": {"type": "integer"}}, "required": ["path"]}}
             for i in range(24)]
    header = f"x-anthropic-billing-header: cc_version=2.1.197.{nonce[:3]}; cc_entrypoint=cli;"
    system = [{"type": "text", "text": header},
              {"type": "text", "text": f"You are an agent ({nonce}).", "cache_control": {"type": "ephemeral"}},
              {"type": "text", "text": "Follow the instructions. " * 300, "cache_control": {"type": "ephemeral"}}]
    return {"model": "claude-opus-4-8", "max_tokens": 64000, "stream": True, "system": system, "tools": tools,
            "thinking": {"type": "adaptive"}, "metadata": {"user_id": nonce},
            "messages": [{"role": "user", "content": "Fix the failing test in stats/core.py."}]}


def first_events(root: str, cold_runs: int, warm_runs: int) -> dict:
    """Cold: a conversation nobody had (each encodes the whole prompt: minutes here, so fewer
    runs); warm: its next turns, each under a new billing header."""
    cold: list[tuple[float, float]] = []
    warm: list[tuple[float, float]] = []
    for _ in range(cold_runs):
        body = claude_code_shaped(uuid.uuid4().hex)
        first, blocks = streamed(root, "/v1/messages", {**body, "max_tokens": 32})
        cold.append((first, blocks[0]))
        for turn in range(warm_runs + 1):  # the first is a warm-up
            body["system"][0] = {"type": "text", "text": f"x-anthropic-billing-header: cc_version=2.1.197.{turn};"}
            body["messages"] += [{"role": "assistant", "content": "Looking at it."},
                                 {"role": "user", "content": f"Go on ({turn})."}]
            again, again_blocks = streamed(root, "/v1/messages", {**body, "max_tokens": 32})
            if turn:
                warm.append((again, again_blocks[0]))
    med = lambda xs, i: round(statistics.median(x[i] for x in xs), 3)  # noqa: E731
    return {"request_bytes": len(json.dumps(claude_code_shaped(uuid.uuid4().hex))),
            "cold_first_event_s": med(cold, 0), "cold_first_block_s": med(cold, 1), "cold_runs": len(cold),
            "warm_first_event_s": med(warm, 0), "warm_first_block_s": med(warm, 1), "warm_runs": len(warm)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--runs", type=int, default=9)
    p.add_argument("--cold-runs", type=int, default=2, help="cold 85 KB requests (each encodes ~80K tokens: minutes)")
    p.add_argument("--warm-runs", type=int, default=5, help="warm turns after each cold one")
    p.add_argument("--no-long", action="store_true", help="skip the 85 KB request")
    p.add_argument("--max-tokens", type=int, default=1024)
    p.add_argument("--threads", type=int, default=1, help="torch threads in the server")
    args = p.parse_args()
    result: dict = {"writer_us_per_block": writer_costs(args.runs)}
    with tempfile.TemporaryDirectory() as tmp:
        model, port = tiny_checkpoint(Path(tmp)), free_port()
        env = {**os.environ, "OMP_NUM_THREADS": str(args.threads)}
        server = subprocess.Popen([sys.executable, "-m", "clover_code.cli", "serve", "--model", str(model),
                                   "--port", str(port)], env=env, stderr=subprocess.DEVNULL)
        root = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    httpx.get(root + "/health", timeout=1)
                    break
                except httpx.HTTPError:
                    assert time.monotonic() < deadline and server.poll() is None, "serve did not start"
                    time.sleep(0.2)
            result["http_ms_per_block_over_chat"] = http_overhead(root, args.runs, args.max_tokens)
            if not args.no_long:
                result["first_event_85kb"] = first_events(root, args.cold_runs, args.warm_runs)
        finally:
            server.terminate()
            server.wait(20)
    result |= {"threads": args.threads, "runs": args.runs, **machine_info(), "date": time.strftime("%Y-%m-%d")}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for key, value in result.items():
        print(f"{key:30} {value}")


if __name__ == "__main__":
    main()
