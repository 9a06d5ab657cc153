"""The TUI with a user's MCP server (the SDK-built test server over stdio): the screen is up
while the server starts, the status bar says so until it is ready, `/mcp` lists it and its
tools, and a model's call of one of them runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from clover_code.engine.scripted import ScriptedEngine
from clover_code.settings import Settings
from clover_code.ui.tui.app import make_app
from clover_code.wiring.assemble import build_agent
from tests.support.tui import call, idle, notes, ready, send, wait_for

ROOT = Path(__file__).resolve().parents[2]


def mcp_app(repo: Path, replies: list, servers: dict):
    settings = Settings(engine="scripted", approval="ask", sandbox=False, mcp_servers=servers)

    def factory(approver, resume_id):
        return build_agent(settings, repo, approver, resume=resume_id, engine=ScriptedEngine(list(replies)))

    return make_app(settings, repo, agent_factory=factory)


async def test_servers_start_behind_the_screen_and_mcp_lists_them(repo, tmp_path):
    servers = {"kit": {"command": sys.executable, "args": ["-m", "tests.support.mcp_server", "stdio"],
                       "cwd": str(ROOT), "env": {"RECORD_FILE": str(tmp_path / "r.txt")}}}
    app = mcp_app(repo, [call("mcp__kit__lookup", word="pilot"), "found it"], servers)
    async with app.run_test(size=(110, 30)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: app.status.query_one("StatusLine").info.mcp.startswith("MCP starting: kit"))
        await wait_for(pilot, lambda: not app.status.query_one("StatusLine").info.mcp, timeout=30)
        await send(pilot, "/mcp")
        await wait_for(pilot, lambda: "kit  ready  stdio" in notes(app))
        assert "lookup, record" in notes(app)
        await send(pilot, "look it up")
        await idle(pilot, timeout=30)
        assert "pilot: a word the glossary knows" in str(app.agent.conversation.request_messages())


async def test_no_servers_says_where_they_come_from(repo):
    app = mcp_app(repo, ["hi"], {})
    async with app.run_test(size=(110, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "/mcp")
        await wait_for(pilot, lambda: "No MCP servers" in notes(app))


def project_file(repo: Path, marker: Path) -> None:
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"repo-kit": {
        "type": "stdio", "command": sys.executable, "args": ["-m", "tests.support.mcp_server", "stdio"],
        "cwd": str(ROOT), "env": {"START_MARKER": str(marker)}}}}))


async def test_a_repositorys_mcp_json_is_offered_once_and_remembered(repo, tmp_path):
    marker = tmp_path / "outside" / "started.txt"
    marker.parent.mkdir()
    project_file(repo, marker)
    app = mcp_app(repo, ["hi"], {})
    async with app.run_test(size=(110, 30)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "This repository asks to start these MCP servers" in notes(app))
        assert "repo-kit: " + sys.executable in notes(app)
        assert not app.agent.extensions.mcp.specs and not marker.exists()  # asked, not started
        await send(pilot, "/mcp allow")
        await wait_for(pilot, marker.exists, timeout=30)
        await wait_for(pilot, lambda: not app.status.query_one("StatusLine").info.mcp, timeout=30)
        await send(pilot, "/mcp")
        await wait_for(pilot, lambda: "repo-kit  ready" in notes(app))

    marker.unlink()
    app = mcp_app(repo, ["hi"], {})  # the same file again: the answer stands, nothing is asked
    async with app.run_test(size=(110, 30)) as pilot:
        await ready(pilot)
        await wait_for(pilot, marker.exists, timeout=30)
        assert "asks to start" not in notes(app)

    marker.unlink()
    project_file(repo, marker)
    (repo / ".mcp.json").write_text((repo / ".mcp.json").read_text().replace("stdio\"]", "stdio\", \"x\"]"))
    app = mcp_app(repo, ["hi"], {})  # a changed file is asked about again; denied, it never starts
    async with app.run_test(size=(110, 30)) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "asks to start" in notes(app))
        await send(pilot, "/mcp deny")
        await wait_for(pilot, lambda: "stay off" in notes(app))
        await send(pilot, "/mcp")
        await wait_for(pilot, lambda: "No MCP servers" in notes(app))  # none to start
    assert not marker.exists()
