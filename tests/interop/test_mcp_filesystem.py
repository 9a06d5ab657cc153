"""The MCP client against a real third-party server: `@modelcontextprotocol/server-filesystem`
(npm, pinned), started over stdio as a user's config would, driven by a scripted model through
the real loop. Set up and run with tools/interop_mcp.sh; skipped only where there is no node."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from clover_code.agent.events import ApprovalNeeded, ToolFinished
from clover_code.agent.loop import Agent, AgentSettings
from clover_code.agent.permissions import Permissions
from clover_code.engine.scripted import ScriptedEngine
from clover_code.tools import ToolContext, default_registry
from clover_code.tools.mcp.servers import McpServers
from clover_code.tools.mcp.spec import parse_servers
from clover_code.tools.workspace import Workspace
from tests.support.agent import RecordingApprover, call, collect

pytestmark = [pytest.mark.interop, pytest.mark.skipif(shutil.which("node") is None, reason="no node here")]

PACKAGE = "@modelcontextprotocol/server-filesystem@2026.8.31"
PREFIX = Path(os.environ.get("CLOVER_INTEROP_MCP", Path.home() / ".cache" / "clover-code" / "interop-mcp"))


@pytest.fixture(scope="module")
def server_bin() -> Path:
    binary = PREFIX / "node_modules" / ".bin" / "mcp-server-filesystem"
    if not binary.exists():  # tools/interop_mcp.sh installs it; so does this, once
        subprocess.run(["npm", "install", "--prefix", str(PREFIX), PACKAGE], check=True, timeout=600,
                       capture_output=True)
    return binary


async def test_filesystem_server_read_and_write_through_the_loop(git_repo, server_bin):
    (git_repo / "notes.md").write_text("the answer is 42\n")
    approver = RecordingApprover("yes")
    replies = [call("mcp__fs__read_text_file", path=str(git_repo / "notes.md")),
               call("mcp__fs__write_file", path=str(git_repo / "out.md"), content="written by fs\n"), "done"]
    servers = McpServers(parse_servers({"fs": {"command": str(server_bin), "args": [str(git_repo)]}}), git_repo)
    agent = Agent(ScriptedEngine(replies), default_registry(), ToolContext(Workspace(git_repo)), approver,
                  AgentSettings(approval="ask"), system_prompt="You are a test agent.",
                  permissions=Permissions("ask"), mcp=servers)
    try:
        events = await collect(agent, "read the notes and write a file")
    finally:
        await agent.aclose()
    read, write = [e for e in events if isinstance(e, ToolFinished)]
    assert read.ok and "the answer is 42" in read.output
    assert "the answer is 42" in json.dumps(agent.engine.requests[1].messages)
    # readOnlyHint on read_text_file: no question; write_file is not read-only: asked, then ran
    assert [e.call.name for e in events if isinstance(e, ApprovalNeeded)] == ["mcp__fs__write_file"]
    assert write.ok and (git_repo / "out.md").read_text() == "written by fs\n"
