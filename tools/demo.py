"""`make demo`: one sandbox task, headless, on the embedded engine, end to end.

    python -m tools.demo [--task rename-function] [--model DIR] [--keep]

Copies sandbox/<task>/repo to a temporary folder, makes it a git repository, runs
`clover-code --task` on it (embedded engine, full-auto, sandboxed shell), then runs the
task's check command and prints the run's blocks, forward passes, TPF and tokens/s.

It imports nothing of tools/, so it also runs by path (tools/ci_wheel_task.sh runs it so, from
outside the checkout, against the installed wheel).

Without --model it runs the embedded default: the demo checkpoint shipped in the package
(clover_code/models/clover-demo, trained by tools/training/train_demo_model.py).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SANDBOX = ROOT / "sandbox"
GIT_ENV = {"GIT_AUTHOR_NAME": "clover-demo", "GIT_AUTHOR_EMAIL": "demo@clover-code.invalid",
           "GIT_COMMITTER_NAME": "clover-demo", "GIT_COMMITTER_EMAIL": "demo@clover-code.invalid"}


def load_task(name: str) -> dict:
    path = SANDBOX / name / "task.toml"
    if not path.is_file():
        known = ", ".join(sorted(p.parent.name for p in SANDBOX.glob("*/task.toml")))
        sys.exit(f"demo: no sandbox task {name!r}; choose one of: {known}")
    return tomllib.loads(path.read_text(encoding="utf-8"))


def prepare_repo(name: str, dest: Path) -> Path:
    """A fresh git repository holding the task's files, one commit."""
    repo = dest / name
    shutil.copytree(SANDBOX / name / "repo", repo,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return commit_all(repo)


def commit_all(repo: Path) -> Path:
    """Make `repo` a git repository whose one commit holds all its files."""
    env = {**os.environ, **GIT_ENV}
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                ["git", "commit", "-qm", "initial"]):
        subprocess.run(cmd, cwd=repo, check=True, env=env)
    return repo


def demo_env() -> dict[str, str]:
    """This Python's folder first on PATH: the agent's `python -m pytest` and the check use
    the interpreter clover-code runs in, as a user's activated venv would."""
    return {**os.environ, **GIT_ENV, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}


def run_agent(repo: Path, prompt: str, extra: list[str]) -> dict:
    """The real `clover-code --task` process; its progress streams to our stderr."""
    cmd = [sys.executable, "-m", "clover_code.cli", "--task", prompt, "--cwd", str(repo),
           "--output-format", "json", *extra]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, env=demo_env())
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        return {"exit_code": proc.returncode, "exit_reason": "no result", "raw": proc.stdout}


def run_check(repo: Path, check: str) -> bool:
    proc = subprocess.run(["bash", "-c", check], cwd=repo, env=demo_env(), capture_output=True, text=True)
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-5:]
    print("\n".join(f"    {line}" for line in tail))
    return proc.returncode == 0


def print_figures(result: dict, passed: bool) -> None:
    rows = [
        ("exit", f"{result.get('exit_code')} ({result.get('exit_reason')})"),
        ("turns", result.get("turns")), ("tool calls", result.get("tool_calls")),
        ("blocks", result.get("blocks")), ("tokens", result.get("tokens")),
        ("forward passes", result.get("forward_passes")), ("TPF", result.get("tpf")),
        ("tokens/s", result.get("tokens_per_s")), ("seconds", result.get("seconds")),
        ("check", "passed" if passed else "failed"),
    ]
    print("\n== demo figures ==")
    for name, value in rows:
        print(f"  {name:<15} {value}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="rename-function", help="sandbox task (folder under sandbox/)")
    p.add_argument("--model", help="checkpoint folder (default: the embedded demo checkpoint)")
    p.add_argument("--max-turns", type=int, default=12)
    p.add_argument("--keep", action="store_true", help="keep the temporary repository")
    args = p.parse_args()
    task = load_task(args.task)
    work = Path(tempfile.mkdtemp(prefix="clover-demo-"))
    try:
        repo = prepare_repo(args.task, work)
        extra = ["--max-turns", str(args.max_turns)] + (["--model", args.model] if args.model else [])
        print(f"demo: task {args.task!r} in {repo}\ndemo: {task['prompt'].strip()}\n", file=sys.stderr)
        result = run_agent(repo, task["prompt"].strip(), extra)
        print("\n== check ==\n  $ " + task["check"].strip().replace("\n", "\n    "))
        passed = run_check(repo, task["check"])
        print_figures(result, passed)
        return 0 if passed else 1
    finally:
        if args.keep:
            print(f"demo: kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
