"""What headless runs print: text, json and stream-json; the task from @FILE and stdin."""

import json

from tests.support.e2e import load_task, scripted, session_replies

TASK = "quick-fix"  # a short session on the fix-median repository: no slow test runs
PROMPT = load_task("fix-median")["prompt"]
RESULT_KEYS = {"result", "exit_reason", "turns", "tool_calls", "tokens", "blocks", "forward_passes", "seconds"}


def test_text_answer_on_stdout_progress_on_stderr(task_repo, clover, tmp_path):
    repo = task_repo("fix-median")
    (tmp_path / "task.md").write_text(PROMPT)
    proc = clover("--task", f"@{tmp_path / 'task.md'}", "--cwd", str(repo), "--engine", scripted(TASK))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == session_replies(TASK)[-1]["content"] + "\n"
    # The model's words stream to stderr without the tool-call markup; one line per tool.
    assert "Let me read the module." in proc.stderr
    assert "<tool_call>" not in proc.stderr and '"arguments"' not in proc.stderr
    assert "✓ run_shell git diff --stat" in proc.stderr
    assert "✓ edit_file numkit/stats.py" in proc.stderr
    assert "[done]" in proc.stderr


def test_json_prints_one_result_object(task_repo, clover):
    repo = task_repo("fix-median")
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--engine", scripted(TASK), "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)  # exactly one object, nothing else on stdout
    assert result.keys() >= RESULT_KEYS
    assert result["exit_code"] == 0 and result["is_error"] is False
    assert isinstance(result["forward_passes"], int) and result["forward_passes"] >= result["blocks"]
    assert result["tpf"] == round(result["tokens"] / result["forward_passes"], 3)
    assert result["seconds"] > 0


def test_stream_json_one_event_per_line(task_repo, clover):
    repo = task_repo("fix-median")
    proc = clover("--task", "-", "--cwd", str(repo), "--engine", scripted(TASK),
                  "--output-format", "stream-json", input=PROMPT)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "UserMessage" and events[0]["text"] == PROMPT.strip()
    assert types[-2:] == ["TurnFinished", "Result"]
    assert events[-1].keys() >= RESULT_KEYS
    assert types.count("ToolStarted") == types.count("ToolFinished") == events[-1]["tool_calls"] == 3
    assert "ToolOutput" not in types  # the same events as the session log: a command's output is in ToolFinished
    first_block = next(e for e in events if e["type"] == "BlockCommitted")["block"]
    assert {"text", "tokens", "forward_passes", "seconds_since_start"} <= first_block.keys()
    # Blocks go to stdout as events, so stderr carries no model text.
    assert "Let me read the module" not in proc.stderr
