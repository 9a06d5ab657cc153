"""One try: the real `clover-code --task` process on a workspace, as a user's CI runs it.

The process writes `--output-format stream-json` (every event, the result object last) to a
file; its figures are read from there afterwards: tokens out and in (each request's prompt,
summed: what an API bills), forward passes, time to first block, decode speed, tool calls and
how many of them were malformed or named no tool. A try past its time limit gets SIGTERM
(the headless runner then ends cleanly with its result), then SIGKILL for its whole process
group; a try stopped by Ctrl-C is not a result at all.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from clover_code.jsonsafe import JSONObject

GRACE_S = 10.0  # after SIGTERM, before SIGKILL


class Interrupted(Exception):
    """The run was stopped (Ctrl-C) while this try ran: nothing to record."""


@dataclass
class TryFigures:
    exit_code: int | None = None
    exit_reason: str | None = None
    error: str | None = None
    timed_out: bool = False
    turns: int = 0
    requests: int = 0
    tool_calls: int = 0
    invalid_calls: int = 0  # malformed markup, or a tool or arguments the registry refused
    tool_errors: int = 0  # calls that ran and failed (a failing test run counts)
    tokens_out: int = 0
    tokens_in: int | None = None  # summed over requests; None when the engine never said (a server without usage)
    blocks: int = 0
    forward_passes: int | None = None
    tpf: float | None = None
    first_block_s: float | None = None  # mean over requests
    decode_s: float = 0.0  # summed over requests, first block's start to last block's commit
    tokens_per_s: float | None = None  # tokens out / decode_s
    seconds: float | None = None  # the task as the process timed it (model loading excluded)
    process_s: float = 0.0  # the whole process, loading included
    model: str | None = None
    context_window: int | None = None
    session_id: str | None = None

    def as_dict(self) -> JSONObject:
        return asdict(self)


class ProcessBoard:
    """The processes running now, so that Ctrl-C can end every one of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._procs: set[subprocess.Popen[bytes]] = set()
        self.stopping = threading.Event()

    def add(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.add(proc)

    def remove(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._procs.discard(proc)

    def stop_all(self) -> None:
        self.stopping.set()
        with self._lock:
            procs = list(self._procs)
        for proc in procs:
            _signal_group(proc, signal.SIGTERM)


def agent_argv(workspace: Path, engine_flags: list[str], *, max_turns: int | None, sandbox: bool,
               resume: str | None, max_tokens: int | None = None) -> list[str]:
    argv = [sys.executable, "-m", "clover_code.cli", "--task", "-", "--cwd", str(workspace),
            "--output-format", "stream-json", *engine_flags]
    if max_turns:
        argv += ["--max-turns", str(max_turns)]
    if max_tokens:
        argv += ["--max-tokens", str(max_tokens)]
    if not sandbox:
        argv.append("--no-sandbox")
    if resume:
        argv += ["--resume", resume]
    return argv


def run_try(argv: list[str], prompt: str, env: dict[str, str], events: Path, stderr: Path, timeout: float,
            board: ProcessBoard) -> TryFigures:
    """Run one try; its events go to `events`, its progress to `stderr`."""
    if board.stopping.is_set():
        raise Interrupted
    start = time.perf_counter()
    with events.open("wb") as out, stderr.open("wb") as err:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out, stderr=err, env=env,
                                start_new_session=True)
        board.add(proc)
        try:
            _send(proc, prompt)
            ended = _wait(proc, timeout, board)
        finally:
            board.remove(proc)
    if ended == "stopped":
        raise Interrupted
    timed_out = ended == "timeout"
    figures = read_events(events)
    figures.timed_out = timed_out
    figures.process_s = round(time.perf_counter() - start, 3)
    if timed_out:
        figures.exit_reason = "timeout"
        figures.error = f"stopped after the time limit of {timeout:g} s"
    return figures


def _send(proc: subprocess.Popen[bytes], prompt: str) -> None:
    try:
        assert proc.stdin is not None
        proc.stdin.write(prompt.encode("utf-8"))
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # it ended before reading: its result says why


def _wait(proc: subprocess.Popen[bytes], timeout: float, board: ProcessBoard) -> str:
    """Wait for the process: "done", "timeout" (past its limit) or "stopped" (Ctrl-C)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            proc.wait(timeout=0.2)
            return "stopped" if board.stopping.is_set() else "done"  # Ctrl-C's SIGTERM ends it early
        except subprocess.TimeoutExpired:
            pass
        stopped = board.stopping.is_set()
        if stopped or time.monotonic() >= deadline:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
            _signal_group(proc, signal.SIGKILL)  # whatever it left behind in its group
            return "stopped" if stopped else "timeout"


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def read_events(path: Path) -> TryFigures:
    """A try's figures from its stream-json lines (a torn or foreign line is skipped)."""
    f = TryFigures()
    first_blocks: list[float] = []
    started: set[str] = set()
    malformed: set[str] = set()
    passes: int | None = 0
    request_end = 0.0
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "BlockCommitted" and isinstance(event.get("block"), dict):
            block = event["block"]
            at = float(block.get("seconds_since_start") or 0.0)
            if block.get("index", 0) == 0:
                f.requests += 1
                f.decode_s += request_end
                first_blocks.append(at)
            request_end = at
            f.blocks += 1
            f.tokens_out += int(block.get("tokens") or 0)
            if isinstance(block.get("prompt_tokens"), int):
                f.tokens_in = (f.tokens_in or 0) + block["prompt_tokens"]
            if passes is not None:
                passes = None if block.get("forward_passes") is None else passes + int(block["forward_passes"])
        elif kind == "ToolCallParsed":
            f.tool_calls += 1
            if event.get("error"):
                f.invalid_calls += 1
                malformed.add(_call_id(event))
        elif kind == "ToolStarted":
            started.add(_call_id(event))
        elif kind == "ToolFinished":
            call = _call_id(event)
            if not event.get("ok"):
                f.tool_errors += 1
                if call not in started and call not in malformed:
                    f.invalid_calls += 1  # never started: an unknown tool or arguments its schema refused
        elif kind == "Result":
            _take_result(f, event)
    f.decode_s = round(f.decode_s + request_end, 4)
    f.forward_passes = passes if f.blocks else None
    f.tpf = round(f.tokens_out / passes, 3) if passes else None
    f.first_block_s = round(sum(first_blocks) / len(first_blocks), 4) if first_blocks else None
    f.tokens_per_s = round(f.tokens_out / f.decode_s, 2) if f.decode_s > 0 else None
    return f


def _call_id(event: JSONObject) -> str:
    call = event.get("call")
    return str(call.get("id")) if isinstance(call, dict) else ""


def _take_result(f: TryFigures, result: JSONObject) -> None:
    for key in ("exit_code", "exit_reason", "error", "model", "context_window", "session_id", "seconds"):
        if result.get(key) is not None:
            setattr(f, key, result[key])
    if isinstance(result.get("turns"), int):
        f.turns = result["turns"]
