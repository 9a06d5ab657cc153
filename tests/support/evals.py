"""Helpers for the eval tests: scripted engines that solve or give up, the real `clover-code
eval` process, and what it leaves on disk."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from clover_code.eval.tasks import ALWAYS_SKIPPED
from tests.support.replies import tool_call, write_replies

ROOT = Path(__file__).resolve().parents[2]
SANDBOX = ROOT / "sandbox"
SESSIONS = ROOT / "tests" / "e2e" / "sessions"  # scripted sessions that solve the sandbox tasks
POLYGLOT = ROOT.parent / "shared" / "peer-suites" / "polyglot-python"
ENGINE_VARS = ("CLOVER_MODEL", "CLOVER_ENDPOINT", "OPENAI_BASE_URL", "CLOVER_APPROVAL")


def polyglot(name: str) -> Path:
    folder = POLYGLOT / name
    if not folder.is_dir():
        pytest.skip(f"the polyglot exercises are not here ({POLYGLOT}): shared/ lies beside the checkout in CI")
    return folder




def solving_engine(folder: Path, sandbox_tasks: list[str], exercises: list[Path]) -> Path:
    """A scripted engine (one file per task) whose replies solve: the sandbox tasks' recorded
    sessions, and for each exercise its reference solution written through the real file tools."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in sandbox_tasks:
        (folder / f"{name}.jsonl").write_text((SESSIONS / f"{name}.jsonl").read_text(encoding="utf-8"))
    for exercise in exercises:
        stub = json.loads((exercise / ".meta" / "config.json").read_text())["files"]["solution"][0]
        solution = (exercise / ".meta" / "example.py").read_text(encoding="utf-8")
        write_replies(folder / f"{exercise.name}.jsonl", [
            "I'll read the stub, then write the solution.\n" + tool_call("read_file", path=stub)
            + "\n" + tool_call("write_file", path=stub, content=solution),
            f"Done: {stub} implements the exercise.",
        ])
    return folder


LIST_WORKSPACE = "find . -path ./.git -prune -o -print | sort"


def giving_up_engine(path: Path) -> Path:
    """A scripted engine (one file for every task) that lists its workspace, then gives up."""
    return write_replies(path, [
        "Let me see what I have.\n" + tool_call("run_shell", command=LIST_WORKSPACE),
        "I could not work out how to do this.",
    ])


def workspace_files(workspace: Path) -> list[str]:
    """The files of a workspace that are the model's work (not .git, .clover or caches)."""
    found = []
    for root, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if d not in (".git", ".clover", *ALWAYS_SKIPPED)]
        found += [str((Path(root) / f).relative_to(workspace)) for f in files]
    return sorted(found)


def eval_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ENGINE_VARS}
    env["XDG_CONFIG_HOME"] = str(tmp / "xdg")  # no user config file
    return env


def run_eval(*args: str, tmp: Path, timeout: float = 240) -> subprocess.CompletedProcess:
    """The real `clover-code eval` process."""
    return subprocess.run([sys.executable, "-m", "clover_code.cli", "eval", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=tmp, env=eval_env(tmp))


def start_eval(*args: str, tmp: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "clover_code.cli", "eval", *args], cwd=tmp, env=eval_env(tmp),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def results(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def tool_outputs(path: Path) -> list[str]:
    return [e["output"] for e in events(path) if e.get("type") == "ToolFinished"]
