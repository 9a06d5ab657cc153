"""`--resume` continues a session where it stopped: same log, same conversation."""

from tests.support.e2e import last_json, load_task, run_check, session_lines, session_replies, write_replies

TASK = "fix-median"


def test_resume_finishes_a_task_stopped_by_the_turn_limit(task_repo, clover, env, tmp_path):
    repo = task_repo(TASK)
    replies = session_replies(TASK)
    first = write_replies(tmp_path / "first.jsonl", replies[:2])  # run the tests, grep
    proc = clover("--task", load_task(TASK)["prompt"], "--cwd", str(repo), "--engine", f"scripted:{first}",
                  "--max-turns", "2", "--output-format", "json")
    assert proc.returncode == 4, proc.stderr
    session_id = last_json(proc.stdout)["session_id"]
    assert session_id

    rest = write_replies(tmp_path / "rest.jsonl", replies[2:])  # read, edit, test, commit, answer
    proc = clover("--task", "Continue where you stopped.", "--cwd", str(repo), "--resume", session_id,
                  "--engine", f"scripted:{rest}", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    result = last_json(proc.stdout)
    assert result["session_id"] == session_id and result["exit_reason"] == "done"
    assert run_check(repo, TASK, env).returncode == 0

    events = session_lines(repo)  # one log holds both runs, in order
    users = [e["text"] for e in events if e["type"] == "UserMessage"]
    assert users[-1] == "Continue where you stopped." and len(users) == 2
    assert [e["reason"] for e in events if e["type"] == "TurnFinished"] == ["max_turns", "done"]


def test_resume_of_an_unknown_session_exits_2(task_repo, clover, tmp_path):
    repo = task_repo(TASK)
    replies = write_replies(tmp_path / "r.jsonl", ["Nothing to do."])
    assert clover("--task", "hi", "--cwd", str(repo), "--engine", f"scripted:{replies}").returncode == 0
    proc = clover("--task", "hi", "--cwd", str(repo), "--engine", f"scripted:{replies}", "--resume", "nosuch")
    assert proc.returncode == 2 and "nosuch" in proc.stderr and "Traceback" not in proc.stderr
