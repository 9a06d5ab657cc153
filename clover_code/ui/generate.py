"""`clover-code generate`: stream one reply block by block, then print totals.

The reply goes to stdout as each block commits (alternate blocks tinted on a terminal,
so the block structure is visible); loading progress, `--show-steps` and the totals
go to stderr, so stdout stays clean for a pipe.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from clover_code.cli import EXIT_ENGINE, EXIT_OK, EXIT_USAGE
from clover_code.config import ConfigError, Settings, load_settings
from clover_code.engine import Block, ChatRequest, DenoiseStep, Engine, EngineError

TINTS = ("\x1b[0m", "\x1b[36m")  # plain, cyan: alternate blocks


def run(args: argparse.Namespace) -> int:
    flags = {k: getattr(args, k, None) for k in ("model", "endpoint", "engine", "threshold", "block_size",
                                                   "max_tokens", "temperature")}
    try:
        settings = load_settings(Path.cwd(), flags)
    except ConfigError as e:
        print(f"clover-code generate: {e}", file=sys.stderr)
        return EXIT_USAGE
    for notice in settings.notices:
        print(f"note: {notice}", file=sys.stderr)
    try:
        engine = build(settings)
        return asyncio.run(generate(engine, args.prompt, settings, show_steps=args.show_steps))
    except EngineError as e:
        print(f"clover-code generate: {e}", file=sys.stderr)
        return EXIT_ENGINE


def build(settings: Settings) -> Engine:
    """The embedded engine with a loading progress line; any other engine as the agent builds it."""
    from clover_code.agent.setup import MODEL_HELP, build_engine

    if settings.engine_name() != "embedded":
        return build_engine(settings)
    if not settings.model:
        raise EngineError(MODEL_HELP)
    from clover_code.engine.embedded import EmbeddedEngine

    def progress(fraction: float, message: str) -> None:
        print(f"\rloading {settings.model}: {fraction:4.0%} {message:<40}", end="", file=sys.stderr, flush=True)

    engine = EmbeddedEngine(settings.model, threshold=settings.threshold, block_size=settings.block_size,
                            on_progress=progress)
    print(file=sys.stderr)
    return engine


async def generate(engine: Engine, prompt: str, settings: Settings, *, show_steps: bool = False,
                   out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    tint = out.isatty() and not os.environ.get("NO_COLOR")
    request = ChatRequest(messages=[{"role": "user", "content": prompt}], max_tokens=settings.max_tokens,
                          temperature=settings.temperature, threshold=settings.threshold,
                          on_step=(lambda step: print(step_line(step), file=err, flush=True)) if show_steps else None)
    start = time.perf_counter()
    blocks: list[Block] = []
    try:
        async for block in engine.stream(request):
            blocks.append(block)
            text = f"{TINTS[block.index % 2]}{block.text}{TINTS[0]}" if tint else block.text
            print(text, end="", file=out, flush=True)
            if show_steps:
                print(f"\n{block_line(block)}", file=err, flush=True)
    finally:
        await engine.aclose()
    print(file=out, flush=True)
    print(totals(blocks, time.perf_counter() - start), file=err, flush=True)
    return EXIT_OK


def step_line(step: DenoiseStep) -> str:
    cells = "".join("█" if done else "·" for done in step.resolved)
    return f"  block {step.block_index} step {step.step}: {cells} +{len(step.newly)}"


def block_line(block: Block) -> str:
    steps = "?" if block.steps is None else block.steps
    ms = "" if block.ms is None else f", {block.ms:.0f} ms"
    return f"[block {block.index}: {block.tokens} tokens, {steps} passes{ms}]"


def totals(blocks: list[Block], seconds: float) -> str:
    tokens = sum(b.tokens for b in blocks)
    finish = blocks[-1].finish if blocks else None
    line = f"{tokens} tokens in {len(blocks)} blocks, {seconds:.2f} s, {tokens / max(seconds, 1e-9):.1f} tokens/s"
    if blocks and all(b.steps is not None for b in blocks):
        passes = sum(b.steps for b in blocks)
        line += f", {passes} forward passes, TPF {tokens / max(passes, 1):.2f}"
    return line + (f" (finish: {finish})" if finish else "")
