"""How an MCP server's tool is named among clover-code's tools: `mcp__SERVER__TOOL` (the naming
Claude Code and Kimi use), and how allow rules name it: `mcp:SERVER/TOOL`, `mcp:SERVER/*`.
Light on purpose: permissions read names without loading the SDK."""

from __future__ import annotations

import re

PREFIX = "mcp__"
RULE_KIND = "mcp"
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    """`mcp__SERVER__TOOL`, in the alphabet (and length) models accept for tool names."""
    return f"{PREFIX}{server}__{_UNSAFE.sub('_', tool)}"[:64]


def split_name(name: str) -> tuple[str, str] | None:
    """(server, tool) of an `mcp__SERVER__TOOL` name; None for any other name."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX):].partition("__")
    return (server, tool) if sep and server and tool else None


def rule_subject(name: str) -> str | None:
    """What `mcp:` rules match a tool name against: `SERVER/TOOL`; None for a tool not of MCP."""
    parts = split_name(name)
    return f"{parts[0]}/{parts[1]}" if parts else None
