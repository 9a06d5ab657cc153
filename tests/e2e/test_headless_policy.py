"""The decoding policy of a headless run: from the flag or the user's config into the real
embedded engine, and said in the JSON result; a policy that cannot work is bad input (exit 2)."""

import json

from tests.support.e2e import last_json, load_task, scripted

PROMPT = load_task("fix-median")["prompt"]


def test_the_policy_flag_and_config_reach_the_engine_and_the_json_result(task_repo, clover, tmp_path):
    repo = task_repo("fix-median")
    base = ["--task", PROMPT, "--cwd", str(repo), "--output-format", "json", "--max-turns", "1",
            "--max-tokens", "48"]
    flagged = clover(*base, "--policy", "factor:2")
    config = tmp_path / "xdg" / "clover-code" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('policy = "entropy:1"\n')
    configured = clover(*base)
    for proc, policy in ((flagged, "factor:2"), (configured, "entropy:1")):
        result = json.loads(proc.stdout)
        assert result["policy"] == policy, proc.stderr
        assert result["forward_passes"] >= 1 and "Traceback" not in proc.stderr


def test_a_bad_policy_is_bad_input_and_a_scripted_engine_has_none(task_repo, clover):
    repo = task_repo("fix-median")
    proc = clover("--task", PROMPT, "--cwd", str(repo), "--output-format", "json", "--policy", "fastest")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--policy: unknown decoding policy 'fastest': choose threshold[:KNOB]" in proc.stderr
    assert last_json(proc.stdout)["exit_reason"] == "bad_input"
    scripted_run = clover("--task", PROMPT, "--cwd", str(repo), "--engine", scripted("quick-fix"),
                          "--output-format", "json")
    assert scripted_run.returncode == 0 and json.loads(scripted_run.stdout)["policy"] is None
