"""Synthetic agent sessions: a task family's plan run through the real tools on a real
generated git repository, recorded as the messages the agent would send the model.

    python -m tools.demo_model.sessions OUT.jsonl --count N --seed S [--workers W]

Each line of OUT is {"family", "messages"} in the agent's OpenAI message format (system,
user, assistant with tool_calls, tool). The system prompt is the real one
(clover_code/prompts/system.md); the tool results are what the real tools returned.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools.demo import GIT_ENV as GIT_IDENTITY, commit_all  # noqa: E402
from tools.demo_model.families import FAMILIES, Call, Task  # noqa: E402

# pytest in the generated repos needs none of the venv's plugins; loading them costs 1 s a run
GIT_ENV = {**GIT_IDENTITY, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def make_repo(files: dict[str, str], where: Path) -> Path:
    repo = where / "repo"
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    return commit_all(repo)


def system_prompt(repo: Path) -> str:
    from clover_code.agent.instructions import render_system_prompt

    return render_system_prompt(repo, "full-auto", sandbox=True)


async def play(task: Task, repo: Path) -> list[dict] | None:
    """The task's plan against the real tools; None when a call fails (a broken plan)."""
    from clover_code.tools import ToolContext, default_registry
    from clover_code.tools.workspace import Workspace

    registry = default_registry()
    ctx = ToolContext(Workspace(repo), sandbox=False)
    messages = [{"role": "system", "content": system_prompt(repo)}, {"role": "user", "content": task.prompt}]
    outputs: list[str] = []
    for number, step in enumerate(task.steps):
        reply = step(outputs)
        if isinstance(reply, str):
            messages.append({"role": "assistant", "content": reply})
            return messages
        calls = [{"id": f"call_{number}_{i}", "type": "function",
                  "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
                 for i, c in enumerate(reply)]
        messages.append({"role": "assistant", "content": "", "tool_calls": calls})
        outputs = []
        for call, wire in zip(reply, calls):
            result = await registry.call(call.name, call.arguments, ctx)
            if not result.ok and not _expected_failure(task, number, call):
                return None
            outputs.append(result.output)
            messages.append({"role": "tool", "tool_call_id": wire["id"], "name": call.name, "content": result.output})
    return messages


def _expected_failure(task: Task, number: int, call: Call) -> bool:
    """Only the first test run of a fix-bug task may fail (that is the point of it)."""
    return task.family == "fix-bug" and number == 0 and call.name == "run_shell"


def generate(seed: int, family: str | None = None) -> dict | None:
    rng = random.Random(seed)
    name = family or rng.choice(sorted(FAMILIES))
    task = FAMILIES[name](rng)
    with tempfile.TemporaryDirectory(prefix="clover-gen-") as tmp:
        repo = make_repo(task.files, Path(tmp))
        messages = asyncio.run(play(task, repo))
    if messages is None:
        return None
    return {"family": name, "seed": seed, "files": task.files, "messages": messages}


def _worker(args: tuple[int, int, str, str | None]) -> int:
    start, count, out, family = args
    os.environ.update(GIT_ENV)
    made = 0
    with open(out, "a", encoding="utf-8") as fh:
        for seed in range(start, start + count):
            session = generate(seed, family)
            if session is not None:
                fh.write(json.dumps(session, ensure_ascii=False) + "\n")
                fh.flush()
                made += 1
    return made


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--seed", type=int, default=0, help="first seed; session i uses seed + i")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--family", choices=sorted(FAMILIES))
    args = p.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    per = -(-args.count // args.workers)
    jobs = [(args.seed + i * per, min(per, args.count - i * per), f"{args.out}.{i}" if args.workers > 1 else str(args.out),
             args.family) for i in range(args.workers) if args.count - i * per > 0]
    if args.workers == 1:
        made = _worker(jobs[0])
    else:
        from multiprocessing import Pool

        with Pool(args.workers) as pool:
            made = sum(pool.map(_worker, jobs))
    print(f"{made} sessions of {args.count} written", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
