"""The speed/accuracy frontier of the decoding policies (issue 46) on held-out demo sessions.

    python -m tools.bench.bench_frontier --sessions NAME=FILE [--sessions NAME=FILE ...] [--limit N]
        [--sweep NAME:KNOB,KNOB,...] ... [--model [NAME=]DIR ...] [--jobs N] [--out DIR] [--json] [--kept]
    python -m tools.bench.bench_frontier --quick [--out DIR]   # seconds: keeps the script from rotting

Every point is the held-out evaluation (tools/training/demo_model/evaluate.py: each assistant
turn decoded from its true history by the real embedded engine, scaffold on, greedy) under one
policy and knob, on each set of sessions, for each checkpoint (`--model`, the shipped one by
default; with several, a point is named `SPEC MODEL` and each checkpoint draws its own lines).
Points are kept in DIR/points/SET/[MODEL/]SPEC.json as they finish, so a run that stops
resumes where it was and a new sweep adds to the old ones (`--kept` measures nothing: it
writes the JSON and the plot from the points kept).
DIR/frontier.json holds every point (TPF, calls valid, calls exactly right, turns right), the
goal, which points meet it on every set, the command, date and machine; DIR/frontier.png
plots TPF against exact calls, one panel per set, one line per policy (the threshold rule is
the baseline), the goal a shaded region. `--quick` generates two short sessions and runs two
policies at two knobs with short replies.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from tools.bench.bench_machine import machine_info

ROOT = Path(__file__).resolve().parents[2]

GOAL = {"tpf": 12.0, "exact_call_rate": 0.85, "valid_call_rate": 1.0}  # issue 46
SWEEPS = ("threshold:0.95,0.9,0.8,0.7,0.5", "factor:0.25,0.4,0.5,0.6,0.75,1,2,4", "entropy:0.1,0.3,1,2,4",
          "context:0.8,0.6,0.4")  # the points of docs/benchmarks.md
QUICK_SWEEPS = ("threshold:0.95,0.7", "factor:1,3")
QUICK_SEEDS = ((10_000_000, "fix-bug"), (10_000_001, "rename"))
FIGURES = ("tpf", "valid_call_rate", "exact_call_rate", "turn_accuracy", "tokens", "forward_passes",
           "calls_expected", "turns")


def specs(sweeps: list[str]) -> list[str]:
    """`NAME:K1,K2` -> `NAME:K1`, `NAME:K2`, each checked by the engine's own parser."""
    from clover_code.engine.policies import parse_policy, policy_spec

    out: list[str] = []
    for sweep in sweeps:
        name, _, knobs = sweep.partition(":")
        for knob in knobs.split(",") if knobs else [""]:
            spec = policy_spec(parse_policy(f"{name}:{knob}" if knob else name))
            if spec not in out:
                out.append(spec)
    return out


def measure(task: tuple[str, str, str, int | None, int, str]) -> tuple[str, str, dict]:
    """One point, in a worker process with one torch thread: (set, spec, figures)."""
    set_name, path, spec, limit, max_tokens, model = task
    import torch

    torch.set_num_threads(1)
    from tools.training.demo_model.evaluate import evaluate
    from tools.training.train_demo_model import load_sessions, tool_schemas

    sessions = load_sessions(path)[:limit]
    start = time.perf_counter()
    report = evaluate(Path(model), sessions, tool_schemas(), max_tokens=max_tokens, policy=spec)
    figures = {k: report[k] for k in FIGURES}
    figures.update(sessions=len(sessions), seconds=round(time.perf_counter() - start, 1),
                   families={f: {k: v[k] for k in ("tpf", "exact_call_rate", "valid_call_rate")}
                             for f, v in report["families"].items()})
    return set_name, spec, figures


def model_key(model: Path) -> str:
    """The model as points record it: the shipped one by its place in the package, so that two
    checkouts share their points."""
    try:
        return str(model.resolve().relative_to(ROOT))
    except ValueError:
        return str(model.resolve())


def model_args(items: list[str]) -> dict[str, Path]:
    """`--model [NAME=]DIR` flags as {name: folder}; a bare DIR is named by its folder."""
    models: dict[str, Path] = {}
    for item in items:
        name, eq, folder = item.partition("=")
        path = Path(folder if eq else item)
        if not (path / "config.json").is_file():
            raise SystemExit(f"--model {item}: expected [NAME=]DIR, a checkpoint folder with a config.json")
        models[name if eq else path.name] = path
    return models or {"shipped": ROOT / "clover_code" / "models" / "clover-demo"}


def point_path(out: Path, set_name: str, label: str) -> Path:
    spec, _, model = label.partition(" ")
    return out / "points" / set_name / model / f"{spec.replace(':', '_')}.json"


def run_points(sets: dict[str, Path], all_specs: list[str], out: Path, limit: int | None, max_tokens: int,
               models: dict[str, Path], jobs: int, measure_new: bool = True) -> dict[str, dict[str, dict]]:
    """Every (set, checkpoint, spec) point, read back from an earlier run of the same setup or
    measured now (unless `measure_new` is False: then only the kept ones). A point's label is
    its spec, with the checkpoint's name after it when there are several."""
    points: dict[str, dict[str, dict]] = {name: {} for name in sets}
    todo: list[tuple[tuple[str, str, str, int | None, int, str], str, dict]] = []  # (task, label, setup)
    for name, path in sets.items():
        for model_name, model in models.items():
            setup = {"source": str(path), "limit": limit, "max_tokens": max_tokens, "model": model_key(model)}
            for spec in all_specs:
                label = spec if len(models) == 1 else f"{spec} {model_name}"
                saved = point_path(out, name, label)
                kept = json.loads(saved.read_text()) if saved.exists() else {}
                if all(kept.get(k) == v for k, v in setup.items()):
                    points[name][label] = kept
                else:
                    todo.append(((name, str(path), spec, limit, max_tokens, str(model)), label, setup))
    if not measure_new:
        todo = []
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    with ProcessPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(measure, task): (label, setup) for task, label, setup in todo}
        for done in as_completed(futures):
            name, _, figures = done.result()
            label, setup = futures[done]
            figures.update(setup)
            saved = point_path(out, name, label)
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(json.dumps(figures, indent=1))
            points[name][label] = figures
            print(f"{name} {label}: TPF {figures['tpf']}, valid {figures['valid_call_rate']:.1%}, "
                  f"exact {figures['exact_call_rate']:.1%} ({figures['seconds']} s)", file=sys.stderr, flush=True)
    return points


def meets(figures: dict) -> bool:
    return all(figures[k] >= v for k, v in GOAL.items())


def summary(points: dict[str, dict[str, dict]], argv: list[str]) -> dict:
    every = sorted({spec for per_set in points.values() for spec in per_set})
    winners = [s for s in every if all(s in p and meets(p[s]) for p in points.values())]
    return {"goal": GOAL, "meets_goal_on_every_set": winners, "sets": points,
            "command": "python -m tools.bench.bench_frontier " + " ".join(argv),
            "date": datetime.date.today().isoformat(), "machine": machine_info()}


def plot(result: dict, path: Path) -> str | None:
    """TPF against exact calls, one panel per set; None when written, else why not."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: no plot"
    sets = result["sets"]
    fig, axes = plt.subplots(1, len(sets), figsize=(5.2 * len(sets), 4.2), dpi=90, squeeze=False)
    for ax, (set_name, per_spec) in zip(axes[0], sets.items(), strict=True):
        lines: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
        for label, f in per_spec.items():
            spec, _, model = label.partition(" ")
            name, _, knob = spec.partition(":")
            lines.setdefault((name, model), []).append((100 * f["exact_call_rate"], f["tpf"], knob))
        ax.fill_between([100 * GOAL["exact_call_rate"], 100], GOAL["tpf"], 40, color="tab:green", alpha=0.12,
                        label="goal")
        models = sorted({model for _, model in lines})
        colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        names = sorted({name for name, _ in lines} - {"threshold"})
        for (name, model), pts in sorted(lines.items(), key=lambda kv: (kv[0][0] != "threshold", kv[0])):
            pts.sort(key=lambda p: p[1])  # along the knob: TPF grows as a policy commits more
            color = "black" if name == "threshold" else colors[names.index(name) % len(colors)]
            style = {"color": color, "linewidth": 2 if name == "threshold" else 1.5,
                     "linestyle": ("-", "--", ":", "-.")[models.index(model) % 4]}
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label=f"{name} ({model})" if model else name, **style)
            for x, y, knob in pts:
                ax.annotate(knob, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
        tops = [f["tpf"] for f in per_spec.values()] or [GOAL["tpf"]]
        ax.set_ylim(0, max(max(tops), GOAL["tpf"]) * 1.15)
        ax.set_xlabel("tool calls exactly right (%)")
        ax.set_ylabel("tokens per forward pass (TPF)")
        ax.set_title(f"{set_name}", fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower left")
    fig.suptitle(f"decoding policies, demo checkpoint ({result['date']})", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return None


def quick_sessions(where: Path) -> Path:
    """Two fresh held-out sessions of today's generator (no slips), for --quick."""
    from tools.training.demo_model.sessions import GIT_ENV, generate

    os.environ.update(GIT_ENV)
    path = where / "quick.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        for seed, family in QUICK_SEEDS:
            session = generate(seed, family, slip_rate=0.0)
            if session is not None:
                fh.write(json.dumps(session) + "\n")
    return path


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", action="append", default=[], metavar="NAME=FILE",
                   help="a held-out set (JSON lines of tools/training/demo_model/sessions.py); repeat for more")
    p.add_argument("--sweep", action="append", metavar="NAME:KNOB,KNOB", help=f"default: {' '.join(SWEEPS)}")
    p.add_argument("--limit", type=int, help="the first N sessions of each set")
    p.add_argument("--max-tokens", type=int, default=768)
    p.add_argument("--model", action="append", default=[], metavar="[NAME=]DIR",
                   help="a checkpoint to measure (repeat to compare several; default: the shipped demo model)")
    p.add_argument("--jobs", type=int, default=1, help="points measured at once (one torch thread each)")
    p.add_argument("--out", type=Path, default=Path("frontier"))
    p.add_argument("--json", action="store_true", help="print the result as JSON (else a table)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--kept", action="store_true",
                   help="measure nothing: the JSON and the plot from the points DIR keeps for these sets and sweeps")
    return p.parse_args(argv)


def table(result: dict) -> str:
    rows = []
    for set_name, per_spec in result["sets"].items():
        for spec, f in sorted(per_spec.items(), key=lambda kv: -kv[1]["tpf"]):
            mark = " goal" if meets(f) else ""
            rows.append(f"{set_name:>14} {spec:>16}  TPF {f['tpf']:6.2f}  valid {f['valid_call_rate']:7.2%}  "
                        f"exact {f['exact_call_rate']:7.2%}  turns {f['turn_accuracy']:7.2%}{mark}")
    return "\n".join(rows + [f"meets the goal on every set: {', '.join(result['meets_goal_on_every_set']) or 'none'}"])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="clover-frontier-") as tmp:
        if args.quick:
            sets = {"quick": quick_sessions(Path(tmp))}
            sweeps, max_tokens = list(args.sweep or QUICK_SWEEPS), min(args.max_tokens, 160)
        else:
            sets = {}
            for item in args.sessions:
                name, eq, path = item.partition("=")
                if not eq or not Path(path).is_file():
                    raise SystemExit(f"--sessions {item}: expected NAME=FILE, a file of held-out sessions")
                sets[name] = Path(path)
            if not sets:
                raise SystemExit("name at least one held-out set: --sessions NAME=FILE (or --quick)")
            sweeps, max_tokens = list(args.sweep or SWEEPS), args.max_tokens
        points = run_points(sets, specs(sweeps), args.out, args.limit, max_tokens, model_args(args.model), args.jobs,
                            measure_new=not args.kept)
    result = summary(points, argv)
    (args.out / "frontier.json").write_text(json.dumps(result, indent=1))
    why = plot(result, args.out / "frontier.png")
    if why:
        print(why, file=sys.stderr)
    print(json.dumps(result, indent=1) if args.json else table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
