"""Helpers for the end-to-end tests: sandbox tasks, scripted replies, session logs."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.support.replies import tool_call, write_replies  # noqa: F401  (the tests import them from here)
from tools.demo import demo_env, load_task, prepare_repo  # noqa: F401  (the demo's own helpers)

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "tests" / "e2e" / "sessions"
TASKS = ("fix-median", "add-slugify", "rename-function")


def scripted(name_or_path: str | Path) -> str:
    """--engine value replaying tests/e2e/sessions/NAME.jsonl (or a given file)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = SESSIONS / f"{name_or_path}.jsonl"
    return f"scripted:{path}"




def session_replies(name: str) -> list[Any]:
    return [json.loads(line) for line in (SESSIONS / f"{name}.jsonl").read_text().splitlines() if line]


def run_check(repo: Path, task: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    check = load_task(task)["check"]
    return subprocess.run(["bash", "-c", check], cwd=repo, env={**os.environ, **env},
                          capture_output=True, text=True, timeout=120)


def session_lines(repo: Path) -> list[dict[str, Any]]:
    """Every event of the (only) session log in the repository, parsed."""
    logs = sorted((repo / ".clover" / "sessions").glob("*.jsonl"))
    assert len(logs) == 1, logs
    return [json.loads(line) for line in logs[0].read_text(encoding="utf-8").splitlines()]


def last_json(stdout: str) -> dict[str, Any]:
    return json.loads(stdout.strip().splitlines()[-1])
