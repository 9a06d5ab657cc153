"""The workspace's sessions for `/resume`'s picker: a line each, and a preview of one.

A line needs the start of a log only (its first message); a preview replays the whole log
into a conversation, as `--resume` would, so it shows what resuming continues (a rewind
included). Logs are read as untrusted input (agent/session.py): one that cannot be read
says so in its preview instead of failing the picker.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from clover_code.agent.context import Conversation
from clover_code.agent.session import SessionError, SessionLog, sessions_dir

HEAD_BYTES = 64 * 1024  # read from each log for its line
MAX_LISTED = 200
PREVIEW_MESSAGES = 12
MESSAGE_CHARS = 600


@dataclass(frozen=True)
class SessionSummary:
    id: str
    path: Path
    modified: float
    size: int
    first: str  # the first message sent, "" when none was

    def line(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(self.modified))
        first = " ".join(self.first.split()) or "(no message)"
        return f"{when}  {_size(self.size):>6}  {first}"


def list_sessions(root: Path, exclude: str | None = None) -> list[SessionSummary]:
    """The sessions of `root`, newest first, without `exclude` (the one running)."""
    try:
        folder = sessions_dir(root)
        logs = list(folder.glob("*.jsonl")) if folder.is_dir() else []
    except (OSError, SessionError):
        return []
    found = []
    for path in logs:
        try:
            info = path.lstat()
        except OSError:
            continue
        if path.stem == exclude or info.st_size == 0 or not path.is_file():
            continue
        found.append(SessionSummary(path.stem, path, info.st_mtime, info.st_size, _first_message(path)))
    found.sort(key=lambda s: (s.modified, s.id), reverse=True)
    return found[:MAX_LISTED]


def _first_message(path: Path) -> str:
    try:
        with open(path, "rb") as file:
            head = file.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return ""
    for line in head.splitlines():
        if '"UserMessage"' not in line:
            continue
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if isinstance(data, dict) and data.get("type") == "UserMessage" and isinstance(text := data.get("text"), str):
            return text
    return ""


def preview(path: Path) -> str:
    """The last messages of the session as resuming it would continue it."""
    try:
        events = SessionLog(path).events()
    except SessionError as exc:
        return f"(cannot read this session: {exc})"
    conversation = Conversation()
    for event in events:
        conversation.apply(event)
    conversation.flush()
    shown = [m for m in conversation.messages if m.get("role") in ("user", "assistant") and m.get("content")]
    lines = [f"{conversation.turn_count} messages sent · {len(events)} events"]
    if len(shown) > PREVIEW_MESSAGES:
        lines.append(f"… {len(shown) - PREVIEW_MESSAGES} earlier messages")
    for message in shown[-PREVIEW_MESSAGES:]:
        content = str(message["content"]).strip()
        if len(content) > MESSAGE_CHARS:
            content = content[:MESSAGE_CHARS] + " …"
        who = "you" if message["role"] == "user" else "model"
        lines.append(f"\n{who}: {content}")
    return "\n".join(lines)


def _size(n: int) -> str:
    if n < 1000:
        return f"{n} B"
    return f"{n / 1000:.1f} kB" if n < 1_000_000 else f"{n / 1_000_000:.1f} MB"
