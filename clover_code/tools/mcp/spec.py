"""`[mcp_servers.NAME]` tables, as Codex reads them (so a user's config can be copied): a stdio
server (`command`, `args`, `env`, `cwd`) or a streamable HTTP one (`url`, `headers`,
`bearer_token_env_var`), with `enabled`, `startup_timeout_s` and `tool_timeout_s`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from clover_code.jsonsafe import JSON

STARTUP_TIMEOUT_S = 10.0
TOOL_TIMEOUT_S = 60.0
# A server's name is part of every tool name (`mcp__NAME__TOOL`), which models accept only in
# this alphabet; `__` inside it would make the tool name ambiguous.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_KEYS = frozenset({"command", "args", "env", "cwd", "url", "headers", "bearer_token_env_var", "enabled",
                   "startup_timeout_s", "tool_timeout_s"})


@dataclass(frozen=True)
class ServerSpec:
    name: str
    command: str | None = None  # stdio: the program, run as the user (not sandboxed)
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # added to the user's environment
    cwd: str | None = None  # None: the workspace
    url: str | None = None  # streamable HTTP
    headers: tuple[tuple[str, str], ...] = ()
    bearer_token_env_var: str | None = None
    enabled: bool = True
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    tool_timeout_s: float = TOOL_TIMEOUT_S

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    @property
    def shown(self) -> str:
        """What the server is, in one line: its command line or its URL."""
        return self.url or " ".join((self.command or "", *self.args))


def parse_servers(value: JSON) -> dict[str, ServerSpec]:
    """The servers a `mcp_servers` table names; ValueError saying what is wrong."""
    if not isinstance(value, dict):
        raise ValueError("it must be a table of servers: [mcp_servers.NAME]")
    return {name: _server(name, table) for name, table in value.items()}


def _server(name: str, table: JSON) -> ServerSpec:
    where = f"[mcp_servers.{name}]"
    if not _NAME.match(name) or "__" in name:
        raise ValueError(f"{where}: a server name is letters, digits, '-' and '_' (no '__'), at most 40")
    if not isinstance(table, dict):
        raise ValueError(f"{where} must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(map(ascii, unknown))}")
    command, url = table.get("command"), table.get("url")
    if (command is None) == (url is None):
        raise ValueError(f"{where}: give either command (a stdio server) or url (streamable HTTP)")
    if url is not None and not (isinstance(url, str) and re.match(r"^https?://", url)):
        raise ValueError(f"{where}: url must be an http:// or https:// URL")
    return ServerSpec(
        name=name,
        command=_text(table, "command", where),
        args=tuple(_texts(table, "args", where)),
        env=_pairs(table, "env", where),
        cwd=_text(table, "cwd", where),
        url=url,
        headers=_pairs(table, "headers", where),
        bearer_token_env_var=_text(table, "bearer_token_env_var", where),
        enabled=_flag(table, "enabled", where),
        startup_timeout_s=_seconds(table, "startup_timeout_s", STARTUP_TIMEOUT_S, where),
        tool_timeout_s=_seconds(table, "tool_timeout_s", TOOL_TIMEOUT_S, where),
    )


def _text(table: dict[str, JSON], key: str, where: str) -> str | None:
    value = table.get(key)
    if value is not None and not (isinstance(value, str) and value and "\0" not in value):
        raise ValueError(f"{where}: {key} must be a non-empty string")
    return value


def _texts(table: dict[str, JSON], key: str, where: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and "\0" not in v for v in value):
        raise ValueError(f"{where}: {key} must be a list of strings")
    return [v for v in value if isinstance(v, str)]


def _pairs(table: dict[str, JSON], key: str, where: str) -> tuple[tuple[str, str], ...]:
    value = table.get(key, {})
    if not isinstance(value, dict) or not all(isinstance(v, str) and "\0" not in v for v in value.values()):
        raise ValueError(f"{where}: {key} must be a table of strings")
    return tuple((k, v) for k, v in value.items() if isinstance(v, str))


def _flag(table: dict[str, JSON], key: str, where: str) -> bool:
    value = table.get(key, True)
    if not isinstance(value, bool):
        raise ValueError(f"{where}: {key} must be true or false")
    return value


def _seconds(table: dict[str, JSON], key: str, default: float, where: str) -> float:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where}: {key} must be a number of seconds above 0")
    return float(value)
