"""Benchmark the search tools and turn checkpoints on generated trees.

    python -m tools.bench.bench_tools [--json] [--runs N]

- grep_vs_rg: our grep tool (through the registry) vs raw `rg -n` on a 50,000-file
  tree, run A B A B ..., ratio of medians after a warm-up (goal <= 1.5);
- repo_map_cold_s: repo_map on a 2,000-file Python repo with no cache at all;
  repo_map_disk_s: a fresh process's view (empty memory, tags on disk);
  repo_map_warm_s: the same call again on the unchanged repo (goal <= 0.2);
  repo_map_refocus_s: a warm repo with a different `focus` each call (graph reused, re-ranked);
- checkpoint_s: Checkpoints(root).begin_turn() + ensure() after one file changed, on that
  repo (goal <= 0.5); checkpoint_first_s: the first snapshot of a session.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from clover_code.tools import Registry, ToolContext
from clover_code.tools.code import TOOLS as CODE_TOOLS
from clover_code.tools.code import CodeMaps, RepoMap
from clover_code.tools.search import TOOLS as SEARCH_TOOLS
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.listing import rg_binary
from tools.bench.bench_machine import machine_info

GOALS = {"grep_vs_rg": 1.5, "repo_map_warm_s": 0.2, "checkpoint_s": 0.5}
NEEDLE = "needle_xyzzy_marker"
WORDS = ["alpha", "beta", "gamma", "delta", "value", "result", "items", "count", "index", "buffer", "stream", "parse",
         "render"]


def make_text_tree(root: Path, files: int = 50_000, per_dir: int = 100) -> None:
    """`files` small text files of ~30 lines; one in 1,000 holds NEEDLE."""
    rnd = random.Random(1)
    for n in range(files):
        folder = root / f"d{n // per_dir // 20:03d}" / f"s{n // per_dir:04d}"
        if n % per_dir == 0:
            folder.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(rnd.choices(WORDS, k=8)) for _ in range(30)]
        if n % 1000 == 7:
            lines[15] += f" {NEEDLE}"
        (folder / f"f{n:05d}.txt").write_text("\n".join(lines) + "\n")


def make_python_repo(root: Path, packages: int = 20, modules: int = 100) -> None:
    """packages x modules Python files that import and call one another; a git repo with one commit."""
    rnd = random.Random(2)
    names = [(p, m) for p in range(packages) for m in range(modules)]
    for p, m in names:
        folder = root / f"pkg{p}"
        folder.mkdir(parents=True, exist_ok=True)
        others = rnd.sample(names, 3)
        src = [f"from pkg{op}.mod{om} import compute_{op}_{om}, Model{op}x{om}" for op, om in others]
        src += ["", "", f"class Model{p}x{m}:", "    def __init__(self, value):", "        self.value = value", ""]
        for k in range(3):
            src += [f"    def method_{k}(self, items):", f"        return compute_{p}_{m}(items) + {k}", ""]
        src += ["", f"def compute_{p}_{m}(items):", "    return sum(items)", ""]
        for k, (op, om) in enumerate(others):
            src += ["", f"def helper_{p}_{m}_{k}(items):",
                    f"    model = Model{op}x{om}(items)",
                    f"    return compute_{op}_{om}(items) + model.method_{k}(items)", ""]
        (folder / f"mod{m}.py").write_text("\n".join(src))
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    subprocess.run([*git, "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "generated"], cwd=root, check=True)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def median_of(fn, runs: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    return statistics.median(timed(fn) for _ in range(runs))


def bench_grep(root: Path, runs: int, expected: int) -> dict:
    loop = asyncio.new_event_loop()
    registry, ctx = Registry([*SEARCH_TOOLS, *CODE_TOOLS]), ToolContext(Workspace(root))
    rg = rg_binary()

    def ours():
        result = loop.run_until_complete(registry.call("grep", {"pattern": NEEDLE}, ctx))
        assert result.ok and result.data["matches"] == expected, result.output[:300]

    def raw():
        out = subprocess.run([rg, "-n", NEEDLE], cwd=root, stdin=subprocess.DEVNULL, capture_output=True)
        assert out.stdout.count(b"\n") == expected

    ours(), raw()  # warm-up: page cache, binaries
    times_ours, times_raw = [], []
    for _ in range(runs):  # side by side: A B A B ...
        times_ours.append(timed(ours))
        times_raw.append(timed(raw))
    loop.close()
    ours_s, raw_s = statistics.median(times_ours), statistics.median(times_raw)
    return {"grep_vs_rg": round(ours_s / raw_s, 3), "grep_tool_s": round(ours_s, 4), "rg_raw_s": round(raw_s, 4)}


def bench_repo_map(root: Path, runs: int) -> dict:
    loop = asyncio.new_event_loop()
    ctx = ToolContext(Workspace(root))
    cache = root / ".clover" / "cache"

    def call(maps: CodeMaps, **args):
        result = loop.run_until_complete(Registry([RepoMap(maps)]).call("repo_map", args, ctx))
        assert result.ok and result.output.count("\n") > 20, result.output[:300]

    def cold():
        shutil.rmtree(cache, ignore_errors=True)
        call(CodeMaps())

    cold_s = median_of(cold, runs)  # the warm-up loads the grammars, as any earlier call would
    disk_s = median_of(lambda: call(CodeMaps()), runs)
    maps = CodeMaps()
    warm_s = median_of(lambda: call(maps), runs)
    focus = iter([f"pkg{n % 20}/mod{n}.py" for n in range(1000)])
    refocus_s = median_of(lambda: call(maps, focus=[next(focus)]), runs)
    loop.close()
    return {"repo_map_cold_s": round(cold_s, 3), "repo_map_disk_s": round(disk_s, 3),
            "repo_map_warm_s": round(warm_s, 4), "repo_map_refocus_s": round(refocus_s, 4)}


def bench_checkpoint(root: Path, runs: int) -> dict:
    try:
        from clover_code.tools.git import Checkpoints
    except ImportError:
        return {"checkpoint_s": None, "checkpoint_first_s": None}
    checkpoints = Checkpoints(root)
    checkpoints.begin_turn()
    first_s = timed(checkpoints.ensure)
    counter = iter(range(10_000))

    def turn():
        n = next(counter)
        (root / f"pkg{n % 20}" / f"mod{n}.py").write_text(f"# edited in turn {n}\n")
        checkpoints.begin_turn()
        checkpoints.ensure()

    return {"checkpoint_s": round(median_of(turn, runs), 3), "checkpoint_first_s": round(first_s, 3)}


def machine() -> dict:
    return {**machine_info(), "rg": rg_binary()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per figure (>= 5)")
    parser.add_argument("--files", type=int, default=50_000, help="files in the grep tree")
    opts = parser.parse_args()
    results: dict = {"machine": machine(), "runs": opts.runs}
    with tempfile.TemporaryDirectory(prefix="clover-bench-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "xdg-cache")  # shadow repos, if any, stay here
        os.environ["XDG_STATE_HOME"] = str(Path(tmp) / "xdg-state")  # and the checkpoints' ledger
        text_tree, repo = Path(tmp) / "text", Path(tmp) / "repo"
        start = time.perf_counter()
        make_text_tree(text_tree, opts.files)
        make_python_repo(repo)
        results["generate_s"] = round(time.perf_counter() - start, 1)
        results.update(bench_grep(text_tree, opts.runs, len(range(7, opts.files, 1000))))
        results.update(bench_repo_map(repo, opts.runs))
        results.update(bench_checkpoint(repo, opts.runs))
    results["goals"] = {k: {"goal": v, "met": results[k] is not None and results[k] <= v} for k, v in GOALS.items()}
    if opts.json:
        print(json.dumps(results, indent=2))
        return
    print(f"machine: {results['machine']['nproc']} cores, {results['machine']['cpu']}")
    for key, value in results.items():
        if key not in ("machine", "goals"):
            goal = GOALS.get(key)
            met = "met" if value is not None and goal is not None and value <= goal else "MISSED"
            mark = "" if goal is None else f"  (goal <= {goal}: {met})"
            print(f"{key:>22}  {value}{mark}")


if __name__ == "__main__":
    main()
