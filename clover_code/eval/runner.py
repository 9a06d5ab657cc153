"""Units of work (one task on one engine), their tries, run side by side where allowed.

A unit: a fresh workspace from the task; try 1 with the task's prompt; its check; when it
fails and tries are left, try 2 continues the same session (`--resume`) with the check's
output, as Aider shows a model its failing tests. Each checked try is one line of
results.jsonl, written as it finishes.

--jobs N runs N units at once against remote and scripted engines; units on an embedded
engine run one at a time beside them, in a lane of their own (each loads the model on this
machine's CPU or GPU). Units are ordered task by task, engine by
engine (A B A B ...), so two engines meet the same machine load.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path

from clover_code.eval.agent_run import Interrupted, ProcessBoard, TryFigures, agent_argv, run_try
from clover_code.eval.checks import CheckResult, CheckRunner
from clover_code.eval.engines import EngineSpec, SpecError
from clover_code.eval.results import ResultStore
from clover_code.eval.tasks import GIT_IDENTITY, Task, TaskError
from clover_code.jsonsafe import JSONObject


@dataclass(frozen=True)
class EvalOptions:
    tries: int = 2
    jobs: int = 1
    timeout: float = 900.0  # seconds per try, unless the task states its own
    max_turns: int | None = None
    max_tokens: int | None = None
    sandbox: bool = True
    keep: bool = False  # keep workspaces (their paths go to the logs)
    check_timeout: float = 180.0


class Runner:
    def __init__(self, tasks: list[Task], engines: list[EngineSpec], options: EvalOptions, store: ResultStore,
                 on_start: Callable[[Task, EngineSpec], None] = lambda t, e: None,
                 on_try: Callable[[JSONObject], None] = lambda line: None, machine: str = ""):
        self.tasks, self.engines, self.options, self.store = tasks, engines, options, store
        self.on_start, self.on_try = on_start, on_try
        self.machine = machine
        self.board = ProcessBoard()
        self.checker = CheckRunner(sandbox=options.sandbox, timeout=options.check_timeout)
        self.embedded = threading.Lock()  # one embedded try at a time

    def pending(self) -> list[tuple[Task, EngineSpec]]:
        done = self.store.done()
        return [(t, e) for t in self.tasks for e in self.engines if (t.id, e.name) not in done]

    def run(self, units: list[tuple[Task, EngineSpec]]) -> bool:
        """Run `units`; False when stopped by Ctrl-C (what finished is recorded)."""
        pools = self._pools()
        futures: set[Future[None]] = {pools[engine.parallel].submit(self._unit, task, engine) for task, engine in units}
        try:
            while futures:
                finished, futures = wait(futures, timeout=0.25, return_when=FIRST_COMPLETED)
                for future in finished:
                    future.result()  # a bug in the runner is a bug: let it show
        except KeyboardInterrupt:
            self.board.stop_all()
            for pool in set(pools.values()):
                pool.shutdown(wait=True, cancel_futures=True)
            return False
        for pool in set(pools.values()):
            pool.shutdown(wait=True)
        return True

    def _pools(self) -> dict[bool, ThreadPoolExecutor]:
        """parallel -> the pool its units run in. --jobs 1: one pool, units in order. More: the
        embedded units in a lane of their own, one at a time (waiting there, not in a slot a
        remote unit could use), and the others N at once beside it."""
        jobs = max(1, self.options.jobs)
        shared = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="eval")
        if jobs == 1:
            return {True: shared, False: shared}
        return {True: shared, False: ThreadPoolExecutor(max_workers=1, thread_name_prefix="eval-embedded")}

    # ------------------------------------------------------------ one unit

    def _unit(self, task: Task, engine: EngineSpec) -> None:
        if self.board.stopping.is_set():
            return
        self.on_start(task, engine)
        group = uuid.uuid4().hex[:10]
        root = Path(tempfile.mkdtemp(prefix="clover-eval-"))
        workspace = root / task.source.name
        workspace.mkdir()
        try:
            try:
                task.prepare(workspace, sandbox=self.options.sandbox)
            except Exception as exc:  # a task folder the loader let through but cannot be copied
                why = str(exc) if isinstance(exc, TaskError) else f"{type(exc).__name__}: {exc}"
                self._record(task, engine, group, 1, final=True, status="error",
                             error=f"preparing the workspace failed: {why}")
                return
            self._tries(task, engine, group, root, workspace)
        except Interrupted:
            return
        finally:
            if self.options.keep:
                (self.store.log_dir(engine.name, task.id) / "workspace.txt").write_text(f"{workspace}\n")
            else:
                shutil.rmtree(root, ignore_errors=True)

    def _tries(self, task: Task, engine: EngineSpec, group: str, root: Path, workspace: Path) -> None:
        prompt, session = task.prompt(), None
        logs = self.store.log_dir(engine.name, task.id)
        for attempt in range(1, self.options.tries + 1):
            try:
                flags = engine.flags(task.id, attempt)
            except SpecError as exc:
                self._record(task, engine, group, attempt, final=True, status="error", error=str(exc))
                return
            argv = agent_argv(workspace, flags, max_turns=self.options.max_turns, max_tokens=self.options.max_tokens,
                              sandbox=self.options.sandbox, resume=session)
            (logs / f"try{attempt}.prompt.md").write_text(prompt, encoding="utf-8")
            lock = contextlib.nullcontext() if engine.parallel else self.embedded
            with lock:
                figures = run_try(argv, prompt, agent_env(), logs / f"try{attempt}.events.jsonl",
                                  logs / f"try{attempt}.stderr.txt", task.timeout or self.options.timeout, self.board)
            if figures.timed_out:
                self._record(task, engine, group, attempt, final=True, status="timeout", figures=figures)
                return
            check = self._check(task, workspace, Path(tempfile.mkdtemp(prefix=f"check{attempt}-", dir=root)))
            (logs / f"try{attempt}.check.txt").write_text(check.output + "\n", encoding="utf-8")
            engine_failed = figures.exit_reason in ("engine_error", "bad_input") or figures.exit_code is None
            status = "passed" if check.passed else "error" if engine_failed or check.error else "failed"
            final = check.passed or attempt == self.options.tries or status == "error"
            self._record(task, engine, group, attempt, final=final, status=status, figures=figures, check=check)
            if final:
                return
            retry = task.retry_prompt(check)
            session = figures.session_id
            prompt = retry if session else f"{task.prompt()}\n\n{retry}"

    def _check(self, task: Task, workspace: Path, scratch: Path) -> CheckResult:
        """The task's check; one the model's work keeps from being set up (a link where the
        pristine tests go) is an error of the try, not of the run."""
        try:
            return task.check(workspace, scratch, self.checker)
        except (TaskError, OSError) as exc:
            return CheckResult(False, "", 0.0, error=f"the check could not be set up: {exc}")

    def _record(self, task: Task, engine: EngineSpec, group: str, attempt: int, *, final: bool, status: str,
                figures: TryFigures | None = None, check: CheckResult | None = None, error: str | None = None) -> None:
        line: JSONObject = {
            "task": task.id, "family": task.family, "format": task.format, "engine": engine.name,
            "try": attempt, "final": final, "group": group, "status": status, "passed": status == "passed",
        }
        line.update((figures or TryFigures()).as_dict())
        if error:
            line["error"] = error
        elif check is not None and check.error:
            line["error"] = check.error
        line.update({
            "reward": check.reward if check else None,
            "check_s": check.seconds if check else None,
            "check_exit": check.exit_code if check else None,
            "check_timed_out": check.timed_out if check else False,
            "machine": self.machine,
            "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        })
        self.store.append(line)
        self.on_try(line)


def agent_env() -> dict[str, str]:
    """The environment of a try: ours, this Python's folder first on PATH (the agent's
    `python -m pytest` is the interpreter clover-code runs in) and a git identity for the
    throwaway repositories' commits."""
    env = {**os.environ, **GIT_IDENTITY}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env
