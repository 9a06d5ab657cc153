"""Headless edges a CI script depends on: every way a run can fail before it starts is exit 2
with the JSON object when JSON was asked for, and SIGTERM (a runner cancelling the job) ends
the real process with 130 and the result object, within a second, whatever it was doing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CODE_USAGE, CODE_INTERRUPTED = 2, 130


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "CLOVER_APPROVAL": "full-auto"}


def script(path: Path, *replies: object) -> str:
    path.write_text("".join(json.dumps({"content": r} if isinstance(r, str) else r) + "\n" for r in replies))
    return f"scripted:{path}"


def clover(*args: str, env: dict, stdin: bytes | None = None, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "clover_code.cli", *args], input=stdin, env=env,
                          capture_output=True, timeout=timeout)


def result_of(stdout: bytes) -> dict:
    return json.loads(stdout.decode("utf-8").strip().splitlines()[-1])


def test_non_utf8_stdin_is_bad_input(git_repo, tmp_path, env):
    proc = clover("--task", "-", "--cwd", str(git_repo), "--engine", script(tmp_path / "r.jsonl", "hi"),
                  "--output-format", "json", env=env, stdin=b"fix \xff\xfe the bug\n")
    assert proc.returncode == CODE_USAGE, proc.stderr
    result = result_of(proc.stdout)
    assert result["exit_reason"] == "bad_input" and "not UTF-8" in result["error"]
    assert b"Traceback" not in proc.stderr


@pytest.mark.parametrize("fmt", ["json", "stream-json"])
@pytest.mark.parametrize("flags, words", [
    (["--max-turns", "many"], "invalid int value"),
    (["--approval", "yolo"], "invalid choice"),
    (["--no-such-flag"], "unrecognized arguments"),
    (["--engine", "warp-drive"], "unknown engine 'warp-drive'"),
    (["--engine", "scripted"], "needs a file of replies"),
    (["--engine", "scripted:/nonexistent/replies.jsonl"], "no such file"),
], ids=["bad int", "bad choice", "unknown flag", "unknown engine", "scripted without file", "missing file"])
def test_usage_errors_print_the_promised_json_object(flags, words, fmt, git_repo, env):
    proc = clover("--task", "hi", "--cwd", str(git_repo), "--output-format", fmt, *flags, env=env)
    assert proc.returncode == CODE_USAGE, proc.stderr
    result = result_of(proc.stdout)
    assert result["exit_reason"] == "bad_input" and result["exit_code"] == CODE_USAGE and result["is_error"]
    assert words in result["error"] and words in proc.stderr.decode()
    assert result.get("type") == ("Result" if fmt == "stream-json" else None)
    assert b"Traceback" not in proc.stderr


def start(args: list[str], env: dict) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "clover_code.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def stop_with_sigterm(proc: subprocess.Popen) -> tuple[float, str, str]:
    """SIGTERM, then the seconds until the process is gone, its stdout and its stderr."""
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    return time.monotonic() - t0, out, err


def test_sigterm_while_the_model_loads_exits_130_with_the_result(git_repo, tmp_path, env):
    """The embedded engine spends seconds importing torch and loading weights before the task."""
    model = tmp_path / "checkpoint"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]}))
    proc = start(["--task", "hi", "--cwd", str(git_repo), "--model", str(model), "--output-format", "json"], env)
    assert "loading the embedded model" in proc.stderr.readline()
    took, out, err = stop_with_sigterm(proc)
    assert proc.returncode == CODE_INTERRUPTED, err
    assert took < 5 and "Traceback" not in err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["exit_reason"] == "cancelled" and result["exit_code"] == CODE_INTERRUPTED


@pytest.mark.parametrize("step", ["sleep 30 in the shell", "a slow engine"])
def test_sigterm_during_a_long_step_takes_effect_within_a_second(step, git_repo, tmp_path, env):
    if step == "a slow engine":  # the first block takes 30 s to arrive
        engine = script(tmp_path / "r.jsonl", {"content": "thinking slowly", "delay": 30})
        wait_for = "UserMessage"
    else:
        call = '<tool_call>{"name": "run_shell", "arguments": {"command": "sleep 30"}}</tool_call>'
        engine = script(tmp_path / "r.jsonl", "Waiting.\n" + call, "never")
        wait_for = "ToolStarted"
    proc = start(["--task", "hi", "--cwd", str(git_repo), "--engine", engine, "--output-format", "stream-json"], env)
    for line in proc.stdout:
        if json.loads(line)["type"] == wait_for:
            break
    time.sleep(0.3)  # well inside the step
    took, out, err = stop_with_sigterm(proc)
    assert proc.returncode == CODE_INTERRUPTED, err
    # Within a second on an idle machine; the margin keeps a loaded CI runner (2 cores shared)
    # from failing it, and is still far from the 30 s the step would run on.
    assert took < 2.5, f"took {took:.2f} s"
    assert json.loads(out.strip().splitlines()[-1])["exit_reason"] == "cancelled"
    [log] = (git_repo / ".clover" / "sessions").glob("*.jsonl")
    last = json.loads(log.read_text().splitlines()[-1])
    assert last["type"] == "TurnFinished" and last["reason"] == "cancelled"
