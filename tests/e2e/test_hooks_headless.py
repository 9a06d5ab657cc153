"""Hooks in a headless run, as a user's CI would have them: the real `clover-code --task` with a
PreToolUse hook in the user's config that blocks one command; stream-json carries the HookRan
event, stderr says what the hook did, and the session log keeps it."""

import json
import sys
from pathlib import Path

from tests.support.e2e import session_lines, write_replies


def test_a_blocking_hook_in_stream_json(clover, git_repo: Path, tmp_path: Path):
    hook = tmp_path / "guard.py"
    hook.write_text("import json, sys\nevent = json.load(sys.stdin)\n"
                    "if 'rm ' in event['tool_input'].get('command', ''):\n"
                    "    print('deleting is for humans', file=sys.stderr); sys.exit(2)\n")
    config = tmp_path / "xdg" / "clover-code" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[[hooks.PreToolUse]]\nmatcher = "run_shell"\ncommand = "{sys.executable} {hook}"\n')
    replies = write_replies(tmp_path / "r.jsonl", [
        {"content": "", "tool_calls": [{"name": "run_shell", "arguments": {"command": "rm README.md"}}]},
        {"content": "", "tool_calls": [{"name": "run_shell", "arguments": {"command": "echo kept"}}]},
        "done"])
    proc = clover("--task", "tidy up", "--cwd", str(git_repo), "--engine", f"scripted:{replies}",
                  "--output-format", "stream-json")
    assert proc.returncode == 0, proc.stderr
    assert (git_repo / "README.md").exists()
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    hooks = [e for e in events if e["type"] == "HookRan"]
    assert [(h["event"], h["outcome"], h["exit_code"]) for h in hooks] == [("PreToolUse", "blocked", 2),
                                                                           ("PreToolUse", "ok", 0)]
    assert hooks[0]["message"] == "deleting is for humans"
    finished = [e for e in events if e["type"] == "ToolFinished"]
    assert not finished[0]["ok"] and "deleting is for humans" in finished[0]["output"] and finished[1]["ok"]
    assert "hook PreToolUse blocked: deleting is for humans" in proc.stderr
    assert [e["type"] for e in session_lines(git_repo)].count("HookRan") == 2  # logged, as replayed on resume

    # Resumed without the hook in the config: the log's HookRan events are read back, and no hook runs.
    config.write_text("")
    again = write_replies(tmp_path / "r2.jsonl", [
        {"content": "", "tool_calls": [{"name": "run_shell", "arguments": {"command": "rm README.md"}}]}, "gone"])
    proc = clover("--task", "now delete it", "--cwd", str(git_repo), "--engine", f"scripted:{again}",
                  "--output-format", "stream-json", "--resume", "last")
    assert proc.returncode == 0, proc.stderr
    assert not [line for line in proc.stdout.splitlines() if '"HookRan"' in line]
    assert not (git_repo / "README.md").exists()
