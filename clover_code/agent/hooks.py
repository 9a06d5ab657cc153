"""Hooks: the user's own programs run at points of a session, on Claude Code's contract so the
scripts users already have work unchanged.

Config (the user's own only; a repository's never adds one): `[[hooks.EVENT]]` with `command`,
`matcher` (a regex over tool names, MCP tools by their `mcp__` name; none or "*" = every tool) and
`timeout_s` (default 60). Claude Code's nested form (`hooks = [{type = "command", command = ...}]`
inside a matcher entry) is read too.

A hook gets one JSON object on stdin (session_id, transcript_path, cwd, hook_event_name and the
event's own fields) and runs as the user, outside the sandbox, in a process group of its own that
is killed at its timeout. Exit 0 goes on: its stdout joins the context for SessionStart and
UserPromptSubmit, and JSON on stdout is read as Claude Code reads it (`decision`/`reason`,
`hookSpecificOutput.permissionDecision`, `updatedInput`, `additionalContext`). Exit 2 blocks, with
stderr as the reason. Any other exit is an error shown to the user, and the session goes on.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from clover_code import jsonsafe
from clover_code.agent.events import HookRan
from clover_code.jsonsafe import JSON, JSONObject
from clover_code.sandbox.limits import kill_group

HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "PreCompact",
               "SessionEnd", "Notification")
CONTEXT_EVENTS = ("SessionStart", "UserPromptSubmit")  # whose plain stdout joins the context
TIMEOUT_S = 60.0
BLOCK_EXIT = 2
MAX_TEXT = 10_000  # characters kept of a hook's stdout or stderr
PermissionDecision = Literal["allow", "deny", "ask"]


@dataclass(frozen=True)
class HookSpec:
    event: str
    command: str
    matcher: re.Pattern[str] | None = None  # None: every tool
    timeout_s: float = TIMEOUT_S

    def matches(self, tool_name: str | None) -> bool:
        return self.matcher is None or tool_name is None or bool(self.matcher.fullmatch(tool_name))


@dataclass
class HookOutcome:
    """What the hooks of one event said together."""

    blocked: bool = False
    reason: str = ""  # why it was blocked (for the model or the user)
    context: list[str] = field(default_factory=list)  # text for the model
    decision: PermissionDecision | None = None  # PreToolUse: deny beats ask beats allow
    updated_input: JSONObject | None = None  # PreToolUse: the arguments to run with instead
    events: list[HookRan] = field(default_factory=list)

    def add_decision(self, decision: PermissionDecision) -> None:
        order = ("allow", "ask", "deny")
        if self.decision is None or order.index(decision) > order.index(self.decision):
            self.decision = decision


def parse_hooks(value: JSON) -> dict[str, list[HookSpec]]:
    """The hooks a `hooks` table declares, per event; ValueError saying what is wrong."""
    if not isinstance(value, dict):
        raise ValueError("it must be a table of events: [[hooks.PreToolUse]] ...")
    table: dict[str, list[HookSpec]] = {}
    for event, entries in value.items():
        if event not in HOOK_EVENTS:
            raise ValueError(f"unknown hook event {event!r}; known: {', '.join(HOOK_EVENTS)}")
        if not isinstance(entries, list):
            raise ValueError(f"hooks.{event} must be a list of tables: [[hooks.{event}]]")
        table[event] = [spec for entry in entries for spec in _entry(event, entry)]
    return table


def _entry(event: str, entry: JSON) -> list[HookSpec]:
    where = f"[[hooks.{event}]]"
    if not isinstance(entry, dict):
        raise ValueError(f"{where} entries must be tables")
    matcher = entry.get("matcher")
    if matcher is not None and not isinstance(matcher, str):
        raise ValueError(f"{where}: matcher must be a string (a regex over tool names)")
    try:
        pattern = re.compile(matcher) if matcher and matcher != "*" else None
    except re.error as exc:
        raise ValueError(f"{where}: matcher {matcher!r} is not a valid regex: {exc}") from None
    nested = entry.get("hooks")
    commands = nested if isinstance(nested, list) else [entry]  # Claude Code's form, or ours
    return [_spec(event, pattern, c, where) for c in commands]


def _spec(event: str, pattern: re.Pattern[str] | None, entry: JSON, where: str) -> HookSpec:
    if not isinstance(entry, dict):
        raise ValueError(f"{where}: each hook must be a table")
    command = entry.get("command")
    if not isinstance(command, str) or not command.strip() or "\0" in command:
        raise ValueError(f"{where}: command must be a non-empty string")
    timeout = entry.get("timeout_s", entry.get("timeout", TIMEOUT_S))
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not math.isfinite(timeout) \
            or timeout <= 0:
        raise ValueError(f"{where}: timeout_s must be a number of seconds above 0")
    return HookSpec(event, command, pattern, float(timeout))


class Hooks:
    def __init__(self, table: dict[str, list[HookSpec]], cwd: Path) -> None:
        self.table, self.cwd = table, cwd

    def __bool__(self) -> bool:
        return any(self.table.values())

    async def fire(self, event: str, payload: JSONObject, tool_name: str | None = None) -> HookOutcome:
        """Run the event's matching hooks one after another, in the order configured."""
        outcome = HookOutcome()
        for spec in self.table.get(event, ()):
            if spec.matches(tool_name):
                await self._run(spec, {**payload, "hook_event_name": event}, outcome)
        return outcome

    async def _run(self, spec: HookSpec, payload: JSONObject, outcome: HookOutcome) -> None:
        code, out, err = await _run_command(spec, payload, self.cwd)
        if code is None:
            outcome.events.append(HookRan(spec.event, spec.command, None, "timed_out",
                                          f"killed after {spec.timeout_s:g} s (timeout_s)"))
            return
        if code == BLOCK_EXIT:
            _block(spec, code, err.strip(), outcome)
            return
        if code != 0:
            outcome.events.append(HookRan(spec.event, spec.command, code, "error",
                                          err.strip()[:500] or f"exit code {code}"))
            return
        _read_output(spec, out, outcome)


def _block(spec: HookSpec, code: int, reason: str, outcome: HookOutcome) -> None:
    """A block: a Stop hook's reason is what the model goes on with, so it joins the context."""
    reason = reason or f"blocked by a {spec.event} hook"
    outcome.blocked, outcome.reason = True, reason
    context = reason if spec.event == "Stop" else ""
    outcome.events.append(HookRan(spec.event, spec.command, code, "blocked", reason, context))


def _read_output(spec: HookSpec, out: str, outcome: HookOutcome) -> None:
    """Exit 0: JSON on stdout as Claude Code reads it, else plain text (context for the events
    whose output joins it)."""
    parsed = _json_object(out)
    if parsed is None:
        context = out.strip() if spec.event in CONTEXT_EVENTS else ""
        outcome.context += [context] if context else []
        outcome.events.append(HookRan(spec.event, spec.command, 0, "ok", "", context))
        return
    specific = parsed.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    reason = str(parsed.get("reason") or specific.get("permissionDecisionReason") or "")
    decision = specific.get("permissionDecision")
    if parsed.get("decision") == "block" or decision == "deny" or parsed.get("continue") is False:
        _block(spec, 0, reason or str(parsed.get("stopReason") or ""), outcome)
        return
    if decision in ("allow", "ask"):
        outcome.add_decision(decision)
    updated = specific.get("updatedInput")
    if isinstance(updated, dict):
        outcome.updated_input = updated
    extra = specific.get("additionalContext")
    context = extra.strip() if isinstance(extra, str) else ""
    outcome.context += [context] if context else []
    said = "; ".join(filter(None, [f"permission: {decision}" if decision else "",
                                   "rewrote the input" if isinstance(updated, dict) else "", reason]))
    outcome.events.append(HookRan(spec.event, spec.command, 0, "ok", said, context))


def _json_object(text: str) -> JSONObject | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        value = jsonsafe.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


async def _run_command(spec: HookSpec, payload: JSONObject, cwd: Path) -> tuple[int | None, str, str]:
    """(exit code, stdout, stderr); exit code None when the hook was killed at its timeout.
    A command that cannot start exits 127, as the shell says."""
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(cwd)}  # the name Claude Code's hook scripts read
    proc = await asyncio.create_subprocess_shell(
        spec.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, cwd=cwd, env=env, start_new_session=True)
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8", errors="replace")
    try:
        out, err = await asyncio.wait_for(proc.communicate(data), spec.timeout_s)
    except TimeoutError:
        kill_group(proc.pid)
        await proc.wait()
        return None, "", ""
    except BaseException:
        kill_group(proc.pid)  # cancelled with the turn: the hook goes too
        raise
    code = proc.returncode if proc.returncode is not None else 1
    return code, _text(out), _text(err)


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")[:MAX_TEXT]
