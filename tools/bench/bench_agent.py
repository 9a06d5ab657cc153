"""Agent-loop overhead, on a scripted engine and the real tools.

    python -m tools.bench.bench_agent [--json] [--runs 7] [--round-trips 20]

loop_overhead_ms     per tool round-trip (one model request ending in one tool call, the
                     tool run, its result fed back): the wall time of a task minus the time
                     spent inside the engine's stream and inside the tools, divided by the
                     number of round-trips. Includes parsing, validation, permissions,
                     the conversation, the session log and event delivery.
first_tool_start_ms  from the moment the consumer receives the block that closes a tool
                     call to the moment it receives that tool's ToolStarted, while the model
                     is still writing the rest of its reply (more blocks, 20 ms each).
Goals: loop_overhead_ms <= 5, first_tool_start_ms <= 10. Medians over --runs after a warm-up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from clover_code.agent import events as ev
from clover_code.agent.permissions import approver_for_mode
from clover_code.engine.scripted import ScriptedEngine
from clover_code.settings import Settings
from clover_code.wiring.assemble import build_agent
from tools.bench.bench_machine import machine_info

GOALS = {"loop_overhead_ms": 5.0, "first_tool_start_ms": 10.0}
FILLER = " ".join(f"word{i}" for i in range(96))  # three more 32-token blocks after the call


def call(path: str) -> str:
    return f'<tool_call>{{"name": "read_file", "arguments": {{"path": "{path}"}}}}</tool_call>'


class TimedEngine(ScriptedEngine):
    """The scripted engine, with the time spent producing blocks added up (the "model time")."""

    engine_seconds = 0.0

    async def stream(self, request):
        blocks = super().stream(request)
        while True:
            t0 = time.perf_counter()
            try:
                block = await blocks.__anext__()
            except StopAsyncIteration:
                self.engine_seconds += time.perf_counter() - t0
                return
            self.engine_seconds += time.perf_counter() - t0
            yield block


def make_repo(folder: Path) -> Path:
    repo = folder / "repo"
    repo.mkdir()
    for i in range(5):
        (repo / f"mod{i}.py").write_text("".join(f"def f{j}():\n    return {j}\n\n" for j in range(40)))
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


async def drive(replies: list[Any], repo: Path, delay: float = 0.0) -> tuple[float, float, list[tuple]]:
    """Run one task; (wall seconds, engine seconds, [(event, received_at)])."""
    engine = TimedEngine(replies, delay=delay)
    agent = build_agent(Settings(approval="full-auto", max_turns=len(replies) + 1), repo,
                        approver_for_mode("full-auto"), engine=engine)
    seen: list[tuple] = []
    t0 = time.perf_counter()
    async for event in agent.run("Read the modules."):
        seen.append((event, time.perf_counter()))
    wall = time.perf_counter() - t0
    agent.session.close()
    return wall, engine.engine_seconds, seen


async def overhead_ms(repo: Path, round_trips: int) -> float:
    replies = [f"Reading module {i % 5}.\n" + call(f"mod{i % 5}.py") for i in range(round_trips)]
    wall, engine_s, seen = await drive(replies + ["Done."], repo)
    tool_s = sum(e.seconds for e, _ in seen if isinstance(e, ev.ToolFinished))
    finished = [e for e, _ in seen if isinstance(e, ev.TurnFinished)]
    assert finished and finished[-1].reason == "done", finished
    return (wall - engine_s - tool_s) / round_trips * 1000


async def first_tool_start_ms(repo: Path) -> float:
    replies = ["Reading it.\n" + call("mod0.py") + "\n" + FILLER, "Done."]
    _, _, seen = await drive(replies, repo, delay=0.02)
    closed = next(t for e, t in seen if isinstance(e, ev.BlockCommitted) and "</tool_call>" in e.block.text)
    started = next(t for e, t in seen if isinstance(e, ev.ToolStarted))
    return (started - closed) * 1000


def machine() -> dict[str, Any]:
    return machine_info()


async def measure(runs: int, round_trips: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        repo = make_repo(Path(tmp))
        await overhead_ms(repo, 3)  # warm-up: imports, tool modules, first file reads
        await first_tool_start_ms(repo)
        overheads, starts = [], []
        for _ in range(runs):  # interleaved, so both see the same machine load
            overheads.append(await overhead_ms(repo, round_trips))
            starts.append(await first_tool_start_ms(repo))
    result = {
        "loop_overhead_ms": round(statistics.median(overheads), 3),
        "first_tool_start_ms": round(statistics.median(starts), 3),
        "loop_overhead_ms_runs": [round(x, 3) for x in overheads],
        "first_tool_start_ms_runs": [round(x, 3) for x in starts],
        "runs": runs, "round_trips": round_trips, "goals": GOALS, "machine": machine(),
    }
    result["meets_goals"] = all(result[k] <= v for k, v in GOALS.items())
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--runs", type=int, default=7)
    p.add_argument("--round-trips", type=int, default=20)
    args = p.parse_args()
    result = asyncio.run(measure(args.runs, args.round_trips))
    if args.json:
        print(json.dumps(result))
        return 0
    print(f"machine: {result['machine']['nproc']} CPUs, {result['machine']['cpu']}")
    print(f"{'metric':<22}{'median':>10}{'goal':>8}")
    for key, goal in GOALS.items():
        print(f"{key:<22}{result[key]:>10.2f}{goal:>8.1f}  {'ok' if result[key] <= goal else 'OVER'}")
    print(f"({result['runs']} runs after a warm-up, {result['round_trips']} round-trips per overhead run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
