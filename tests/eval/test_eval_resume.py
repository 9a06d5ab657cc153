"""An interrupted eval keeps what finished and --resume goes on without redoing it; a try past
its time limit is failed and recorded, never left hanging."""

from __future__ import annotations

import signal
import time

from tests.support.evals import SANDBOX, giving_up_engine, polyglot, results, run_eval, start_eval, write_replies

SLOW = {"content": "Thinking it over.", "delay": 60}


def test_an_interrupted_run_is_resumed_without_redoing_finished_tasks(tmp_path):
    exercise = polyglot("transpose")
    replies = tmp_path / "engine"
    giving_up_engine(replies / "fix-median.jsonl")
    write_replies(replies / "transpose.jsonl", [SLOW])  # still running when Ctrl-C comes
    out = tmp_path / "out"
    proc = start_eval(str(SANDBOX / "fix-median"), str(exercise), "--engine", f"e=scripted:{replies}",
                      "--tries", "1", "--out", str(out), tmp=tmp_path)
    running = out / "logs" / "e" / "transpose" / "try1.events.jsonl"
    deadline = time.monotonic() + 120
    while not (results(out) and running.exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2.0)  # the second task's process has started and waits in its slow reply
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr and "Traceback" not in stderr
    (done,) = results(out)  # the interrupted try is no result
    assert done["task"] == "fix-median" and done["final"]
    assert (out / "report.md").is_file()  # the report of what finished

    giving_up_engine(replies / "transpose.jsonl")  # the second task is quick this time
    again = run_eval("--resume", "--out", str(out), tmp=tmp_path)  # tasks and engines from run.json
    assert again.returncode == 0, again.stderr
    assert "1 of 2 task runs already done" in again.stderr
    lines = results(out)
    assert [line["task"] for line in lines] == ["fix-median", "transpose"]
    assert lines[0] == done  # not run again
    report = (out / "report.md").read_text()
    assert "| fix-median |" in report and "| transpose |" in report


def test_a_try_past_its_time_limit_is_failed_and_recorded(tmp_path):
    slow = write_replies(tmp_path / "slow.jsonl", [SLOW])
    out = tmp_path / "out"
    t0 = time.monotonic()
    proc = run_eval(str(SANDBOX / "fix-median"), "--engine", f"slow=scripted:{slow}", "--timeout", "3",
                    "--out", str(out), tmp=tmp_path)
    assert time.monotonic() - t0 < 45
    assert proc.returncode == 0, proc.stderr
    (line,) = results(out)  # no second try after a time limit
    assert line["status"] == "timeout" and not line["passed"] and line["final"]
    assert "time limit of 3 s" in line["error"]
    assert "✗ time limit" in (out / "report.md").read_text()
