"""Synthetic agent sessions: a task family's plan run through the real tools on a real
generated git repository, recorded as the messages the agent would send the model.

    python -m tools.training.demo_model.sessions OUT.jsonl --count N --seed S [--workers W]

Each line of OUT is {"family", "messages"} in the agent's OpenAI message format (system,
user, assistant with tool_calls, tool). The system prompt is the real one
(prompts/system.md); the tool results are what the real tools returned.

Some sessions (--slip-rate) hold one slip: before a step, a wrong version of its first
call (a misremembered package name, an edit whose old_string is off by a word), the real
tool's error, then the right step. The slip turn is marked "slip" and is context, never a
training target: the model learns to recover from an error, not to make it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import tempfile
from pathlib import Path

from tools.demo import GIT_ENV as GIT_IDENTITY
from tools.demo import commit_all
from tools.training.demo_model.drills import DRILLS
from tools.training.demo_model.families import FAMILIES, Call, Task, package_name

TASKS = {**FAMILIES, **DRILLS}  # what --family may name; a session with none named draws a family

SLIP_RATE = 0.3  # default share of sessions that hold one slip

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


def slipped(call: Call, rng: random.Random) -> Call | None:
    """A wrong version of `call` that the real tool rejects without touching the repo, or
    None: the mistakes a small model makes when it recalls a name instead of copying it."""
    path = call.arguments.get("path", "")
    if call.name not in ("read_file", "edit_file") or "/" not in path:
        return None
    old = call.arguments.get("old_string", "")
    words = re.findall(r"[A-Za-z_]{3,}", old)
    if words and rng.random() < 0.5:
        word = rng.choice(words)
        wrong = re.sub(rf"\b{word}\b", word[:-1] if len(word) > 3 else word + "s", old, count=1)
        return Call(call.name, {**call.arguments, "old_string": wrong})
    package, rest = path.split("/", 1)
    other = package_name(rng)
    return Call(call.name, {**call.arguments, "path": f"{other if other != package else other + 's'}/{rest}"})


def assistant_turn(calls: list[Call], number: int, slip: bool = False) -> dict:
    wire = [{"id": f"call_{number}_{i}{'_slip' if slip else ''}", "type": "function",
             "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)}}
            for i, c in enumerate(calls)]
    return {"role": "assistant", "content": "", "tool_calls": wire, **({"slip": True} if slip else {})}


async def play(task: Task, repo: Path, rng: random.Random, slip_rate: float = 0.0) -> list[dict] | None:
    """The task's plan against the real tools; None when a call fails (a broken plan)."""
    from clover_code.tools import ToolContext, default_registry
    from clover_code.tools.workspace import Workspace

    registry = default_registry()
    ctx = ToolContext(Workspace(repo), sandbox=False)
    messages = [{"role": "system", "content": system_prompt(repo)}, {"role": "user", "content": task.prompt}]
    slip_left = rng.random() < slip_rate  # then one slip, at the first step a coin picks that allows one
    outputs: list[str] = []
    for number, step in enumerate(task.steps):
        reply = step(outputs)
        if isinstance(reply, str):
            messages.append({"role": "assistant", "content": reply})
            return messages
        wrong = slipped(reply[0], rng) if slip_left and rng.random() < 0.5 else None
        if wrong is not None:
            slip_left = False
            slip = await slip_turns(wrong, number, registry, ctx)
            if slip is None:
                return None
            messages += slip
        messages.append(turn := assistant_turn(reply, number))
        outputs = []
        for call, wire in zip(reply, turn["tool_calls"], strict=False):
            result = await registry.call(call.name, call.arguments, ctx)
            if not result.ok and not _expected_failure(task, number, call):
                return None
            outputs.append(result.output)
            messages.append({"role": "tool", "tool_call_id": wire["id"], "name": call.name, "content": result.output})
    return messages


async def slip_turns(wrong: Call, number: int, registry, ctx) -> list[dict] | None:
    """The slip's assistant turn and the real tool's error; None if the call succeeded
    (then it may have changed the repository, and the session is dropped)."""
    result = await registry.call(wrong.name, wrong.arguments, ctx)
    if result.ok:
        return None
    turn = assistant_turn([wrong], number, slip=True)
    return [turn, {"role": "tool", "tool_call_id": turn["tool_calls"][0]["id"], "name": wrong.name,
                   "content": result.output}]


def _expected_failure(task: Task, number: int, call: Call) -> bool:
    """Only the first test run of a fix-bug task may fail (that is the point of it)."""
    return task.family == "fix-bug" and number == 0 and call.name == "run_shell"


def generate(seed: int, family: str | None = None, slip_rate: float = 0.0) -> dict | None:
    rng = random.Random(seed)
    name = family or rng.choice(sorted(FAMILIES))
    task = TASKS[name](rng)
    with tempfile.TemporaryDirectory(prefix="clover-gen-") as tmp:
        repo = make_repo(task.files, Path(tmp))
        messages = asyncio.run(play(task, repo, rng, slip_rate))
    if messages is None:
        return None
    return {"family": name, "seed": seed, "files": task.files, "messages": messages}


def _worker(args: tuple[int, int, str, str | None, float]) -> int:
    start, count, out, family, slip_rate = args
    os.environ.update(GIT_ENV)
    made = 0
    with open(out, "a", encoding="utf-8") as fh:
        for seed in range(start, start + count):
            session = generate(seed, family, slip_rate)
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
    p.add_argument("--family", choices=sorted(TASKS),
                   help="one family or drill (tools/training/demo_model/drills.py); default: every family")
    p.add_argument("--slip-rate", type=float, default=SLIP_RATE,
                   help="share of sessions with one slip and its recovery")
    args = p.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    per = -(-args.count // args.workers)
    jobs = [(args.seed + i * per, min(per, args.count - i * per),
             f"{args.out}.{i}" if args.workers > 1 else str(args.out), args.family, args.slip_rate)
            for i in range(args.workers) if args.count - i * per > 0]
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
