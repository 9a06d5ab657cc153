"""Hooks on Claude Code's contract, as real programs run by the real loop (a scripted engine,
a temp git repository): they block (exit 2, JSON deny), allow, rewrite a call's input, add
context, make the model go on, and are killed at their timeout."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from clover_code.agent.events import HookRan, ToolFinished, TurnFinished
from clover_code.agent.hooks import Hooks, parse_hooks
from tests.support.agent import RecordingApprover, call, collect


def script(tmp_path: Path, name: str, body: str) -> str:
    """A hook program (Python, reading its JSON from stdin); the command line that runs it."""
    path = tmp_path / f"{name}.py"
    path.write_text("import json, os, sys\nevent = json.load(sys.stdin)\n" + body)
    return f"{sys.executable} {path}"


def with_hooks(agent, table: dict) -> None:
    agent.extensions.hooks = Hooks(parse_hooks(table), agent.ctx.workspace.root)


def requests_text(agent) -> str:
    return json.dumps([r.messages for r in agent.engine.requests])


async def test_pre_tool_use_exit_2_blocks_with_stderr_to_the_model(make_agent, git_repo, tmp_path):
    seen = tmp_path / "seen.json"
    hook = script(tmp_path, "guard", f"open({str(seen)!r}, 'w').write(json.dumps(event))\n"
                  "print('no writes to secrets/', file=sys.stderr); sys.exit(2)\n")
    agent = make_agent([call("write_file", path="secrets/a.txt", content="x"), "ok"])
    with_hooks(agent, {"PreToolUse": [{"matcher": "write_file|edit_file", "command": hook}]})
    events = await collect(agent, "write it")
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert not finished.ok and "no writes to secrets/" in finished.output
    assert not (git_repo / "secrets").exists()
    assert "no writes to secrets/" in requests_text(agent)
    payload = json.loads(seen.read_text())  # what Claude Code's hooks read
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == "write_file"
    assert payload["tool_input"]["path"] == "secrets/a.txt" and payload["cwd"] == str(git_repo)
    assert "session_id" in payload and "transcript_path" in payload
    assert [e.outcome for e in events if isinstance(e, HookRan)] == ["blocked"]


async def test_matcher_leaves_other_tools_alone(make_agent, tmp_path):
    hook = script(tmp_path, "never", "sys.exit(2)\n")
    agent = make_agent([call("read_file", path="README.md"), "ok"])
    with_hooks(agent, {"PreToolUse": [{"matcher": "run_shell", "command": hook}]})
    events = await collect(agent, "read")
    assert next(e for e in events if isinstance(e, ToolFinished)).ok
    assert not [e for e in events if isinstance(e, HookRan)]


async def test_json_deny_allow_and_rewritten_input(make_agent, git_repo, tmp_path):
    deny = script(tmp_path, "deny", "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse', "
                  "'permissionDecision': 'deny', 'permissionDecisionReason': 'policy says no'}}))\n")
    agent = make_agent([call("run_shell", command="echo hi > made.txt"), "ok"], approval="full-auto")
    with_hooks(agent, {"PreToolUse": [{"command": deny}]})
    events = await collect(agent, "go")
    finished = next(e for e in events if isinstance(e, ToolFinished))
    assert not finished.ok and "policy says no" in finished.output
    assert not (git_repo / "made.txt").exists()

    rewrite = script(tmp_path, "rewrite", "args = dict(event['tool_input'], path='rewritten.txt')\n"
                     "print(json.dumps({'hookSpecificOutput': {'permissionDecision': 'allow', "
                     "'updatedInput': args}}))\n")
    approver = RecordingApprover()  # never asked: the hook allowed the call
    agent = make_agent([call("write_file", path="asked-for.txt", content="hi\n"), "ok"], approval="ask",
                       approver=approver)
    with_hooks(agent, {"PreToolUse": [{"matcher": "write_file", "command": rewrite}]})
    events = await collect(agent, "go")
    assert next(e for e in events if isinstance(e, ToolFinished)).ok
    assert (git_repo / "rewritten.txt").read_text() == "hi\n" and not (git_repo / "asked-for.txt").exists()
    assert approver.asked == []

    # a rewritten call is checked again: read-only refuses the write whatever the hook allowed
    agent = make_agent([call("write_file", path="a.txt", content="x"), "ok"], approval="read-only")
    with_hooks(agent, {"PreToolUse": [{"command": rewrite}]})
    events = await collect(agent, "go")
    assert not next(e for e in events if isinstance(e, ToolFinished)).ok
    assert (git_repo / "rewritten.txt").read_text() == "hi\n" and not (git_repo / "a.txt").exists()


async def test_prompt_and_session_start_output_join_the_context(make_agent, tmp_path):
    start = script(tmp_path, "start", "print('branch policy: small commits (' + event['source'] + ')')\n")
    prompt = script(tmp_path, "prompt", "print('ticket ABC-1 is open; prompt was: ' + event['prompt'])\n")
    agent = make_agent(["ok", "ok again"])
    with_hooks(agent, {"SessionStart": [{"command": start}], "UserPromptSubmit": [{"command": prompt}]})
    await collect(agent, "fix it")
    await collect(agent, "and more")
    first, second = (json.dumps(r.messages) for r in agent.engine.requests)
    assert "branch policy: small commits (startup)" in first
    assert "ticket ABC-1 is open; prompt was: fix it" in first
    assert second.count("branch policy") == 1  # SessionStart ran once; its context stays


async def test_prompt_blocked_is_not_sent(make_agent, tmp_path):
    hook = script(tmp_path, "block", "print('no passwords in prompts', file=sys.stderr); sys.exit(2)\n")
    agent = make_agent(["never"])
    with_hooks(agent, {"UserPromptSubmit": [{"command": hook}]})
    events = await collect(agent, "my password is hunter2")
    assert agent.engine.requests == []
    end = events[-1]
    assert isinstance(end, TurnFinished) and "no passwords in prompts" in end.text


async def test_stop_hook_makes_the_model_go_on(make_agent, tmp_path):
    flag = tmp_path / "once"
    hook = script(tmp_path, "stop", f"flag = {str(flag)!r}\n"
                  "if os.path.exists(flag) or event['stop_hook_active']: sys.exit(0)\n"
                  "open(flag, 'w').close(); print('run the tests first', file=sys.stderr); sys.exit(2)\n")
    agent = make_agent(["done already", "ran them, done"])
    with_hooks(agent, {"Stop": [{"command": hook}]})
    events = await collect(agent, "work")
    assert len(agent.engine.requests) == 2
    assert "run the tests first" in json.dumps(agent.engine.requests[1].messages)
    assert events[-1].text == "ran them, done"


async def test_a_hook_that_hangs_is_killed_and_an_error_does_not_stop_the_run(make_agent, tmp_path):
    pidfile = tmp_path / "pid"
    hang = script(tmp_path, "hang", f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
                  "import time; time.sleep(60)\n")
    broken = script(tmp_path, "broken", "print('oops', file=sys.stderr); sys.exit(1)\n")
    agent = make_agent([call("read_file", path="README.md"), "ok"])
    with_hooks(agent, {"PreToolUse": [{"command": hang, "timeout_s": 1}, {"command": broken}]})
    t0 = time.monotonic()
    events = await collect(agent, "read")
    assert time.monotonic() - t0 < 20
    ran = [e for e in events if isinstance(e, HookRan)]
    assert [(e.outcome, e.exit_code) for e in ran] == [("timed_out", None), ("error", 1)]
    assert "oops" in ran[1].message
    assert next(e for e in events if isinstance(e, ToolFinished)).ok
    pid = int(pidfile.read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_bad_hook_tables_are_named():
    for table, said in (({"BeforeEverything": []}, "unknown hook event"), ({"Stop": {"command": "x"}}, "list"),
                        ({"Stop": [{"command": ""}]}, "command"), ({"PreToolUse": [{"matcher": "(", "command": "x"}]},
                                                                   "regex"),
                        ({"Stop": [{"command": "x", "timeout_s": -1}]}, "above 0")):
        with pytest.raises(ValueError, match=said):
            parse_hooks(table)
    nested = parse_hooks({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "a"}]}]})
    assert nested["PreToolUse"][0].command == "a"  # Claude Code's own form, copied as it is


async def test_session_end_and_pre_compact_and_notification_fire(make_agent, tmp_path):
    seen = tmp_path / "events.txt"
    log = script(tmp_path, "log", f"open({str(seen)!r}, 'a').write(event['hook_event_name'] + ' '"
                 " + str(event.get('trigger') or event.get('reason') or event.get('message') or '') + '\\n')\n")
    agent = make_agent([call("write_file", path="a.txt", content="x"), "first", "summary", "second"],
                       approval="ask", approver=RecordingApprover("no"))
    with_hooks(agent, {e: [{"command": log}] for e in ("SessionEnd", "PreCompact", "Notification")})
    await collect(agent, "one " * 50)
    await agent.compact()
    await agent.aclose()
    await agent.aclose()  # SessionEnd once
    assert seen.read_text().splitlines() == [
        "Notification clover-code needs your permission to use write_file", "PreCompact manual", "SessionEnd exit"]
