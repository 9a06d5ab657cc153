"""Every documented exit code, each reached by a real scenario on the real process."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from tests.support.e2e import last_json, load_task, scripted, session_lines, tool_call, write_replies

PROMPT = load_task("fix-median")["prompt"]


def assert_clean_failure(proc, code: int, words: str) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr + proc.stdout
    assert words in proc.stderr


# ------------------------------------------------------------------ 2: bad input

@pytest.mark.parametrize("case", ["missing cwd", "missing task file", "empty stdin", "zero turns",
                                  "broken config", "unknown setting", "nothing to resume",
                                  "bad output format", "a prompt and --task"])
def test_bad_input_exits_2(case, task_repo, clover, tmp_path):
    repo = task_repo("fix-median")
    base = ["--cwd", str(repo), "--engine", scripted("fix-median")]
    args, stdin, words = ["--task", PROMPT, *base], None, ""
    if case == "missing cwd":
        args, words = ["--task", PROMPT, "--cwd", str(tmp_path / "nope")], "no such directory"
    elif case == "missing task file":
        args, words = ["--task", f"@{tmp_path / 'task.md'}", *base], "cannot read the task file"
    elif case == "empty stdin":
        args, stdin, words = ["--task", "-", *base], "  \n", "is empty"
    elif case == "zero turns":
        args, words = [*args, "--max-turns", "0"], "--max-turns 0"
    elif case == "broken config":
        (repo / ".clover").mkdir()
        (repo / ".clover" / "config.toml").write_text("approval = [\n")
        words = "not valid TOML"
    elif case == "unknown setting":  # in the user's own config (a project's is ignored, with a notice)
        (tmp_path / "xdg" / "clover-code").mkdir(parents=True)
        (tmp_path / "xdg" / "clover-code" / "config.toml").write_text("colour = 'green'\n")
        words = "unknown setting"
    elif case == "nothing to resume":
        args, words = [*args, "--resume"], "no sessions to resume"
    elif case == "bad output format":
        args, words = [*args, "--output-format", "xml"], "invalid choice"
    elif case == "a prompt and --task":  # which one runs? neither: the TUI's first message or headless
        args, words = ["fix the tests", *args], "a prompt and --task both give a task"
    proc = clover(*args, input=stdin)
    assert_clean_failure(proc, 2, words)


def test_bad_input_still_prints_a_json_result(task_repo, clover, tmp_path):
    proc = clover("--task", "x", "--cwd", str(tmp_path / "nope"), "--output-format", "json")
    assert_clean_failure(proc, 2, "no such directory")
    result = last_json(proc.stdout)
    assert result["exit_reason"] == "bad_input" and "no such directory" in result["error"]


# ------------------------------------------------------------------ 3: engine error

def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_endpoint_exits_3(task_repo, clover):
    repo = task_repo("fix-median")
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--endpoint",
                  f"http://127.0.0.1:{closed_port()}/v1", "--model", "clover", "--output-format", "json")
    assert_clean_failure(proc, 3, "127.0.0.1")
    assert last_json(proc.stdout)["exit_reason"] == "engine_error"


def test_missing_replies_file_is_bad_input(task_repo, clover, tmp_path):
    """Naming an engine that cannot exist is the user's mistake (2), found before any loading."""
    repo = task_repo("fix-median")
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--engine", f"scripted:{tmp_path / 'none.jsonl'}")
    assert_clean_failure(proc, 2, "no such file")


def test_engine_failing_mid_task_exits_3(task_repo, clover, tmp_path):
    """The engine dies after two replies: the run stops with what it did so far."""
    repo = task_repo("fix-median")
    replies = write_replies(tmp_path / "r.jsonl", [
        "Let me look.\n" + tool_call("read_file", path="numkit/stats.py"),
        "And the tests.\n" + tool_call("read_file", path="tests/test_stats.py"),
    ])
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--engine", scripted(replies),
                  "--output-format", "json")
    assert_clean_failure(proc, 3, "no more replies")
    result = last_json(proc.stdout)
    assert result["exit_reason"] == "engine_error" and result["tool_calls"] == 2
    assert session_lines(repo)[-1]["type"] == "TurnFinished"


# ------------------------------------------------------------------ 1: the agent gives up

def test_agent_giving_up_exits_1(task_repo, clover, tmp_path):
    """A model stuck on an edit whose text is not in the file: the same failure 3 times."""
    repo = task_repo("fix-median")
    stuck = tool_call("edit_file", path="numkit/stats.py", old_string="return ordered[mid]",
                      new_string="return ordered[mid - 1]")
    replies = write_replies(tmp_path / "r.jsonl", [
        "Reading the module.\n" + tool_call("read_file", path="numkit/stats.py"),
        "Fixing it.\n" + stuck, "Trying again.\n" + stuck, "Once more.\n" + stuck,
        "This line is never reached.",
    ])
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--engine", scripted(replies),
                  "--output-format", "json")
    assert proc.returncode == 1, proc.stderr
    result = last_json(proc.stdout)
    assert result["exit_reason"] == "gave_up" and result["tool_errors"] == 3
    assert "edit_file" in result["result"]
    assert (repo / "numkit" / "stats.py").read_text().count("return ordered[middle]") == 1


def test_a_degenerate_reply_exits_1_not_0(task_repo, clover, tmp_path):
    """The issue's run: a command fails, the model answers with thousands of `kkkk`, and a
    reply without a tool call used to end the run `done`, exit 0. It stops within a few blocks."""
    repo = task_repo("fix-median")
    replies = write_replies(tmp_path / "r.jsonl", [
        "Committing.\n" + tool_call("run_shell", command="git frobnicate"),
        "The commit failed.\n" + "kkkk " * 3000,
        "This reply is never asked for.",
    ])
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--engine", scripted(replies), "--output-format", "json")
    assert_clean_failure(proc, 1, "note: Stopped: the reply degenerated")
    result = last_json(proc.stdout)
    assert result["exit_reason"] == "gave_up" and result["is_error"] and "degenerated" in result["result"]
    assert result["turns"] == 2 and result["tokens"] < 300, result  # 3,000 words written: at most a few blocks read
    last = session_lines(repo)[-1]
    assert last["type"] == "TurnFinished" and last["reason"] == "gave_up"


# ------------------------------------------------------------------ 4: turn limit

def test_turn_limit_exits_4(task_repo, clover):
    repo = task_repo("fix-median")
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--engine", scripted("quick-fix"),
                  "--max-turns", "2", "--output-format", "json")
    assert proc.returncode == 4, proc.stderr
    result = last_json(proc.stdout)
    assert result["exit_reason"] == "max_turns" and result["turns"] == 2 and result["tool_calls"] == 2
    assert "--max-turns" in result["result"]


# ------------------------------------------------------------------ 130: Ctrl-C

@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_interrupt_exits_130_with_a_complete_log(sig, task_repo, env, tmp_path):
    """Ctrl-C (or a CI runner's SIGTERM) while a long shell command runs: the command dies,
    files stay whole, the session log ends with the cancelled turn."""
    repo = task_repo("fix-median")
    before = (repo / "numkit" / "stats.py").read_text()
    replies = write_replies(tmp_path / "r.jsonl", [
        "Reading first.\n" + tool_call("read_file", path="numkit/stats.py"),
        "Running a slow check.\n" + tool_call("run_shell", command="sleep 60; echo done"),
        "Never reached.",
    ])
    cmd = [sys.executable, "-m", "clover_code.cli", "--task", PROMPT, "--cwd", str(repo),
           "--engine", scripted(replies), "--output-format", "stream-json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, **env})
    try:
        for line in proc.stdout:  # wait until the shell command is running
            event = json.loads(line)
            if event["type"] == "ToolStarted" and event["call"]["name"] == "run_shell":
                break
        time.sleep(0.3)
        t0 = time.monotonic()
        proc.send_signal(sig)
        rest, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert time.monotonic() - t0 < 10, "the sleeping command must be killed, not waited for"
    assert "Traceback" not in err
    assert json.loads(rest.strip().splitlines()[-1])["exit_reason"] == "cancelled"
    events = session_lines(repo)  # every line parses
    assert events[-1]["type"] == "TurnFinished" and events[-1]["reason"] == "cancelled"
    assert (repo / "numkit" / "stats.py").read_text() == before
