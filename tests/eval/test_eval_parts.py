"""The parts of `clover-code eval` that need no agent run: engine specs and prices, task
discovery and its problems, workspaces, figures from events, stats, report, plot, results store."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from clover_code.cli import main
from clover_code.eval.agent_run import read_events
from clover_code.eval.discover import discover
from clover_code.eval.engines import SpecError, parse_engine, parse_engines
from clover_code.eval.main import write_report
from clover_code.eval.plot import MISSING
from clover_code.eval.results import ResultStore
from clover_code.eval.stats import summarize
from tests.support.evals import SANDBOX, polyglot, workspace_files

DEMO = Path(__file__).resolve().parents[2] / "clover_code" / "models" / "clover-demo"


def test_engine_specs(tmp_path):
    replies = tmp_path / "r.jsonl"
    replies.write_text("")
    demo = parse_engine("demo=embedded")
    assert (demo.name, demo.kind, demo.model, demo.parallel) == ("demo", "embedded", None, False)
    assert demo.flags("t", 1) == ["--engine", "embedded"]
    assert parse_engine(f"embedded:{DEMO}").flags("t", 1) == ["--engine", "embedded", "--model", str(DEMO)]
    assert parse_engine(str(DEMO)).name == "clover-demo"
    other = parse_engine("other=http://gpu-box:8000/v1#qwen3-coder")
    assert other.parallel and other.flags("t", 2) == ["--engine", "remote", "--endpoint", "http://gpu-box:8000/v1",
                                                       "--model", "qwen3-coder"]
    assert parse_engine("http://h:9/v1").name == "h:9"
    assert parse_engine(f"scripted:{replies}").flags("t", 1) == ["--engine", f"scripted:{replies.resolve()}"]
    for bad in ("gpt-4", "scripted:/no/such", f"embedded:{tmp_path}", "x=", "http://"):
        with pytest.raises(SpecError):
            parse_engine(bad)
    with pytest.raises(SpecError, match="two engines are named"):
        parse_engines(["embedded", "embedded"], [])
    priced = parse_engines(["a=embedded", "b=http://h/v1"], ["b=0.15,0.60"])
    assert priced[0].price is None and priced[1].price.cost(1_000_000, 2_000_000) == pytest.approx(1.35)
    for bad in (["c=1,2"], ["b=1"], ["b=-1,2"], ["b"]):
        with pytest.raises(SpecError):
            parse_engines(["a=embedded", "b=http://h/v1"], bad)


def test_scripted_folder_replies_per_task_and_try(tmp_path):
    (tmp_path / "t.jsonl").write_text("")
    (tmp_path / "t.try2.jsonl").write_text("")
    engine = parse_engine(f"s=scripted:{tmp_path}")
    assert engine.replies_for("t", 1).name == "t.jsonl" and engine.replies_for("t", 2).name == "t.try2.jsonl"
    with pytest.raises(SpecError, match="no scripted replies for task u"):
        engine.flags("u", 1)


def test_discovery_finds_suites_and_reports_what_is_not_a_task(tmp_path):
    tasks, problems = discover([str(SANDBOX)])
    assert sorted(t.id for t in tasks) == ["add-slugify", "fix-median", "rename-function"] and not problems
    assert {t.family for t in tasks} == {"fix-bug", "add-function", "rename"}
    suite = polyglot("proverb").parent
    tasks, problems = discover([str(suite)])
    assert len(tasks) == 34 and not problems and {t.format for t in tasks} == {"exercism"}

    bad = tmp_path / "bad"
    cases = {
        "no-config": ({".meta/tests.toml": ""}, "no readable config.json"),
        "missing-stub": ({".meta/config.json": json.dumps({"files": {"solution": ["x.py"], "test": ["x_test.py"]}})},
                         "x.py is listed"),
        "escape": ({".meta/config.json": json.dumps({"files": {"solution": ["../x.py"], "test": ["t.py"]}})},
                   "outside the exercise"),
        "rust": ({".meta/config.json": json.dumps({"files": {"solution": ["src/lib.rs"], "test": ["tests/t.rs"]}})},
                 "not a Python exercise"),
        "no-check": ({"task.toml": 'prompt = "p"\n', "repo/a.py": ""}, "no check"),
        "bad-toml": ({"task.toml": "prompt = \n", "repo/a.py": ""}, "not valid TOML"),
        "no-repo": ({"task.toml": 'prompt = "p"\ncheck = "true"\n'}, "no repo/"),
        "harbor-no-tests": ({"instruction.md": "do it", "task.toml": ""}, "no tests/test.sh"),
    }
    for name, (files, _) in cases.items():
        for rel, text in files.items():
            (bad / name / rel).parent.mkdir(parents=True, exist_ok=True)
            (bad / name / rel).write_text(text)
    (bad / "empty").mkdir()
    tasks, problems = discover([str(bad / n) for n in cases] + [str(bad / "empty"), str(tmp_path / "nowhere")])
    assert tasks == []
    reasons = {Path(p.path).name: p.reason for p in problems}
    for name, (_, why) in cases.items():
        assert why in reasons[name], reasons[name]
    assert "not a task folder" in reasons["empty"] and reasons["nowhere"] == "no such folder"


def test_an_exercise_workspace_holds_only_its_stub(tmp_path):
    (task,), _ = discover([str(polyglot("paasio"))])
    workspace = tmp_path / "ws"
    workspace.mkdir()
    task.prepare(workspace)
    assert workspace_files(workspace) == ["paasio.py"]  # not paasio_test.py, test_utils.py, .docs, .meta
    assert (workspace / ".git").is_dir()
    (workspace / "paasio.py").write_text("x = 1\n")  # writable, though the shared copy is read-only
    assert "paasio.py" in task.prompt() and "Use only the Python standard library" in task.prompt()


def test_harbor_tasks_run_locally_or_say_they_need_docker(tmp_path):
    def harbor(name: str, dockerfile: str) -> str:
        folder = tmp_path / name
        (folder / "environment").mkdir(parents=True)
        (folder / "tests").mkdir()
        (folder / "instruction.md").write_text("Write hello to out.txt")
        (folder / "task.toml").write_text('[agent]\ntimeout_sec = 60.0\n[metadata]\ncategory = "files"\n')
        (folder / "environment" / "Dockerfile").write_text(dockerfile)
        (folder / "environment" / "seed.txt").write_text("seed\n")
        (folder / "tests" / "test.sh").write_text("echo 1 > /logs/verifier/reward.txt\n")
        return str(folder)

    local = harbor("local", "FROM python:3.12-slim\nWORKDIR /app\nCOPY seed.txt /app/seed.txt\n")
    docker = harbor("docker", "FROM ubuntu:24.04\nRUN apt-get update && \\\n  apt-get install -y curl\n")
    (task,), problems = discover([local, docker])
    assert (task.family, task.timeout, task.workdir) == ("files", 60.0, "/app")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    task.prepare(workspace)
    assert workspace_files(workspace) == ["seed.txt"]
    (problem,) = problems
    assert problem.kind == "needs-docker" and "RUN apt-get update" in problem.reason


def test_figures_from_events(tmp_path):
    call = {"id": "c1", "name": "read_file", "arguments": "{}"}
    lines = [
        {"type": "BlockCommitted", "block": {"tokens": 32, "forward_passes": 4, "seconds_since_start": 0.5,
                                             "index": 0}},
        {"type": "BlockCommitted", "block": {"tokens": 8, "forward_passes": 1, "seconds_since_start": 0.9,
                                             "index": 1, "prompt_tokens": 100}},
        {"type": "ToolCallParsed", "call": call, "error": None},
        {"type": "ToolStarted", "call": call},
        {"type": "ToolFinished", "call": call, "ok": False, "output": "exit 1"},
        {"type": "ToolCallParsed", "call": {**call, "id": "c2", "name": "nope"}, "error": None},
        {"type": "ToolFinished", "call": {**call, "id": "c2"}, "ok": False, "output": "Error: unknown tool"},
        {"type": "ToolCallParsed", "call": {**call, "id": "c3"}, "error": "cut off"},
        {"type": "ToolFinished", "call": {**call, "id": "c3"}, "ok": False, "output": "Error"},
        {"type": "BlockCommitted", "block": {"tokens": 10, "forward_passes": 2, "seconds_since_start": 0.3,
                                             "index": 0, "prompt_tokens": 150}},
        "not json {",
        {"type": "Result", "exit_code": 0, "exit_reason": "done", "turns": 2, "seconds": 3.5, "model": "m",
         "session_id": "s1"},
    ]
    path = tmp_path / "e.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    f = read_events(path)
    assert (f.requests, f.blocks, f.tokens_out, f.tokens_in, f.forward_passes) == (2, 3, 50, 250, 7)
    assert f.tpf == pytest.approx(50 / 7, abs=1e-3) and f.first_block_s == pytest.approx(0.4)
    assert f.decode_s == pytest.approx(1.2) and f.tokens_per_s == pytest.approx(50 / 1.2, abs=0.01)
    assert (f.tool_calls, f.invalid_calls, f.tool_errors) == (3, 2, 3)  # bad markup and an unknown tool: invalid
    assert (f.exit_reason, f.turns, f.seconds, f.session_id) == ("done", 2, 3.5, "s1")


def line(task, engine, attempt, passed, *, final=None, family="fix-bug", group="g", **extra):
    return {"task": task, "engine": engine, "try": attempt, "passed": passed, "status": "passed" if passed else
            "failed", "final": passed or attempt == 2 if final is None else final, "family": family, "group": group,
            "seconds": 10.0, "tokens_in": 1000, "tokens_out": 100, "forward_passes": 20, "tool_calls": 4,
            "invalid_calls": 1, **extra}


def test_stats_report_and_a_missing_plotting_library(tmp_path, monkeypatch):
    store = ResultStore(tmp_path / "out")
    for entry in [line("t1", "a", 1, True), line("t1", "b", 1, False), line("t1", "b", 2, True),
              line("t2", "a", 1, False), line("t2", "a", 2, False), line("t2", "b", 1, False, final=False),
              line("t3", "a", 1, False, family="exercism", forward_passes=None)]:
        store.append(entry)
    engines = parse_engines(["a=scripted:" + str(tmp_path), "b=http://h/v1"], ["b=1,10"])
    summary = summarize(store.latest(), engines, 2, ["t1", "t2", "t3"])
    a, b = summary.engines
    assert (a.tasks, a.passed_by, b.tasks, b.passed_by) == (3, {1: 1, 2: 1}, 2, {1: 0, 2: 1})
    assert a.tpf == pytest.approx(300 / 60) and a.valid_rate == pytest.approx(0.75)
    assert summary.families["exercism"]["a"].tpf is None  # no passes reported: no TPF made up
    assert b.cost == pytest.approx(3000 / 1e6 * 1 + 300 / 1e6 * 10) and b.incomplete == 1
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    err = tmp_path / "err.txt"
    with err.open("w") as stream:
        table = write_report(store, engines, 2, tasks_order=["t1", "t2", "t3"], problems=[], err=stream)
    assert "| **a** |" in table
    assert f"no plot: {MISSING}" in err.read_text()
    report = (store.out / "report.md").read_text()
    assert "| **a** | scripted:" in report and "33% (1/3)" in report
    assert "| t1 | fix-bug | ✓ try 1, 10.0 s, 100 tok | ✓ try 2, 20.0 s, 200 tok | +10.0 s | +100 |" in report
    assert "(No plot: matplotlib is not installed" in report and not (store.out / "pass_rate_vs_wall.png").exists()


def test_the_store_skips_a_torn_line_and_prefers_a_finished_group(tmp_path):
    store = ResultStore(tmp_path)
    store.append(line("t", "a", 1, False, group="old", final=False))
    with store.path.open("a") as f:
        f.write('{"task": "t", "engine": "a", "tr')  # a crash mid-write
    store.append(line("t", "a", 1, True, group="new"))
    store.append(line("u", "a", 1, False, group="x", final=False))
    assert [line["group"] for line in store.lines()] == ["old", "new", "x"]
    assert store.done() == {("t", "a")}
    assert store.latest()[("t", "a")][0]["group"] == "new"


def test_usage_errors(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", str(SANDBOX / "fix-median")]) == 2
    assert "name at least one engine" in capsys.readouterr().err
    assert main(["eval", "--engine", "gpt-4", str(SANDBOX)]) == 2
    assert "not an engine" in capsys.readouterr().err
    assert main(["eval", "--resume", "--out", str(tmp_path / "none"), "--engine", "embedded"]) == 2
    assert "nothing to resume" in capsys.readouterr().err
    store = ResultStore(tmp_path / "used")
    store.append(line("t", "a", 1, True))
    assert main(["eval", str(SANDBOX), "--engine", "embedded", "--out", str(store.out)]) == 2
    assert "already holds results" in capsys.readouterr().err


def test_prompt_tokens_a_server_never_reported_are_unknown_not_zero(tmp_path):
    events = tmp_path / "e.jsonl"
    events.write_text(json.dumps({"type": "BlockCommitted", "block": {"tokens": 5, "index": 0}}) + "\n")
    assert read_events(events).tokens_in is None
    store = ResultStore(tmp_path / "out")
    store.append(line("t1", "s", 1, False, final=True, tokens_in=None, forward_passes=None))
    engines = parse_engines(["s=http://h/v1"], ["s=1,10"])
    with (tmp_path / "err.txt").open("w") as err:
        table = write_report(store, engines, 1, tasks_order=["t1"], problems=[], err=err)
    row = next(r for r in table.splitlines() if r.startswith("| **s**"))
    assert "| — | 100 | — | — |" in row and "≥ $0.0010" in row  # tokens in unknown; the cost counts the output
