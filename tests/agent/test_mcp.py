"""MCP servers built with the `mcp` SDK (tests/support/mcp_server.py), over stdio and over
streamable HTTP on 127.0.0.1: their tools listed and called from a model's reply (a scripted
engine), the results in the next request, permissions applied, a server that dies mid-session."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from clover_code.agent.events import ApprovalNeeded, Notice, ToolFinished, TurnFinished
from clover_code.tools.mcp.servers import McpServers
from clover_code.tools.mcp.spec import parse_servers
from tests.support.agent import RecordingApprover, call, collect

ROOT = Path(__file__).resolve().parents[2]
SERVER = [sys.executable, "-m", "tests.support.mcp_server"]


def stdio_servers(record: Path, **extra) -> McpServers:
    table = {"kit": {"command": SERVER[0], "args": [*SERVER[1:], "stdio"], "cwd": str(ROOT),
                     "env": {"RECORD_FILE": str(record)}, **extra}}
    return McpServers(parse_servers(table), ROOT)


@pytest.fixture
def http_server(tmp_path):
    """The same server over streamable HTTP, on a free port of 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    record = tmp_path / "http-record.txt"
    proc = subprocess.Popen([*SERVER, "http", str(port)], cwd=ROOT, env={"RECORD_FILE": str(record), "PATH": ""},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while True:  # up when it accepts connections
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            assert proc.poll() is None and time.monotonic() < deadline, "the HTTP MCP server did not start"
            time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp", record
    proc.kill()
    proc.wait()


def last_tool_message(request) -> str:
    return [m for m in request.messages if m.get("role") == "tool"][-1]["content"]


async def test_stdio_tools_listed_called_and_read_by_the_model(make_agent, tmp_path):
    record = tmp_path / "record.txt"
    agent = make_agent([call("mcp__kit__lookup", word="clover"), call("mcp__kit__record", line="hello"), "done"],
                       approval="full-auto")
    agent.extensions.mcp = stdio_servers(record)
    try:
        events = await collect(agent, "use the glossary")
    finally:
        await agent.aclose()
    names = [t["function"]["name"] for t in agent.engine.requests[0].tools]
    assert {"mcp__kit__lookup", "mcp__kit__record", "read_file"} <= set(names)
    lookup = next(t for t in agent.engine.requests[0].tools if t["function"]["name"] == "mcp__kit__lookup")
    assert "glossary" in lookup["function"]["description"]
    assert lookup["function"]["parameters"]["properties"]["word"]["type"] == "string"
    assert "clover: a word the glossary knows" in last_tool_message(agent.engine.requests[1])
    assert record.read_text() == "hello\n"  # the write ran in the server's own process
    assert [e for e in events if isinstance(e, TurnFinished)][-1].reason == "done"


async def test_http_server_works_the_same(make_agent, http_server):
    url, record = http_server
    agent = make_agent([call("mcp__web__lookup", word="tree"), call("mcp__web__record", line="via http"), "done"])
    agent.extensions.mcp = McpServers(parse_servers({"web": {"url": url}}), ROOT)
    try:
        await collect(agent, "look it up")
    finally:
        await agent.aclose()
    assert "tree: a word the glossary knows" in last_tool_message(agent.engine.requests[1])
    assert record.read_text() == "via http\n"


async def test_permissions_read_only_hint_asks_and_rules(make_agent, tmp_path):
    record = tmp_path / "record.txt"
    approver = RecordingApprover("no")
    agent = make_agent([call("mcp__kit__lookup", word="a"), call("mcp__kit__record", line="asked"), "done"],
                       approval="ask", approver=approver)
    agent.extensions.mcp = stdio_servers(record)
    try:
        await collect(agent, "go")
    finally:
        await agent.aclose()
    # the read ran unasked; the write asked (as a command does), was declined and did not run
    assert [r.call.name for r in approver.asked] == ["mcp__kit__record"]
    assert approver.asked[0].always == "mcp:kit/record"
    assert not record.exists()

    for mode, rules, ran in (("ask", ["mcp:kit/*"], True), ("auto-edit", ["mcp:kit/record"], True),
                             ("read-only", ["mcp:kit/*"], False)):
        agent = make_agent([call("mcp__kit__record", line=mode), "done"], approval=mode, rules=rules,
                           approver=RecordingApprover())
        agent.extensions.mcp = stdio_servers(record)
        try:
            events = await collect(agent, "go")
        finally:
            await agent.aclose()
        finished = next(e for e in events if isinstance(e, ToolFinished))
        assert finished.ok is ran, (mode, finished.output)
        assert not [e for e in events if isinstance(e, ApprovalNeeded)]
    assert record.read_text().splitlines() == ["ask", "auto-edit"]


async def test_a_server_that_dies_says_so_once_and_its_tools_answer_why(make_agent, tmp_path):
    agent = make_agent([call("mcp__kit__crash"), call("mcp__kit__lookup", word="x"), "done",
                        call("mcp__kit__lookup", word="y"), "still here"])
    agent.extensions.mcp = stdio_servers(tmp_path / "r.txt")
    try:
        events = await collect(agent, "crash it")
        later = await collect(agent, "again")
    finally:
        await agent.aclose()
    results = [e for e in events if isinstance(e, ToolFinished)]
    assert not results[0].ok and "MCP server kit is not running" in results[0].output
    assert not results[1].ok and "is not running (failed" in results[1].output
    assert [e for e in later if isinstance(e, TurnFinished)][-1].reason == "done"  # the session goes on
    notices = [e.text for e in [*events, *later] if isinstance(e, Notice) and "MCP server kit" in e.text]
    assert len(notices) == 1  # said once, at the next turn, not per call


async def test_a_server_that_cannot_start_is_named_and_the_rest_goes_on(make_agent, tmp_path):
    agent = make_agent([call("read_file", path="README.md"), "done"])
    agent.extensions.mcp = McpServers(parse_servers({
        "broken": {"command": sys.executable, "args": ["-c", "import sys; print('no config', file=sys.stderr)"],
                   "startup_timeout_s": 20}}), ROOT)
    try:
        events = await collect(agent, "read")
    finally:
        await agent.aclose()
    notice = next(e.text for e in events if isinstance(e, Notice) and "broken" in e.text)
    assert "did not start" in notice and "no config" in notice  # its stderr says why
    assert [e for e in events if isinstance(e, TurnFinished)][-1].reason == "done"


async def test_long_output_is_cut_and_images_are_a_note(tmp_path):
    servers = stdio_servers(tmp_path / "r.txt")
    await servers.settled()
    try:
        tools = {t.name: t for t in servers.tools()}
        big = await tools["mcp__kit__big"].run(tools["mcp__kit__big"].Args.model_validate({"lines": 20000}), None)
        picture = await tools["mcp__kit__picture"].run(tools["mcp__kit__picture"].Args.model_validate({}), None)
    finally:
        await servers.stop()
    assert "cut from the middle" in big.output and len(big.output) < 40_000
    assert big.output.startswith("line 0") and big.output.rstrip().endswith("line 19999")
    assert picture.output.startswith("[image: image/png")
    assert json.dumps(servers.status())  # plain lines, for /mcp


def test_bad_server_tables_are_named():
    for table, said in (({"a__b": {"command": "x"}}, "no '__'"), ({"s": {}}, "either command"),
                        ({"s": {"command": "x", "url": "http://h"}}, "either command"),
                        ({"s": {"url": "ftp://h"}}, "http://"), ({"s": {"command": "x", "colour": 1}}, "unknown key"),
                        ({"s": {"command": "x", "tool_timeout_s": 0}}, "above 0")):
        with pytest.raises(ValueError, match=said):
            parse_servers(table)


