"""`clover-code eval TASKS... --engine [NAME=]SPEC ...`: flags -> a run -> results, report, plot.

Exit codes: 0 every task ran and was checked (failed tasks are results, not errors); 1 some
could not run (a malformed folder, an engine error); 2 bad flags; 130 interrupted (what
finished is kept: `--resume` goes on from there).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import math
import shlex
import signal
import sys
from pathlib import Path
from typing import TextIO

from clover_code.eval.discover import discover
from clover_code.eval.engines import EngineSpec, SpecError, engine_from_json, engine_json, parse_engines
from clover_code.eval.live import LiveView
from clover_code.eval.machine import describe, machine
from clover_code.eval.plot import plot
from clover_code.eval.report import PLOT_NAME, render
from clover_code.eval.results import ResultStore
from clover_code.eval.runner import EvalOptions, Runner
from clover_code.eval.stats import summarize
from clover_code.eval.tasks import Problem
from clover_code.jsonsafe import JSONObject

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEFAULT_OUT = Path("clover-eval")


class EvalUsage(Exception):
    pass


def run(args: argparse.Namespace, out: TextIO | None = None, err: TextIO | None = None) -> int:
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # a CI cancel ends it like Ctrl-C
    try:
        return _run(args, out or sys.stdout, err or sys.stderr)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        store, engines, paths, options, previous = _setup(args)
    except (EvalUsage, SpecError) as exc:
        print(f"clover-code eval: {exc}", file=err)
        return EXIT_USAGE
    tries = options.tries
    tasks, problems = discover(paths)
    for p in problems:
        print(f"clover-code eval: not run: {p.path}: {p.reason}", file=err)
    info = machine()
    now = _now()
    store.write_run({
        "command": _command(paths, engines, options, store.out), "tasks": paths,
        "engines": [engine_json(e) for e in engines], "tries": tries, "options": dataclasses.asdict(options),
        "machine": info,
        "created": (previous or {}).get("created", now), "updated": now,
        "problems": [p.__dict__ for p in problems],
    })
    view = LiveView([e.name for e in engines], 0, err)
    runner = Runner(tasks, engines, options, store, on_start=view.started, on_try=view.tried, machine=describe(info))
    units = runner.pending()
    view.total = len(units)
    skipped = len(tasks) * len(engines) - len(units)
    if skipped:
        print(f"clover-code eval: resuming in {store.out}: {skipped} of {len(tasks) * len(engines)} task runs "
              "already done", file=err)
    print(f"clover-code eval: {len(tasks)} tasks x {len(engines)} engines, up to {tries} tries, on "
          f"{describe(info)}; results in {store.out}", file=err)
    with view:
        finished = runner.run(units)
    report = write_report(store, engines, tries, tasks_order=[t.id for t in tasks], problems=problems, err=err)
    print(report, file=out)
    if not finished:
        print(f"clover-code eval: interrupted; what finished is in {store.path} "
              f"(go on with: clover-code eval --resume --out {shlex.quote(str(store.out))})", file=err)
        return EXIT_INTERRUPTED
    errors = any(line.get("status") == "error" for lines in store.latest().values() for line in lines[-1:])
    return EXIT_FAILED if errors or any(p.kind == "malformed" for p in problems) else EXIT_OK


def write_report(store: ResultStore, engines: list[EngineSpec], tries: int, *, tasks_order: list[str],
                 problems: list[Problem], err: TextIO | None = None) -> str:
    """report.md and the plot from results.jsonl; returns the report's engine table for the terminal."""
    summary = summarize(store.latest(), engines, tries, tasks_order)
    why_not = plot(summary, store.out / PLOT_NAME)
    if why_not:
        print(f"clover-code eval: no plot: {why_not}", file=err or sys.stderr)
    text = render(summary, store.read_run() or {}, problems, None if why_not else PLOT_NAME, why_not)
    (store.out / "report.md").write_text(text, encoding="utf-8")
    section = text.split("## Engines", 1)[-1].split("\n\n", 2)
    table = section[1] if len(section) > 1 else ""
    return f"{table}\n\nreport: {store.out / 'report.md'}"


def _setup(args: argparse.Namespace) -> tuple[ResultStore, list[EngineSpec], list[str], EvalOptions, JSONObject | None]:
    out = Path(args.out) if args.out else _default_out(args.resume)
    store = ResultStore(out)
    previous = store.read_run() if args.resume else None
    if args.resume and previous is None:
        raise EvalUsage(f"nothing to resume in {out} (no run.json): give the --out of an earlier run")
    if not args.resume and store.exists():
        raise EvalUsage(f"{out} already holds results: pass --resume to go on with that run, or another --out")
    if args.engine:
        engines = parse_engines(args.engine, args.price or [])
    elif previous:
        engines = [engine_from_json(e) for e in previous.get("engines", [])]
        if args.price:
            raise EvalUsage("--price needs the engines named again (--engine)")
    else:
        raise EvalUsage("name at least one engine: --engine [NAME=]SPEC (e.g. --engine demo=embedded)")
    paths = list(args.tasks) or list((previous or {}).get("tasks", []))
    if not paths:
        raise EvalUsage("name the task folders to run (e.g. sandbox/*)")
    return store, engines, paths, _options(args, previous), previous


def _options(args: argparse.Namespace, previous: JSONObject | None) -> EvalOptions:
    """Each option: the flag, else (on --resume) the earlier run's, else the default."""
    before = (previous or {}).get("options") or {}
    if previous and "tries" not in before and previous.get("tries"):
        before = {**before, "tries": previous["tries"]}
    given = {"tries": args.tries, "jobs": args.jobs, "timeout": args.timeout, "max_turns": args.max_turns,
             "max_tokens": args.max_tokens, "check_timeout": args.check_timeout}
    values = {}
    for field in dataclasses.fields(EvalOptions):
        if field.name in given and given[field.name] is not None:
            values[field.name] = given[field.name]
        elif field.name in before and field.name not in ("sandbox", "keep"):
            values[field.name] = before[field.name]
    values["sandbox"] = not args.no_sandbox
    values["keep"] = args.keep
    options = EvalOptions(**values)
    if options.tries < 1 or options.jobs < 1 or not 0 < options.timeout < math.inf or not (
            0 < options.check_timeout < math.inf):  # nan fails both comparisons
        raise EvalUsage("--tries and --jobs must be at least 1, --timeout and --check-timeout a finite "
                        "number of seconds above 0")
    if (options.max_turns is not None and options.max_turns < 1) or (
            options.max_tokens is not None and options.max_tokens < 1):
        raise EvalUsage("--max-turns and --max-tokens must be at least 1")
    return options


def _default_out(resume: bool) -> Path:
    """A new folder under ./clover-eval/ per run; --resume without --out: the latest one."""
    if resume:
        runs = sorted(p for p in DEFAULT_OUT.glob("*") if (p / "run.json").is_file())
        if not runs:
            raise EvalUsage(f"nothing to resume: no earlier run under {DEFAULT_OUT}/ (pass --out DIR)")
        return runs[-1]
    return DEFAULT_OUT / dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def _command(paths: list[str], engines: list[EngineSpec], options: EvalOptions, out: Path) -> str:
    argv = ["clover-code", "eval", *paths]
    for e in engines:
        argv += ["--engine", f"{e.name}={e.spec}"]
        if e.price:
            argv += ["--price", f"{e.name}={e.price.input:g},{e.price.output:g}"]
    argv += ["--tries", str(options.tries)]
    if options.jobs > 1:
        argv += ["--jobs", str(options.jobs)]
    if options.max_turns:
        argv += ["--max-turns", str(options.max_turns)]
    if options.max_tokens:
        argv += ["--max-tokens", str(options.max_tokens)]
    if options.timeout != EvalOptions.timeout:
        argv += ["--timeout", f"{options.timeout:g}"]
    return shlex.join([*argv, "--out", str(out)])


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
