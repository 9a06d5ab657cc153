"""A repository's `.mcp.json` (the file Claude Code and others read) is a request, never a
setting: the TUI shows its command lines and asks, once per folder and per content of the file
(a changed file asks again), and the answer is kept in the user's state folder, where nothing
in the workspace can write it. Headless runs never read the file."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from clover_code import jsonsafe
from clover_code.jsonsafe import JSONObject
from clover_code.sandbox.own_dirs import state_dir
from clover_code.tools.mcp.spec import ServerSpec, parse_servers

FILE = ".mcp.json"
MAX_BYTES = 64 * 1024


@dataclass(frozen=True)
class ProjectServers:
    folder: str
    digest: str  # of the file's bytes: what the user answered about
    specs: dict[str, ServerSpec]

    def command_lines(self) -> list[str]:
        return [f"{name}: {spec.shown}" for name, spec in self.specs.items()]


def read_project_servers(folder: Path) -> ProjectServers | None:
    """The servers `folder/.mcp.json` asks for; None without the file; ValueError for a file that
    is not a valid one (a link, too big, not JSON, a server this client cannot read)."""
    try:
        fd = os.open(folder / FILE, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ValueError(f"{FILE}: cannot read it ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"{FILE}: over {MAX_BYTES // 1024} KiB")
    try:
        value = jsonsafe.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{FILE}: not JSON ({exc})") from None
    servers = value.get("mcpServers") if isinstance(value, dict) else None
    if not isinstance(servers, dict):
        raise ValueError(f"{FILE}: no \"mcpServers\" object")
    # Claude Code's entries carry a "type" (stdio, http, sse) that the command or url already says.
    tables = {name: {k: v for k, v in entry.items() if k != "type"} if isinstance(entry, dict) else entry
              for name, entry in servers.items()}
    return ProjectServers(str(folder.resolve()), hashlib.sha256(data).hexdigest(), parse_servers(tables))


def _decisions_path() -> Path:
    return state_dir() / "mcp-project-servers.json"


def _decisions() -> JSONObject:
    try:
        value = jsonsafe.loads(_decisions_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def decision(project: ProjectServers) -> bool | None:
    """The user's answer about this folder's file as it is now; None when never asked."""
    answer = _decisions().get(project.folder)
    if isinstance(answer, dict) and answer.get("digest") == project.digest:
        allowed = answer.get("allowed")
        return allowed if isinstance(allowed, bool) else None
    return None


def remember(project: ProjectServers, allowed: bool) -> None:
    decisions = _decisions()
    decisions[project.folder] = {"digest": project.digest, "allowed": allowed}
    path = _decisions_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(decisions, indent=1), encoding="utf-8")
    tmp.replace(path)
