"""The headless runner on the real embedded engine (a tiny random checkpoint): whatever the
model writes, the run ends cleanly with a documented exit code and real decoding figures."""

import pytest
from e2e_support import last_json, load_task


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
