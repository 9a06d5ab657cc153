"""Attack: tool calls and session logs built to break the run: JSON nested 10,000 deep (a
RecursionError in Python's json module), lone surrogates (`"\\ud800"`, valid JSON, not
encodable as UTF-8), hostile logs handed to --resume. The real `clover-code --task`
process runs a scripted model on a temp repo; each must end as a tool error the model
reads, with every event in the log, and no log may hang or crash --resume."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from clover_code.agent.events import ErrorEvent, TurnFinished
from clover_code.agent.permissions import ModeApprover
from clover_code.engine import EngineError
from clover_code.engine.markup.toolcalls import ToolCallParser
from clover_code.engine.scripted import ScriptedEngine
from clover_code.engine.wire.chunk_fold import chunk_json_object
from clover_code.settings import Settings
from clover_code.tools import default_registry
from clover_code.wiring.assemble import build_agent

DEEP = 10_000
DEEP_ARGS = '{"path": "README.md", "x": ' + "[" * DEEP + "]" * DEEP + "}"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tmp_path / "xdg"), "CLOVER_APPROVAL": "full-auto"}


def script(path: Path, *replies: object) -> str:
    path.write_text("".join(json.dumps({"content": r} if isinstance(r, str) else r) + "\n" for r in replies))
    return f"scripted:{path}"


def markup(body: str) -> str:
    return f"Let me look.\n<tool_call>\n{body}\n</tool_call>"


def log_lines(repo: Path) -> list[dict]:
    """Every event of every session log, each line parsed (a line that does not is a failure)."""
    logs = sorted((repo / ".clover" / "sessions").glob("*.jsonl"))
    assert logs
    return [json.loads(line) for log in logs for line in log.read_text(encoding="utf-8").splitlines()]


def run_json(cli, repo: Path, engine: str, env: dict, *extra: str, timeout: float = 30):
    proc = cli("--task", "look", "--cwd", str(repo), "--engine", engine, "--output-format", "json",
               *extra, env=env, timeout=timeout)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc, json.loads(proc.stdout.strip().splitlines()[-1])


def tool_results(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "ToolFinished"]


def test_a_call_nested_10000_deep_in_markup_ends_the_reply_as_degenerate(git_repo, tmp_path, cli, env):
    """20,000 brackets written as text are a reply gone round in circles: cut, not parsed."""
    reply = markup('{"name": "read_file", "arguments": ' + DEEP_ARGS + "}")
    proc, result = run_json(cli, git_repo, script(tmp_path / "r.jsonl", reply, "unused"), env)
    assert result["exit_reason"] == "gave_up", proc.stderr[-2000:]
    assert "degenerated" in proc.stderr
    assert [e["type"] for e in log_lines(git_repo)][-1] == "TurnFinished"


@pytest.mark.parametrize("case", ["markup", "string arguments", "server tool_calls"])
def test_a_call_nested_10000_deep_is_a_tool_error_the_model_reads(case, git_repo, tmp_path, cli, env):
    if case == "markup":  # deeper than the parser allows, too short to read as degenerate
        reply: object = markup('{"name": "read_file", "arguments": {"path": "README.md", "x": '
                               + "[" * 150 + "]" * 150 + "}}")
    elif case == "string arguments":  # arguments encoded twice, as some models write them
        reply = markup(json.dumps({"name": "read_file", "arguments": DEEP_ARGS}))
    else:  # an OpenAI-compatible server parsed the call and hands it over as a string
        reply = {"content": "Let me look.", "tool_calls": [{"name": "read_file", "arguments": DEEP_ARGS}]}
    engine = script(tmp_path / "r.jsonl", reply, "Could not read it.")
    proc, result = run_json(cli, git_repo, engine, env)
    assert proc.returncode == 0 and result["exit_reason"] == "done", proc.stderr[-2000:]
    assert result["tool_calls"] == 1 and result["tool_errors"] == 1
    events = log_lines(git_repo)
    [finished] = tool_results(events)
    assert not finished["ok"] and "nested deeper than" in finished["output"]
    assert [e["type"] for e in events][-1] == "TurnFinished"
    # What the model reads next: the error, as the tool result of its call.
    resumed, _ = run_json(cli, git_repo, script(tmp_path / "r2.jsonl", "ok"), env, "--resume", timeout=20)
    assert resumed.returncode == 0, resumed.stderr[-2000:]


@pytest.mark.parametrize("where", ["markup", "server tool_calls"])
def test_a_lone_surrogate_in_arguments_is_a_tool_error_and_the_call_is_logged(where, git_repo, tmp_path, cli, env):
    arguments = '{"path": "README\\ud800.md"}'  # a JSON escape: valid JSON, not valid Unicode
    reply: object = (markup('{"name": "read_file", "arguments": ' + arguments + "}") if where == "markup" else
                     {"content": "Reading.", "tool_calls": [{"name": "read_file", "arguments": arguments}]})
    engine = script(tmp_path / "r.jsonl", reply, "Done.")
    proc, result = run_json(cli, git_repo, engine, env)
    assert proc.returncode == 0 and result["tool_errors"] == 1, proc.stderr[-2000:]
    events = log_lines(git_repo)
    parsed = [e for e in events if e["type"] == "ToolCallParsed"]
    assert len(parsed) == 1 and parsed[0]["call"]["name"] == "read_file"
    [finished] = tool_results(events)
    assert "lone surrogate" in finished["output"] and "\\ud800" in finished["output"]


def test_lone_surrogates_and_controls_in_model_text_reach_the_log_intact(git_repo, tmp_path, cli, env):
    """Model text with a lone surrogate cannot be written as UTF-8 as it is; the log keeps it
    as a JSON escape, which reads back to the same text."""
    text = "odd \ud800 text \x1b[2J \x9b done"
    engine = script(tmp_path / "r.jsonl", text)
    proc, result = run_json(cli, git_repo, engine, env)
    assert proc.returncode == 0 and result["result"] == text
    [log] = (git_repo / ".clover" / "sessions").glob("*.jsonl")
    raw = log.read_bytes()
    assert b"\\ud800" in raw and b"\x1b" not in raw and b"\xc2\x9b" not in raw
    blocks = "".join(e["block"]["text"] for e in log_lines(git_repo) if e["type"] == "BlockCommitted")
    assert blocks == text


def write_log(repo: Path, lines: list[str]) -> Path:
    folder = repo / ".clover" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "20260101-000000-abcdef.jsonl"
    log.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return log


START = json.dumps({"type": "UserMessage", "text": "hi"})
END = json.dumps({"type": "TurnFinished", "reason": "done", "text": "ok", "stats": {}})


def test_resume_of_a_log_holding_a_deep_call_does_not_hang(git_repo, tmp_path, cli, env):
    """The log as the run above wrote it before the fix: the reply's text holds the deep markup;
    replaying it parses that text again."""
    block = {"text": markup('{"name": "read_file", "arguments": ' + DEEP_ARGS + "}"), "tokens": 9,
             "forward_passes": 1, "seconds_since_start": 0.0, "index": 0, "finish": "stop"}
    write_log(git_repo, [START, json.dumps({"type": "BlockCommitted", "block": block}), END])
    proc, result = run_json(cli, git_repo, script(tmp_path / "r.jsonl", "resumed"), env, "--resume", timeout=20)
    assert proc.returncode == 0 and result["result"] == "resumed", proc.stderr[-2000:]


HOSTILE = {
    "nested 10,000 deep": json.dumps({"type": "Notice", "text": "x"})[:-1] + ', "x": ' + "[" * DEEP + "]" * DEEP + "}",
    "not JSON": "{this is not json",
    "unknown event": json.dumps({"type": "GrantEverything", "rule": "shell:**"}),
    "wrong field type": json.dumps({"type": "UserMessage", "text": {"nested": ["object"]}}),
    "not an object": json.dumps([1, 2, 3]),
    "missing field": json.dumps({"type": "ToolFinished", "ok": True}),
}


@pytest.mark.parametrize("case", HOSTILE)
def test_resume_of_a_hostile_log_is_a_clear_usage_error(case, git_repo, tmp_path, cli, env):
    log = write_log(git_repo, [START, HOSTILE[case], END])
    proc, result = run_json(cli, git_repo, script(tmp_path / "r.jsonl", "never"), env, "--resume", timeout=20)
    assert proc.returncode == 2 and result["exit_reason"] == "bad_input", proc.stderr[-2000:]
    assert f"{log}:2: not a session event" in result["error"]


@pytest.mark.parametrize("kind", ["fifo", "symlink out of the workspace"])
def test_resume_never_blocks_on_or_writes_through_a_planted_log(kind, git_repo, tmp_path, cli, env):
    """The shell can plant a FIFO (reading it would block forever) or a symlink to a file
    outside (appending to it would write the host's file) where --resume looks."""
    folder = git_repo / ".clover" / "sessions"
    folder.mkdir(parents=True)
    planted = folder / "29990101-000000-ffffff.jsonl"
    outside = tmp_path / "outside.txt"
    if kind == "fifo":
        os.mkfifo(planted)
    else:
        outside.write_text("")
        planted.symlink_to(outside)
    proc, result = run_json(cli, git_repo, script(tmp_path / "r.jsonl", "never"), env, "--resume", timeout=20)
    assert proc.returncode == 2 and "not a regular file" in result["error"], proc.stderr[-2000:]
    if kind != "fifo":
        assert outside.read_text() == ""


def test_parsers_refuse_deep_json_without_recursing():
    """The same guard where arguments are parsed outside the markup: Qwen3-Coder parameters
    and the registry's validation of a string."""
    deep = "[" * DEEP + "]" * DEEP
    xml = f"<tool_call><function=read_file><parameter=path>{deep}</parameter></function></tool_call>"
    _, [call] = ToolCallParser().feed(xml)
    assert call.call is not None and call.call.name == "read_file"  # kept as text, never decoded
    message = default_registry().validate("read_file", '{"path": ' + deep + "}")
    assert isinstance(message, str) and "nested deeper than" in message


def test_a_server_streaming_deep_json_is_an_engine_error():
    with pytest.raises(EngineError, match="invalid JSON"):
        chunk_json_object(("[" * DEEP + "]" * DEEP).encode(), "http://server/v1")


class FullDisk:
    """A session log whose writes fail (disk full) from the Nth event on."""

    def __init__(self, after: int):
        self.left = after

    def append(self, event) -> None:
        self.left -= 1
        if self.left < 0:
            raise OSError(28, "No space left on device")

    def close(self) -> None:
        pass


async def test_a_log_that_cannot_be_written_ends_the_turn_instead_of_hanging(git_repo):
    engine = ScriptedEngine(["one two three four five six seven eight nine ten"], block_size=2)
    agent = build_agent(Settings(engine="scripted"), git_repo, ModeApprover(), engine=engine)
    agent.session = FullDisk(after=3)
    events = await asyncio.wait_for(_collect(agent.run("go")), timeout=10)
    assert isinstance(events[-1], TurnFinished) and events[-1].reason == "error"
    assert any(isinstance(e, ErrorEvent) and "No space left" in e.message for e in events)


async def _collect(stream) -> list:
    return [event async for event in stream]
