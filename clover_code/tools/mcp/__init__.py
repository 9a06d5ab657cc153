"""MCP servers the user configured, as tools: each server runs in a background task of its own
(connection.py), its tools join the registry as `mcp__SERVER__TOOL` (tool.py), and one object
starts, lists and stops them all (servers.py). Servers come from the user's config only
(spec.py parses `[mcp_servers.NAME]`); the protocol is the official `mcp` SDK's.
"""
