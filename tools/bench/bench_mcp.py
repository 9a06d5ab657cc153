"""What MCP servers cost: the TUI's first paint with two servers configured against none, and
one MCP tool call against one built-in tool call.

    python -m tools.bench.bench_mcp [--json] [--runs 5] [--calls 200]

- `first_paint_s`: the real `clover-code` in a temp git repository on a pty, until the status
  bar is drawn (tools/bench/bench_tui.py's measure), with a user config naming two stdio servers
  (the SDK-built test server, tests/support/mcp_server.py) and with none; side by side
  (none, two, none, two, ...) after a warm-up; medians. Goal: within 50 ms of none.
- `call_ms`: `read_file` of a small file and the test server's `lookup`, each bound and run as
  the agent runs a call (Registry.bind, BoundCall.run), alternating, after a warm-up; medians.
  Goal: an MCP call under 5 ms more than a built-in one, on a local stdio server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clover_code.tools import ToolContext, default_registry
from clover_code.tools.mcp.servers import McpServers
from clover_code.tools.mcp.spec import parse_servers
from clover_code.tools.workspace import Workspace
from tools.bench.bench_machine import machine_info
from tools.bench.bench_tui import _paint_once

ROOT = Path(__file__).resolve().parents[2]
SERVER = {"command": sys.executable, "args": ["-m", "tests.support.mcp_server", "stdio"], "cwd": str(ROOT)}


def server_table(names: tuple[str, ...]) -> str:
    return "".join(f'[mcp_servers.{n}]\ncommand = "{SERVER["command"]}"\n'
                   f'args = ["-m", "tests.support.mcp_server", "stdio"]\ncwd = "{ROOT}"\n\n' for n in names)


def paint_with(config_home: Path, repo: Path, replies: Path) -> float:
    before = os.environ.get("XDG_CONFIG_HOME")
    os.environ["XDG_CONFIG_HOME"] = str(config_home)  # _paint_once passes the environment on
    try:
        return _paint_once(repo, replies)
    finally:
        if before is None:
            del os.environ["XDG_CONFIG_HOME"]
        else:
            os.environ["XDG_CONFIG_HOME"] = before


def first_paint(runs: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        repo = base / "repo"
        repo.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        (repo / "README.md").write_text("hello\n")
        replies = base / "replies.jsonl"
        replies.write_text('"hi"\n')
        homes = {}
        for label, names in (("none", ()), ("two", ("docs", "tracker"))):
            config = base / label / "clover-code" / "config.toml"
            config.parent.mkdir(parents=True)
            config.write_text(server_table(names))
            homes[label] = base / label
        times: dict[str, list[float]] = {"none": [], "two": []}
        for i in range(runs + 1):
            for label in ("none", "two"):
                t = paint_with(homes[label], repo, replies)
                if i:  # the first round warms the caches
                    times[label].append(t)
    none, two = statistics.median(times["none"]), statistics.median(times["two"])
    return {"none_s": round(none, 3), "two_servers_s": round(two, 3), "difference_ms": round((two - none) * 1000, 1)}


async def call_costs(calls: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "notes.txt").write_text("a line\n")
        servers = McpServers(parse_servers({"kit": SERVER}), root)
        await servers.settled()
        try:
            registry = default_registry()
            registry.add(list(servers.tools()))
            ctx = ToolContext(Workspace(root), sandbox=False)
            built_in, mcp = [], []
            for i in range(calls + 10):
                for name, args, into in (("read_file", {"path": "notes.txt"}, built_in),
                                         ("mcp__kit__lookup", {"word": "x"}, mcp)):
                    start = time.perf_counter()
                    bound = registry.bind(name, args, ctx)
                    assert not isinstance(bound, str), bound
                    result = await bound.run()
                    assert result.ok, result.output
                    if i >= 10:
                        into.append((time.perf_counter() - start) * 1000)
        finally:
            await servers.stop()
    b, m = statistics.median(built_in), statistics.median(mcp)
    return {"built_in_ms": round(b, 3), "mcp_ms": round(m, 3), "overhead_ms": round(m - b, 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    result = {"first_paint": first_paint(args.runs), "call": asyncio.run(call_costs(args.calls)),
              "runs": args.runs, "calls": args.calls, "machine": machine_info()}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    paint, call = result["first_paint"], result["call"]
    print(f"first paint: {paint['none_s']} s without servers, {paint['two_servers_s']} s with two "
          f"({paint['difference_ms']:+} ms; goal within 50 ms)")
    print(f"tool call: built-in {call['built_in_ms']} ms, MCP {call['mcp_ms']} ms "
          f"(overhead {call['overhead_ms']} ms; goal under 5 ms)   ({result['machine']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
