"""Headless: `--approval plan` prints the plan as the result and changes nothing; stream-json
carries the todo list as an event, and the session log keeps it."""

import json
import subprocess

from tests.support.e2e import last_json, session_lines, tool_call
from tests.support.replies import scripted_engine

TODOS = [{"content": "read stats.py", "status": "done"},
         {"content": "fix the median of an even list", "status": "in_progress"},
         {"content": "run the tests", "status": "pending"}]
PLAN = "Plan:\n1. In numkit/stats.py, average the two middle values.\n2. Run pytest."


def _status(repo):
    return subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout


def test_plan_mode_prints_the_plan_and_changes_nothing(task_repo, clover, tmp_path):
    repo = task_repo("fix-median")
    before = _status(repo)
    engine = scripted_engine(tmp_path / "replies.jsonl",
                             tool_call("read_file", path="numkit/stats.py"),
                             tool_call("write_file", path="numkit/stats.py", content="broken\n")
                             + tool_call("run_shell", command="touch made.txt"),
                             PLAN)
    for mode in ("plan", "read-only"):  # read-only: plan's old name, still accepted
        proc = clover("--task", "fix the median", "--cwd", str(repo), "--engine", engine,
                      "--approval", mode, "--output-format", "json")
        assert proc.returncode == 0, proc.stderr
        result = last_json(proc.stdout)
        assert result["result"] == PLAN
        assert result["tool_errors"] == 2  # the write and the command were refused
        assert "broken" not in (repo / "numkit" / "stats.py").read_text()
        assert not (repo / "made.txt").exists()
        assert _status(repo) == before


def test_stream_json_carries_the_todo_list(task_repo, clover, tmp_path):
    repo = task_repo("fix-median")
    engine = scripted_engine(tmp_path / "replies.jsonl", tool_call("todo_write", todos=TODOS), "All done.")
    proc = clover("--task", "fix the median", "--cwd", str(repo), "--engine", engine,
                  "--output-format", "stream-json")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.strip().splitlines()]
    (todos,) = [e for e in events if e["type"] == "TodosChanged"]
    assert todos["items"] == TODOS
    logged = [e for e in session_lines(repo) if e["type"] == "TodosChanged"]
    assert logged and logged[0]["items"] == TODOS


def test_text_mode_shows_the_list_on_stderr(task_repo, clover, tmp_path):
    repo = task_repo("fix-median")
    engine = scripted_engine(tmp_path / "replies.jsonl", tool_call("todo_write", todos=TODOS), "All done.")
    proc = clover("--task", "fix the median", "--cwd", str(repo), "--engine", engine)
    assert proc.returncode == 0, proc.stderr
    assert "todo (1/3 done)" in proc.stderr and "▸ fix the median of an even list" in proc.stderr
