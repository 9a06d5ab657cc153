"""`clover-code eval` over two sandbox tasks and two polyglot exercises, with a scripted engine
whose replies solve them (through the real edit tools) and one that gives up: the real process,
run once for the module, its results, logs, report and plot read back."""

from __future__ import annotations

import json

import pytest

from tests.support.evals import (
    SANDBOX,
    events,
    giving_up_engine,
    polyglot,
    results,
    run_eval,
    solving_engine,
    tool_outputs,
)

SANDBOX_TASKS = ["fix-median", "rename-function"]
EXERCISES = ["proverb", "beer-song"]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("eval")
    exercises = [polyglot(name) for name in EXERCISES]
    broken = tmp / "tasks" / "broken"
    (broken / "repo").mkdir(parents=True)
    (broken / "task.toml").write_text('prompt = "do something"\n')  # no check command
    solve = solving_engine(tmp / "solve", SANDBOX_TASKS, exercises)
    nope = giving_up_engine(tmp / "nope.jsonl")
    out = tmp / "out"
    proc = run_eval(*(str(SANDBOX / t) for t in SANDBOX_TASKS), *map(str, exercises), str(broken),
                    "--engine", f"solve=scripted:{solve}", "--engine", f"nope=scripted:{nope}",
                    "--price", "solve=3,15", "--tries", "2", "--jobs", "3", "--out", str(out), tmp=tmp)
    return proc, out


def by(lines, **match):
    return [line for line in lines if all(line.get(k) == v for k, v in match.items())]


def test_passes_and_fails_are_counted_right(run):
    proc, out = run
    assert "Traceback" not in proc.stderr
    lines = results(out)
    solved = by(lines, engine="solve")
    assert sorted(line["task"] for line in solved) == sorted(SANDBOX_TASKS + EXERCISES)
    assert all(line["try"] == 1 and line["passed"] and line["final"] for line in solved), solved
    gave_up = by(lines, engine="nope")
    assert len(gave_up) == 8  # two tries for each of the four tasks
    assert all(line["status"] == "failed" and not line["passed"] for line in gave_up)
    assert all(line["final"] == (line["try"] == 2) for line in gave_up)
    for line in lines:  # the figures of the real process, and the machine they were measured on
        assert line["tokens_out"] > 0 and line["tokens_in"] > 0 and line["forward_passes"] > 0
        assert line["tool_calls"] >= 1 and line["invalid_calls"] == 0 and line["exit_reason"] == "done"
        assert line["machine"] and line["family"]
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["machine"]["cores"] >= 1 and run_json["tries"] == 2


def test_try_two_continues_the_session_with_the_test_output(run):
    _, out = run
    logs = out / "logs" / "nope" / "beer-song"
    prompt = (logs / "try2.prompt.md").read_text()
    assert "beer_song_test.py" in prompt and "AssertionError" in prompt  # pytest's own failure report
    assert str(out) not in prompt and " in 0." not in prompt  # paths and timings cleaned, as Aider does
    first, second = by(results(out), engine="nope", task="beer-song")
    assert second["session_id"] == first["session_id"]  # --resume: the same conversation goes on
    assert second["tokens_in"] > first["tokens_in"]  # ... so the second try's requests carry the first
    sandbox_retry = (out / "logs" / "nope" / "fix-median" / "try2.prompt.md").read_text()
    assert "python -m pytest -q" in sandbox_retry and "failed" in sandbox_retry


@pytest.mark.parametrize("exercise", EXERCISES)
def test_meta_and_tests_are_never_in_the_workspace_during_a_try(run, exercise):
    _, out = run
    for attempt in (1, 2):
        (listing,) = [o for o in tool_outputs(out / "logs" / "nope" / exercise / f"try{attempt}.events.jsonl")]
        names = {line.strip() for line in listing.splitlines()}
        stub = exercise.replace("-", "_") + ".py"
        assert f"./{stub}" in names, listing
        assert not any(".meta" in n or "_test.py" in n or ".docs" in n or "example" in n for n in names), listing
    solved = events(out / "logs" / "solve" / exercise / "try1.events.jsonl")
    assert [e["call"]["name"] for e in solved if e["type"] == "ToolFinished" and e["ok"]] == ["read_file", "write_file"]


def test_report_and_plot_are_written(run):
    proc, out = run
    report = (out / "report.md").read_text()
    assert "| **solve** | scripted | 100% (4/4) | 100% (4/4) |" in report
    assert "| **nope** | scripted | 0% (0/4) | 0% (0/4) |" in report
    assert "$" in report.split("**solve**")[1].splitlines()[0]  # a price was given: a cost estimate
    for family in ("fix-bug", "rename", "exercism"):
        assert f"| {family} |" in report.split("## Per task family")[1]
    assert "| beer-song | exercism | ✓ try 1," in report and "✗ 2 tries" in report
    assert (out / "pass_rate_vs_wall.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![pass rate against wall time" in report
    assert "| **solve** |" in proc.stdout  # the engine table on the terminal too


def test_a_malformed_task_folder_is_reported_not_fatal(run):
    proc, out = run
    assert proc.returncode == 1  # every other task ran; one could not
    assert "broken: task.toml has no check" in proc.stderr
    report = (out / "report.md").read_text()
    assert "## Not run" in report and "task.toml has no check" in report
    assert not by(results(out), task="broken")
