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
from typing import TextIO

from clover_code.engine import Block, ChatRequest, DenoiseStep, Engine, EngineError
from clover_code.engine.tally import BlockTally
from clover_code.settings import Settings
from clover_code.ui.exit_codes import EXIT_ENGINE, EXIT_OK
from clover_code.ui.launch import EngineBuilder

TINTS = ("\x1b[0m", "\x1b[36m")  # plain, cyan: alternate blocks


def run(args: argparse.Namespace, settings: Settings, build_engine: EngineBuilder) -> int:
    """One reply to `args.prompt` from the engine `settings` name (built by the wiring)."""
    for notice in settings.notices:
        print(f"note: {notice}", file=sys.stderr)
    try:
        engine = _load(settings, build_engine)
        return asyncio.run(generate(engine, args.prompt, settings, show_steps=args.show_steps))
    except EngineError as e:
        print(f"clover-code generate: {e}", file=sys.stderr)
        return EXIT_ENGINE


def _load(settings: Settings, build_engine: EngineBuilder) -> Engine:
    """The engine, with a progress line while an embedded checkpoint loads."""
    if settings.engine_name() != "embedded":
        return build_engine(settings)

    def progress(fraction: float, message: str) -> None:
        print(f"\rloading {settings.model}: {fraction:4.0%} {message:<40}", end="", file=sys.stderr, flush=True)

    engine = build_engine(settings, on_progress=progress)
    print(file=sys.stderr)
    return engine


async def generate(engine: Engine, prompt: str, settings: Settings, *, show_steps: bool = False,
                   out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    tint = out.isatty() and not os.environ.get("NO_COLOR")
    request = ChatRequest(messages=[{"role": "user", "content": prompt}], max_tokens=settings.max_tokens,
                          temperature=settings.temperature, threshold=settings.threshold, policy=settings.policy,
                          on_step=(lambda step: print(step_line(step), file=err, flush=True)) if show_steps else None)
    start = time.perf_counter()
    generated = BlockTally()
    try:
        async for block in engine.stream(request):
            generated.add(block)
            text = f"{TINTS[block.index % 2]}{block.text}{TINTS[0]}" if tint else block.text
            print(text, end="", file=out, flush=True)
            if show_steps:
                print(f"\n{block_line(block)}", file=err, flush=True)
    finally:
        await engine.aclose()
    print(file=out, flush=True)
    print(totals(generated, time.perf_counter() - start), file=err, flush=True)
    return EXIT_OK


def step_line(step: DenoiseStep) -> str:
    cells = "".join("█" if done else "·" for done in step.resolved)
    return f"  block {step.block_index} step {step.step}: {cells} +{len(step.newly)}"


def block_line(block: Block) -> str:
    passes = "?" if block.forward_passes is None else block.forward_passes
    ms = "" if block.ms is None else f", {block.ms:.0f} ms"
    return f"[block {block.index}: {block.tokens} tokens, {passes} passes{ms}]"


def totals(generated: BlockTally, seconds: float) -> str:
    tokens, passes = generated.tokens, generated.forward_passes
    finish = generated.last.finish if generated.last else None
    line = f"{tokens} tokens in {generated.blocks} blocks, {seconds:.2f} s, {tokens / max(seconds, 1e-9):.1f} tokens/s"
    if generated.blocks and passes is not None:
        line += f", {passes} forward passes, TPF {tokens / max(passes, 1):.2f}"
    return line + (f" (finish: {finish})" if finish else "")
