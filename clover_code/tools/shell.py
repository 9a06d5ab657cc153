"""run_shell: a command line in the workspace, sandboxed, time-limited, output capped.

The command starts in its own session (so its own process group); a timeout or a
cancellation kills that whole group at once, children included. Inside bubblewrap
the PID namespace also takes down anything that left the group.
"""

from __future__ import annotations

import asyncio
import codecs
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from clover_code.sandbox.bwrap import command_env, shell_argv
from clover_code.sandbox.gitlink_pins import planted_note
from clover_code.sandbox.limits import CommandLimits, kill_group, limit_note
from clover_code.sandbox.policy import SandboxPolicy
from clover_code.sandbox.seccomp import SocketFilter
from clover_code.tools import ToolContext, ToolError, ToolResult
from clover_code.tools.touches import ROOT, Touches

HEAD_BYTES = 16_000  # kept from the start of the output
TAIL_BYTES = 16_000  # kept from its end
READ_CHUNK = 65_536
DRAIN_GRACE_S = 2.0  # after the process ends, how long leftover writers may hold the pipe


class OutputCap:
    """Keeps the first HEAD and the last TAIL bytes of a stream, counting what falls between."""

    def __init__(self, head: int = HEAD_BYTES, tail: int = TAIL_BYTES):
        self.head_limit, self.tail_limit = head, tail
        self.head = bytearray()
        self.tail = bytearray()
        self.cut_bytes = 0
        self.cut_lines = 0

    def feed(self, chunk: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        over = len(self.tail) - self.tail_limit
        if over > 0:
            self.cut_bytes += over
            self.cut_lines += self.tail.count(b"\n", 0, over)
            del self.tail[:over]

    def text(self) -> str:
        head, tail = bytes(self.head), bytes(self.tail)
        if self.cut_bytes:
            head, tail = self._trim_to_lines(head, tail)
            note = f"[... {self.cut_bytes:,} bytes ({self.cut_lines:,} lines) cut from the middle ...]\n"
            head_text = head.decode(errors="replace")
            if head_text and not head_text.endswith("\n"):
                head_text += "\n"
            return head_text + note + tail.decode(errors="replace")
        return (head + tail).decode(errors="replace")

    def _trim_to_lines(self, head: bytes, tail: bytes) -> tuple[bytes, bytes]:
        """Cut at line ends, so no half line sits next to the notice."""
        end = head.rfind(b"\n")
        if end >= 0:
            self.cut_bytes += len(head) - end - 1
            head = head[: end + 1]
        start = tail.find(b"\n")
        if 0 <= start < len(tail) - 1:
            self.cut_bytes += start + 1
            self.cut_lines += 1
            tail = tail[start + 1 :]
        return head, tail


@dataclass
class Outcome:
    exit_code: int | None
    output: str
    timed_out: bool
    cut_bytes: int
    over_process_limit: bool = False
    killed_at_limit: bool = False
    memory_note: str | None = None  # the command ran into the sandbox's memory limit



async def _drain(stream: asyncio.StreamReader, cap: OutputCap, on_output: Callable[[str], None] | None) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")  # a character split across reads
    while chunk := await stream.read(READ_CHUNK):
        cap.feed(chunk)
        if on_output is not None:
            on_output(decoder.decode(chunk))


async def run_command(argv: list[str], cwd: Path, env: dict[str, str], timeout: float,
                      limits: SandboxPolicy | None = None, on_output: Callable[[str], None] | None = None,
                      pass_fds: tuple[int, ...] = ()) -> Outcome:
    """Run argv with stdout+stderr merged; kill its process group on timeout or cancellation.
    `on_output` gets the output as it is read (all of it, whatever the cap keeps).
    With `limits`, argv is a sandbox held to its processes and memory (sandbox/limits.py);
    `pass_fds` are inherited (the sandbox's seccomp filter)."""
    limit = CommandLimits(limits.max_processes, limits.memory_mb) if limits else None
    try:
        outcome = await _run(limit.wrap(argv) if limit else argv, cwd, env, timeout, limit, on_output, pass_fds)
    finally:
        if limit:
            limit.close()
    if limit and limit.hit(outcome.output):
        outcome.over_process_limit, outcome.killed_at_limit = True, limit.killed
    if limit:
        outcome.memory_note = limit.memory_note(outcome.output)
    return outcome


async def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float, limit: CommandLimits | None,
               on_output: Callable[[str], None] | None, pass_fds: tuple[int, ...]) -> Outcome:
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True, pass_fds=pass_fds,
    )
    if limit:
        limit.start(proc.pid)
    cap = OutputCap()
    assert proc.stdout is not None
    reader = asyncio.create_task(_drain(proc.stdout, cap, on_output))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
    except BaseException:  # cancelled: the user pressed Esc / the turn ended
        kill_group(proc.pid)
        reader.cancel()
        await asyncio.shield(proc.wait())
        raise
    kill_group(proc.pid)  # timeout, or background children still holding the group
    await proc.wait()
    try:
        await asyncio.wait_for(reader, DRAIN_GRACE_S)
    except TimeoutError:
        pass  # a child that left the group keeps the pipe open; stop reading it
    return Outcome(proc.returncode, cap.text(), timed_out, cap.cut_bytes)


def _status_line(outcome: Outcome, timeout: float, ctx: ToolContext) -> str:
    if outcome.killed_at_limit:
        return limit_note(ctx.policy.max_processes, killed=True)
    if outcome.timed_out:
        return f"[timed out after {timeout:g} s: the command and all its children were killed]"
    code = outcome.exit_code
    status = f"[killed by signal {-code}]" if code is not None and code < 0 else f"[exit code {code}]"
    note = outcome.memory_note
    if outcome.over_process_limit:
        note = limit_note(ctx.policy.max_processes, killed=False)
    return f"{note}\n{status}" if note else status


class RunShell:
    name = "run_shell"
    kind = "shell"

    class Args(BaseModel):
        command: str = Field(description="Shell command line, run with bash -c in the workspace.")
        cwd: str | None = Field(
            None, description="Directory to run in, relative to the workspace root (default: the root)."
        )
        timeout: float | None = Field(
            None, gt=0, description="Seconds before the command and all its children are killed; "
            "can only lower the configured limit (default 120)."
        )

    def touches(self, args: Args) -> Touches:
        """A command may read and write anywhere in the workspace, whatever its cwd."""
        return Touches(reads=(ROOT,), writes=(ROOT,), runs=args.command)

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        if not args.command.strip():
            raise ToolError("command is empty")
        workspace = ctx.workspace
        cwd = workspace.resolve(args.cwd) if args.cwd else workspace.root
        if not cwd.is_dir():
            raise ToolError(f"cwd {args.cwd!r} is not a directory in the workspace")
        limit = min(args.timeout or ctx.shell_timeout, ctx.shell_timeout)
        nested = await asyncio.to_thread(ctx.git.nested_pins) if ctx.git is not None and ctx.sandbox else None
        with SocketFilter() as socket_filter:
            argv = shell_argv(workspace.root, cwd, args.command, ctx.sandbox, ctx.policy, socket_filter, nested)
            if ctx.checkpoints is not None:  # shell commands change files too: keep undo possible
                try:
                    await asyncio.to_thread(ctx.checkpoints.ensure)
                except ToolError as exc:
                    raise ToolError(f"{exc}; the command was not run, as it could not be undone") from None
            try:
                outcome = await run_command(argv, cwd, command_env(ctx.policy, ctx.sandbox), limit,
                                            ctx.policy if ctx.sandbox else None, ctx.on_output,
                                            socket_filter.pass_fds)
            finally:  # the sandbox is gone by now (its PID namespace ends with it), cancelled or not
                made = nested.planted() if nested is not None else []
        status = _status_line(outcome, limit, ctx)
        if made:
            status = f"[{planted_note(made, workspace.root)}]\n{status}"
        body = outcome.output if outcome.output.strip() else "(no output)\n"
        text = body if body.endswith("\n") else body + "\n"
        data = {"exit_code": outcome.exit_code, "timed_out": outcome.timed_out,
                "sandboxed": ctx.sandbox, "cut_bytes": outcome.cut_bytes,
                "over_process_limit": outcome.over_process_limit}
        ok = outcome.exit_code == 0 and not outcome.timed_out and not outcome.killed_at_limit and not made
        return ToolResult(ok, text + status, data)


TOOLS = [RunShell()]
