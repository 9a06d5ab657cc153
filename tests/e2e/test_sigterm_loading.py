"""SIGTERM at any point while a headless run starts and loads the embedded model (the shipped
demo checkpoint) ends the real process promptly: exit 130 with the JSON result, and nothing
on stderr but what the run says (once 2 of 30 such signals were lost, the run going on to its
end, and one ended in SIGABRT). Each point is reached by waiting for the stderr line that
starts it, never by sleeping."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

# What a clean end never prints: an exception raised into library code, swallowed or not, or a
# C++ abort under torch.
NOISE = ("Traceback", "Exception ignored", "KeyboardInterrupt", "terminate called", "Fatal Python error")
# Lines of stderr, in order: each starts a stage of start-up and loading.
POINTS = ["note: using clover-demo", "loading the embedded model", "importing torch and transformers",
          "reading config", "loading tokenizer", "loading weights", "model ready"]


def start(repo: Path, env: dict[str, str]) -> subprocess.Popen:
    env = {k: v for k, v in env.items() if k not in ("CLOVER_MODEL", "CLOVER_ENDPOINT", "OPENAI_BASE_URL")}
    return subprocess.Popen([sys.executable, "-m", "clover_code.cli", "--task", "say hi", "--cwd", str(repo),
                             "--max-turns", "1", "--max-tokens", "64", "--output-format", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def terminate(proc: subprocess.Popen) -> tuple[float, str, str]:
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return time.monotonic() - t0, out, err


@pytest.mark.parametrize("point", POINTS)
def test_sigterm_while_the_model_loads_ends_the_run_with_130(point, git_repo, env):
    proc = start(git_repo, env)
    seen = ""
    for line in proc.stderr:
        seen += line
        if point in line:
            break
    took, out, err = terminate(proc)
    assert point in seen, seen + err
    assert proc.returncode == 130, seen + err
    assert took < 5, f"took {took:.1f} s"
    assert not [word for word in NOISE if word in err], err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["exit_reason"] == "cancelled" and result["exit_code"] == 130, result


def test_sigterm_at_once_ends_the_process_quietly(git_repo, env):
    """Before clover-code's own code runs, the signal ends Python as signals do; from its first
    line on, it waits a moment for the run to be able to say `cancelled`."""
    proc = start(git_repo, env)
    took, out, err = terminate(proc)
    assert proc.returncode in (130, -signal.SIGTERM), err
    assert took < 5 and not [word for word in NOISE if word in err], err
    if proc.returncode == 130:
        assert json.loads(out.strip().splitlines()[-1])["exit_reason"] == "cancelled"



def test_sigterm_while_the_embedded_engine_decodes_does_not_abort(git_repo, env):
    """The turn is cancelled while the decoding thread is inside a forward pass: the process
    ends with 130, never under that thread (the interpreter's shutdown there ended in SIGABRT)."""
    env = {k: v for k, v in env.items() if k not in ("CLOVER_MODEL", "CLOVER_ENDPOINT", "OPENAI_BASE_URL")}
    proc = subprocess.Popen([sys.executable, "-m", "clover_code.cli", "--task", "say hi", "--cwd", str(git_repo),
                             "--max-turns", "1", "--max-tokens", "512", "--output-format", "stream-json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stdout:
        if json.loads(line)["type"] == "BlockCommitted":  # the first block is out; the next is decoding
            break
    took, out, err = terminate(proc)
    assert proc.returncode == 130 and took < 5, err
    assert not [word for word in NOISE if word in err], err
    assert json.loads(out.strip().splitlines()[-1])["exit_reason"] == "cancelled"
