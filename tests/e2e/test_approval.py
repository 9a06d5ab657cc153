"""Headless runs cannot ask: full-auto by default; in other modes questions are declined."""

from tests.support.e2e import last_json, load_task, scripted

PROMPT = load_task("fix-median")["prompt"]


def test_default_is_full_auto(task_repo, clover):
    repo = task_repo("fix-median")
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--engine", scripted("quick-fix"), "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["tool_errors"] == 0
    assert "declined" not in proc.stderr


def test_auto_edit_declines_the_shell_and_says_so(task_repo, clover):
    repo = task_repo("fix-median")
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--engine", scripted("quick-fix"),
                  "--approval", "auto-edit", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    result = last_json(proc.stdout)
    assert result["tool_errors"] == 1  # the shell command; the edit ran
    assert "declined run_shell git diff --stat" in proc.stderr
    assert "(ordered[middle - 1] + ordered[middle]) / 2" in (repo / "numkit" / "stats.py").read_text()


def test_read_only_changes_nothing(task_repo, clover):
    repo = task_repo("fix-median")
    before = (repo / "numkit" / "stats.py").read_text()
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--engine", scripted("quick-fix"),
                  "--approval", "read-only", "--output-format", "json")
    assert proc.returncode == 0, proc.stderr
    assert last_json(proc.stdout)["tool_errors"] == 2  # the edit and the shell command
    assert (repo / "numkit" / "stats.py").read_text() == before
