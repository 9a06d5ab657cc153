"""Each sandbox task, solved end to end: a scripted model session drives the real
`clover-code --task` process through the real tools, shell (sandboxed) and git."""

import json
import subprocess

import pytest

from tests.support.e2e import TASKS, last_json, load_task, run_check, scripted, session_lines, session_replies


def tool_calls_in(name: str) -> list[str]:
    """Tool names in the scripted session, in order."""
    names = []
    for reply in session_replies(name):
        for chunk in reply["content"].split("<tool_call>")[1:]:
            names.append(json.loads(chunk.split("</tool_call>")[0])["name"])
    return names


# The first test run of fix-median fails on purpose: it is how the model sees the bug.
EXPECTED_FAILURES = {"fix-median": 1}


def git(repo, *args) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


@pytest.mark.parametrize("task", TASKS)
def test_scripted_session_solves_the_task(task, task_repo, clover, env):
    repo = task_repo(task)
    assert run_check(repo, task, env).returncode != 0, "the task must start unsolved"

    proc = clover("--task", load_task(task)["prompt"], "--cwd", str(repo), "--engine", scripted(task),
                  "--output-format", "json")

    assert proc.returncode == 0, proc.stderr
    result = last_json(proc.stdout)
    expected_calls = tool_calls_in(task)
    assert {"read_file", "run_shell", "git_commit"} <= set(expected_calls)
    assert result["exit_reason"] == "done"
    assert result["turns"] == len(session_replies(task))
    assert result["tool_calls"] == len(expected_calls)
    assert result["tool_errors"] == EXPECTED_FAILURES.get(task, 0), proc.stderr
    assert result["blocks"] >= result["turns"] and result["tokens"] > 0
    assert result["result"].startswith(session_replies(task)[-1]["content"][:40])
    # Progress went to stderr: one line per tool call, with its status.
    assert proc.stderr.count("  ✓ ") + proc.stderr.count("  ✗ ") == len(expected_calls)
    # The work is done and committed: the check passes, the tree is clean, one new commit.
    check = run_check(repo, task, env)
    assert check.returncode == 0, check.stdout + check.stderr
    assert git(repo, "status", "--porcelain") == ""
    assert len(git(repo, "log", "--oneline").splitlines()) == 2
    # The session log holds the whole run, ending with the finished turn.
    events = session_lines(repo)
    assert events[0]["type"] == "UserMessage" and events[-1]["type"] == "TurnFinished"
    assert events[-1]["reason"] == "done"
    assert sum(e["type"] == "ToolFinished" for e in events) == len(expected_calls)
