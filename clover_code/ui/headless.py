"""Headless runs (`clover-code --task`): one task, no questions asked, for scripts and CI.

Progress (blocks as they commit, one line per tool call) goes to stderr, the answer to
stdout. `--output-format json` prints one result object at the end, `stream-json` one
event per line as it happens and the result object last. The exit code says how it
ended (clover_code.ui.exit_codes; the table is in the README).

Everything written passes one gate per stream: stdout lines through `Output.emit`, stderr
through `Progress.write`. There known secrets are redacted and terminal controls shown as
escapes (clover_code.ui.terminal_text); JSON is written with clover_code.jsonsafe, so a
lone surrogate or a C1 control in model text never breaks or reaches the terminal. The one
exception to the gates, a signal's last words (ui.signal_exit writes them with os.write), is
made by the same redaction and escapes (Output.interrupted_words).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from clover_code import jsonsafe
from clover_code.agent import events as ev
from clover_code.agent.redact import Redactor
from clover_code.agent.todos import checklist
from clover_code.engine import EngineInfo, ToolCall
from clover_code.engine.tally import BlockTally
from clover_code.errors import UserError
from clover_code.jsonsafe import JSONObject
from clover_code.settings import Settings
from clover_code.tools.touches import Touches
from clover_code.ui import signal_exit
from clover_code.ui.exit_codes import (
    EXIT_CODES,
    EXIT_ENGINE,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    ExitReason,
)
from clover_code.ui.launch import AgentBuilder
from clover_code.ui.terminal_text import visible

if TYPE_CHECKING:
    from clover_code.agent.loop import Agent





class UsageError(UserError):
    """The user's input is wrong (flags, task file, --cwd, config): exit 2, no traceback."""


# ---------------------------------------------------------------- input

def read_task(spec: str, stdin: TextIO) -> str:
    """The task text from `TEXT`, `@FILE` (relative to the current directory) or `-` (stdin)."""
    if spec == "-":
        text, source = _read_stdin(stdin), "stdin"
    elif spec.startswith("@") and len(spec) > 1:
        path = Path(spec[1:]).expanduser()
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            why = getattr(exc, "strerror", None) or str(exc)
            raise UsageError(f"cannot read the task file {path}: {why}") from None
        source = str(path)
    else:
        text, source = spec, "--task"
    if jsonsafe.lone_surrogate(text):  # argv bytes that were not UTF-8 arrive as lone surrogates
        raise UsageError(f"the task from {source} is not UTF-8 text")
    if not text.strip():
        raise UsageError(f"the task from {source} is empty")
    return text.strip()


def _read_stdin(stdin: TextIO) -> str:
    """stdin as UTF-8, whatever the locale says; other bytes are the user's mistake (exit 2)."""
    try:
        raw = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read()
        return raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        raise UsageError(f"the task from stdin is not UTF-8 text ({exc.reason} at byte {exc.start})") from None


# ---------------------------------------------------------------- tallies

@dataclass
class Tally:
    """What a run did, accumulated from its events."""

    started: float = field(default_factory=time.perf_counter)
    generated: BlockTally = field(default_factory=BlockTally)
    tool_calls: int = 0
    tool_errors: int = 0
    errors: list[str] = field(default_factory=list)
    engine_failed: bool = False  # a fatal error of the engine, not of clover-code itself
    finished: ev.TurnFinished | None = None

    def add(self, event: ev.Event) -> None:
        if isinstance(event, ev.BlockCommitted):
            self.generated.add(event.block)
        elif isinstance(event, ev.ToolFinished):
            self.tool_calls += 1
            self.tool_errors += not event.ok
        elif isinstance(event, ev.ErrorEvent):
            self.errors.append(event.message)
            self.engine_failed |= event.fatal and event.source == "engine"
        elif isinstance(event, ev.TurnFinished):
            self.finished = event

    def result(self, exit_code: int, reason: ExitReason, extra: JSONObject) -> JSONObject:
        seconds = time.perf_counter() - self.started
        stats = self.finished.stats if self.finished else {}
        generated = self.generated
        tpf = generated.tokens_per_pass
        return {
            "result": self.finished.text if self.finished else "",
            "exit_reason": reason,
            "exit_code": exit_code,
            "is_error": exit_code != EXIT_OK,
            "error": self.errors[-1] if self.errors else None,
            "turns": stats.get("turns", generated.requests),
            "tool_calls": self.tool_calls,
            "tool_errors": self.tool_errors,
            "tokens": generated.tokens,
            "prompt_tokens": generated.prompt_tokens,
            "blocks": generated.blocks,
            "forward_passes": generated.forward_passes if generated.blocks else None,
            "tpf": round(tpf, 3) if tpf else None,
            "tokens_per_s": round(generated.tokens / seconds, 2) if seconds > 0 else None,
            "seconds": round(seconds, 3),
            **extra,
        }


# ---------------------------------------------------------------- progress on stderr

def call_summary(call: ToolCall, touches: Touches | None, width: int = 80) -> str:
    """`read_file numkit/stats.py`: the tool and what its tool says the call touches."""
    detail = " ".join((touches.summary if touches is not None else "").split())
    if len(detail) > width:
        detail = detail[: width - 1] + "…"
    return f"{call.name} {detail}".rstrip()


def failure_reason(event: ev.ToolFinished) -> str:
    """One line on why a tool failed: a command's exit status, else the start of the message."""
    if event.data.get("timed_out"):
        return "timed out"
    if event.data.get("exit_code") is not None:
        return f"exit code {event.data['exit_code']}"
    return (event.output.strip().splitlines() or [""])[0][:120]


class Progress:
    """Human-readable progress: the model's visible text as it commits, one line per tool."""

    def __init__(self, err: TextIO, show_text: bool = True, redactor: Redactor | None = None):
        self.err = err
        self.show_text = show_text
        self.redactor = redactor or Redactor()
        self.line_start = True
        self.touches: dict[str, Touches] = {}  # per call id, as its ToolCallParsed or ToolStarted says

    def write(self, text: str) -> None:
        """The one way to stderr: secrets redacted, terminal controls shown, never raw."""
        if text:
            self.err.write(visible(self.redactor.text(text)))
            self.err.flush()
            self.line_start = text.endswith("\n")

    def line(self, text: str) -> None:
        self.write(("" if self.line_start else "\n") + text + "\n")

    def line_text(self, text: str) -> str:
        """What `line(text)` would write, for a writer that cannot use the stream (signal_exit)."""
        return visible(self.redactor.text(("" if self.line_start else "\n") + text + "\n"))

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.TextDelta):
            if self.show_text:
                self.write(event.text)
        elif isinstance(event, (ev.ToolCallParsed, ev.ToolStarted)) and event.touches is not None:
            self.touches[event.call.id] = event.touches
        elif isinstance(event, ev.ToolFinished):
            mark = "✓" if event.ok else "✗"
            why = "" if event.ok else ": " + failure_reason(event)
            what = call_summary(event.call, self.touches.pop(event.call.id, None))
            self.line(f"  {mark} {what} ({event.seconds * 1000:.0f} ms){why}")
        elif isinstance(event, ev.ApprovalAnswered) and event.answer == "no":
            what = call_summary(event.call, self.touches.get(event.call.id))
            self.line(f"  - declined {what} (no one to ask; see --approval)")
        elif isinstance(event, ev.TodosChanged):
            self.line("\n".join([f"  todo ({event.done}/{len(event.items)} done):",
                                  *(f"    {line}" for line in checklist(event))]))
        elif isinstance(event, ev.Compacted):
            self.line(f"  · context compacted: {event.tokens_before} -> {event.tokens_after} tokens")
        elif isinstance(event, ev.Notice):
            self.line(f"note: {event.text}")
        elif isinstance(event, ev.HookRan) and event.outcome != "ok":
            self.line(f"  hook {event.event} {event.outcome.replace('_', ' ')}: {event.message}")
        elif isinstance(event, ev.ErrorEvent):
            self.line(f"error: {event.message}")

    def summary(self, result: JSONObject) -> None:
        passes = result["forward_passes"]
        speed = f", {passes} forward passes (TPF {result['tpf']})" if passes else ""
        self.line(f"[{result['exit_reason']}] {result['seconds']:.1f} s: {result['turns']} turns, "
                  f"{result['tool_calls']} tool calls, {result['tokens']} tokens in "
                  f"{result['blocks']} blocks{speed}")


# ---------------------------------------------------------------- the run

class Output:
    """Where a run's events and result go, by --output-format."""

    def __init__(self, fmt: str, out: TextIO, err: TextIO, redactor: Redactor | None = None):
        self.fmt, self.out = fmt, out
        self.redactor = redactor or Redactor()
        self.progress = Progress(err, show_text=fmt != "stream-json", redactor=self.redactor)
        self.tally = Tally()

    def event(self, event: ev.Event) -> None:
        self.tally.add(event)
        if self.fmt == "stream-json" and not isinstance(event, ev.TRANSIENT_EVENTS):  # as the session log has them
            self.emit(self.json_line(ev.to_json(event)))
        self.progress(event)

    def json_line(self, value: JSONObject) -> str:
        return jsonsafe.dumps_line(self.redactor.value(value))

    def emit(self, line: str) -> None:
        """One line on stdout, shown safely; a reader that went away (`| head`) ends output,
        not the run."""
        try:
            self.out.write(visible(line) + "\n")
            self.out.flush()
        except BrokenPipeError:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.out.fileno())  # so the interpreter's final flush stays quiet
            os.close(devnull)

    def finish(self, exit_code: int, reason: ExitReason, extra: JSONObject) -> int:
        result = self.tally.result(exit_code, reason, extra)
        if self.tally.generated.blocks or self.tally.finished:
            self.progress.summary(result)
        line = self._result_line(result)
        if line is not None:
            self.emit(line)
        return exit_code

    def interrupted_words(self, message: str, extra: JSONObject) -> tuple[str, str]:
        """What ending the run now as interrupted writes, `message` on stderr and the result
        on stdout, as text for signal_exit to write with os.write: the frame a signal handler
        interrupts may be in the middle of writing to these very streams."""
        self.tally.errors.append(message)
        line = self._result_line(self.tally.result(EXIT_INTERRUPTED, "cancelled", extra))
        return self.progress.line_text(f"clover-code: {message}"), "" if line is None else visible(line) + "\n"

    def _result_line(self, result: JSONObject) -> str | None:
        """The result as the output format writes it on stdout; None when it writes nothing."""
        if self.fmt == "json":
            return self.json_line(result)
        if self.fmt == "stream-json":
            return self.json_line({"type": "Result", **result})
        answer = result["result"]
        if not isinstance(answer, str) or not answer or _same_terminal(self.out, self.progress.err):
            return None
        return self.redactor.text(answer.rstrip("\n"))


def _same_terminal(a: TextIO, b: TextIO) -> bool:
    """Both streams on one terminal: the answer was already streamed there, do not repeat it."""
    try:
        sa, sb = os.fstat(a.fileno()), os.fstat(b.fileno())
        return a.isatty() and b.isatty() and (sa.st_dev, sa.st_ino, sa.st_rdev) == (
            sb.st_dev, sb.st_ino, sb.st_rdev)
    except (OSError, ValueError, AttributeError):
        return False


def exit_for(tally: Tally, interrupted: bool) -> tuple[int, ExitReason]:
    finished = tally.finished
    if interrupted:
        return EXIT_INTERRUPTED, "cancelled"
    if finished is None:
        return EXIT_FAILED, "error"
    if finished.reason == "error" and tally.engine_failed:
        return EXIT_ENGINE, "engine_error"
    return EXIT_CODES[finished.reason], finished.reason  # every way a turn ends is a way a run ends


async def drive(agent: Agent, task: str, output: Output) -> tuple[int, ExitReason]:
    """Run one task to its end; SIGINT/SIGTERM cancel it cleanly, so the session log ends with
    the cancelled turn; a second one ends the process at once (signal_exit)."""
    loop = asyncio.get_running_loop()
    me = asyncio.current_task()
    assert me is not None  # called from a coroutine: there is a task
    interrupted = False

    def on_signal() -> None:
        nonlocal interrupted
        interrupted = True
        for sig in signal_exit.SIGNALS:
            loop.remove_signal_handler(sig)
        signal_exit.catch_signals()  # asyncio put back the default actions
        me.cancel()

    for sig in signal_exit.SIGNALS:
        loop.add_signal_handler(sig, on_signal)
    events = agent.run(task)
    try:
        async for event in events:
            output.event(event)
    except asyncio.CancelledError:
        if not interrupted:
            raise
        me.uncancel()
    finally:
        await events.aclose()
        for sig in signal_exit.SIGNALS:
            loop.remove_signal_handler(sig)
        signal_exit.catch_signals()
        # Interrupted, the process ends now: no waiting for an engine to wind down.
        await agent.aclose(engine=not interrupted)
    return exit_for(output.tally, interrupted)


def _fail(output: Output, code: int, reason: ExitReason, message: str, extra: JSONObject) -> int:
    output.progress.line(f"clover-code: {message}")
    output.tally.errors.append(message)
    return output.finish(code, reason, extra)


# Result fields before a run has them.
NO_RUN = {"session_id": None, "engine": None, "model": None, "context_window": None, "context_window_source": None,
          "policy": None}


def early_exit(fmt: str, code: int, reason: ExitReason, message: str) -> int:
    """The end of a run that never got to start (flags argparse rejects, an interrupt
    during start-up): the message, and the result object the output format promises."""
    return _fail(Output(fmt, sys.stdout, sys.stderr, Redactor.for_session()), code, reason, message, dict(NO_RUN))


WIND_DOWN_S = 0.5  # an interrupted decode stops before its next forward pass; a longer one is not waited for


def run(args: argparse.Namespace, settings: Settings, cwd: Path, build_agent: AgentBuilder) -> int:
    """One task on `cwd`; `settings` come from the flags (clover_code.wiring), `build_agent`
    assembles the agent. Ctrl-C or SIGTERM while it starts or loads the model ends the process
    at once with 130 and the result (signal_exit); during the task drive() cancels it."""
    output = Output(args.output_format, sys.stdout, sys.stderr, Redactor.for_session())
    extra: JSONObject = dict(NO_RUN)
    signal_exit.on_signal_say(lambda: output.interrupted_words("interrupted while starting", extra))
    prepared = _prepare(args, settings, cwd, build_agent, output, extra)
    return _said(prepared) if isinstance(prepared, int) else _run_task(*prepared, output, extra)


def _run_task(agent: Agent, task: str, output: Output, extra: JSONObject) -> int:
    output.tally = Tally()  # time the task, not the engine load
    signal_exit.on_signal_say(lambda: output.interrupted_words("interrupted", extra))
    code, reason = asyncio.run(drive(agent, task, output))
    extra.update(engine_facts(agent.engine.info))  # a server's window may be learned during the run
    code = _said(output.finish(code, reason, extra))
    if reason == "cancelled" and not signal_exit.threads_wound_down(WIND_DOWN_S):
        signal_exit.end_now(code)  # an interpreter shutting down under a decoding thread aborts
    return code


def _said(code: int) -> int:
    """The result is out: from now on a signal only ends the process sooner, with `code`."""
    signal_exit.on_signal_say(lambda: ("", ""), code)
    return code


def engine_facts(info: EngineInfo) -> JSONObject:
    """The model, the context window the run worked against (and where the window came from) and
    the decoding policy (None where a server does not say)."""
    return {"model": info.model, "context_window": info.context_window,
            "context_window_source": info.context_source, "policy": info.policy}


def _prepare(args: argparse.Namespace, settings: Settings, cwd: Path, build_agent: AgentBuilder, output: Output,
             extra: JSONObject) -> tuple[Agent, str] | int:
    """The agent and its task, or the exit code of a run that cannot start."""
    from clover_code.engine import EngineError

    output.redactor.add(settings.api_key)
    extra["engine"] = settings.engine_name()
    try:
        task = read_task(args.task, sys.stdin)
    except UsageError as exc:
        return _fail(output, EXIT_USAGE, "bad_input", str(exc), extra)
    for notice in settings.notices:
        output.progress.line(f"note: {notice}")
    task = _expand_command(task, cwd, output)
    try:
        agent = _build(settings, cwd, args.resume, build_agent, output)
    except UsageError as exc:
        return _fail(output, EXIT_USAGE, "bad_input", str(exc), extra)
    except EngineError as exc:
        return _fail(output, EXIT_ENGINE, "engine_error", str(exc), extra)
    extra["session_id"] = agent.session.id if agent.session is not None else None
    extra.update(engine_facts(agent.engine.info))
    return agent, task


def _expand_command(task: str, cwd: Path, output: Output) -> str:
    """A task `/name args` naming a custom command is the prompt that command makes, as typed in the TUI."""
    from clover_code.agent.custom_commands import expand_line

    expanded = expand_line(task, cwd)
    if expanded is not None:
        output.progress.line(f"clover-code: {visible(task.split()[0])} expanded (a custom command)")
        return expanded
    return task


def _build(settings: Settings, cwd: Path, resume: str | None, build_agent: AgentBuilder, output: Output) -> Agent:
    """The agent for this workspace; loading an embedded model takes a while, so say so."""
    from clover_code.agent.permissions import approver_for_mode
    from clover_code.agent.session import SessionError

    name = settings.engine_name()
    if name == "embedded":
        output.progress.line(f"clover-code: loading the embedded model "
                             f"{settings.model or '(demo checkpoint)'} ...")

    def loading(fraction: float, stage: str) -> None:
        if fraction < 1:  # "ready" gets its own line below, with the time it took
            output.progress.line(f"  · {stage}")

    t0 = time.perf_counter()
    try:
        agent = build_agent(settings, cwd, approver_for_mode(settings.approval), resume=resume, on_progress=loading)
    except SessionError as exc:  # --resume of a session that is not there or unreadable
        raise UsageError(str(exc)) from None
    if name == "embedded":
        output.progress.line(f"clover-code: model ready in {time.perf_counter() - t0:.1f} s")
    return agent
