"""The headless runner on the real embedded engine (a tiny random checkpoint): whatever the
model writes, the run ends cleanly with a documented exit code and real decoding figures."""

import pytest

from tests.support.e2e import last_json, load_task


@pytest.mark.slow
def test_headless_on_a_tiny_embedded_checkpoint(task_repo, clover, tiny_attention_ckpt):
    repo = task_repo("fix-median")
    proc = clover("--task", load_task("fix-median")["prompt"], "--cwd", str(repo),
                  "--model", str(tiny_attention_ckpt), "--max-turns", "2", "--max-tokens", "32",
                  "--output-format", "json", timeout=300)
    assert proc.returncode in (0, 1, 4), proc.stderr
    assert "Traceback" not in proc.stderr
    assert "loading the embedded model" in proc.stderr and "model ready" in proc.stderr
    result = last_json(proc.stdout)
    assert result["engine"] == "embedded" and result["blocks"] >= 1
    assert result["forward_passes"] >= result["blocks"]  # the embedded engine reports its passes
    assert 1 <= result["tpf"] <= 32


def test_with_no_model_named_the_shipped_demo_model_runs_and_says_so_once(task_repo, clover, monkeypatch):
    for var in ("CLOVER_MODEL", "CLOVER_ENDPOINT", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    repo = task_repo("rename-function")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(repo.parent / "no-user-config"))
    proc = clover("--task", load_task("rename-function")["prompt"], "--cwd", str(repo), "--max-turns", "1",
                  "--output-format", "json", timeout=300)
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("small demo model") == 1, proc.stderr
    assert "--endpoint URL" in proc.stderr
    result = last_json(proc.stdout)
    assert result["engine"] == "embedded" and result["model"].endswith("clover-demo")
    assert result["tokens"] > result["forward_passes"]  # parallel decoding: more than one token per pass
