"""A check command, run where the model's work is: sandboxed, with a time limit, output kept.

Checks run the model's code, so they run in the same bubblewrap sandbox as the agent's own
shell (no network, only the check's folder writable; `--no-sandbox` turns both off). Output
is cleaned the way Aider cleans test output before showing it to the model again: timings
removed (they differ run to run) and the scratch folder's path replaced by the task's name.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from clover_code.sandbox.bwrap import SHELL, command_env, confined_argv
from clover_code.sandbox.limits import CommandLimits, kill_group
from clover_code.sandbox.policy import SandboxPolicy
from clover_code.sandbox.seccomp import SocketFilter
from clover_code.tools import ToolError

OUTPUT_LIMIT = 6000  # characters of check output kept (its end: where test runners summarize)
TIMING = re.compile(r"\bin \d+(\.\d+)?s\b")


@dataclass(frozen=True)
class CheckResult:
    passed: bool
    output: str  # cleaned, the end of it: what the next try is shown
    seconds: float
    exit_code: int | None = None
    timed_out: bool = False
    reward: float | None = None  # a Harbor verifier's reward
    error: str | None = None  # the check could not run at all (no sandbox, a missing file)


@dataclass(frozen=True)
class CheckRunner:
    sandbox: bool = True
    timeout: float = 180.0
    policy: SandboxPolicy = field(default_factory=SandboxPolicy)

    def run(self, command: str, cwd: Path, *, writable: tuple[Path, ...] = (), names: dict[str, str] | None = None,
            env: dict[str, str] | None = None) -> CheckResult:
        """`bash -c command` in `cwd` (writable, with `writable`); `names`: paths to replace in the output."""
        argv = [SHELL, "-c", command]
        start = time.perf_counter()
        with SocketFilter() as socket_filter:
            try:
                if self.sandbox:
                    argv = confined_argv(argv, cwd=cwd, writable=(cwd, *writable), read_only=(), policy=self.policy,
                                         socket_filter=socket_filter)
            except ToolError as exc:
                return CheckResult(False, "", 0.0, error=f"the check cannot run sandboxed: {exc}")
            full_env = {**check_env(self.policy, self.sandbox), **(env or {})}
            raw, timed_out, code = self._execute(argv, cwd, full_env, socket_filter.pass_fds)
        seconds = time.perf_counter() - start
        text = clean(raw.decode("utf-8", "replace"), {str(cwd): ".", **(names or {})})
        if timed_out:
            text += f"\n(the check was stopped after {self.timeout:g} s)"
        return CheckResult(code == 0 and not timed_out, text, round(seconds, 3),
                           None if timed_out else code, timed_out)

    def _execute(self, argv: list[str], cwd: Path, env: dict[str, str],
                 pass_fds: tuple[int, ...]) -> tuple[bytes, bool, int]:
        """The output, whether it timed out, the exit code; sandboxed, held to the policy's limits."""
        limits = CommandLimits(self.policy.max_processes, self.policy.memory_mb) if self.sandbox else None
        try:
            proc = subprocess.Popen(limits.wrap(argv) if limits else argv, cwd=cwd, env=env, pass_fds=pass_fds,
                                    stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            if limits:
                limits.start(proc.pid)
            try:
                raw, _ = proc.communicate(timeout=self.timeout)
                timed_out = False
            except subprocess.TimeoutExpired:
                kill_group(proc.pid)
                raw, _ = proc.communicate()
                timed_out = True
        finally:
            if limits:
                limits.close()
        return raw, timed_out, proc.returncode


def check_env(policy: SandboxPolicy, sandbox: bool) -> dict[str, str]:
    """The sandboxed shell's environment, with this Python's folder first on PATH: a check's
    `python -m pytest` is the interpreter clover-code runs in, as in the agent's own shell.
    No bytecode or pytest cache is left behind in the folder checked."""
    env = command_env(policy, sandbox)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_ADDOPTS"] = (env.get("PYTEST_ADDOPTS", "") + " -p no:cacheprovider").strip()
    return env


def clean(text: str, names: dict[str, str]) -> str:
    """Timings out, scratch paths named, only the end kept when long."""
    for path, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(path, name)
    text = TIMING.sub("", text).rstrip()
    if len(text) > OUTPUT_LIMIT:
        text = "[...]\n" + text[-OUTPUT_LIMIT:].split("\n", 1)[-1]
    return text

