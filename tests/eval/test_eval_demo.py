"""The embedded demo checkpoint as one of the engines, end to end on the sandbox tasks: real
decoding figures (forward passes, TPF, first block, tokens/s) in the results and the report."""

from __future__ import annotations

import pytest

from tests.support.evals import SANDBOX, results, run_eval, solving_engine

TASKS = ["fix-median", "rename-function"]  # the families the demo model solves (its card says how often)


@pytest.mark.slow
def test_the_demo_model_beside_a_scripted_engine_on_the_sandbox_tasks(tmp_path):
    solve = solving_engine(tmp_path / "solve", TASKS, [])
    out = tmp_path / "out"
    proc = run_eval(*(str(SANDBOX / t) for t in TASKS), "--engine", "demo=embedded", "--engine",
                    f"solve=scripted:{solve}", "--tries", "1", "--max-turns", "12", "--jobs", "2",
                    "--out", str(out), tmp=tmp_path, timeout=400)
    assert proc.returncode == 0, proc.stderr
    demo = [line for line in results(out) if line["engine"] == "demo"]
    assert sorted(line["task"] for line in demo) == TASKS
    for line in demo:
        assert line["status"] in ("passed", "failed"), line  # the model may miss; the run may not break
        assert line["model"].endswith("clover-demo") and line["exit_reason"] in ("done", "max_turns", "gave_up")
        assert line["forward_passes"] >= line["blocks"] >= 1
        assert 1 < line["tpf"] <= 32  # parallel decoding: more than one token per pass
        assert line["first_block_s"] > 0 and line["tokens_per_s"] > 0 and line["tokens_in"] > 0
        assert line["process_s"] > line["seconds"]  # loading the model is not the task's time
    report = (out / "report.md").read_text()
    assert "| **demo** |" in report and "clover-demo" in report
    assert all(line["passed"] for line in results(out) if line["engine"] == "solve")
