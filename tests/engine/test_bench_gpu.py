"""tools/bench/bench_gpu.sh in its CPU toy mode: the GPU script runs end to end, so it cannot rot
between the sessions that are lent a GPU."""

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_gpu_benchmark_runs_on_cpu_at_toy_size(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "OMP_NUM_THREADS": "1"}
    proc = subprocess.run(["bash", str(ROOT / "tools/bench/bench_gpu.sh"), "--cpu", "--toy", "--runs", "2"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert json.loads((tmp_path / "bench_gpu.json").read_text()) == result
    assert result["device"] == "cpu" and result["layers"] == 4
    assert set(result["block_latency"]) == {"256", "1024"}
    assert all(v["denoise_ms"] > 0 and v["fused_commit_ms"] > 0 for v in result["block_latency"].values())
    fused, unfused = result["decode_fused"], result["decode_unfused"]
    assert fused["tokens"] == unfused["tokens"] == 96 and fused["forward_passes"] < unfused["forward_passes"]
    assert 0 <= fused["python_overhead_fraction"] < 1
    reuse = result["reuse"]
    assert reuse["reused_tokens"] == 1024 and reuse["edit_source"] == "cut" and reuse["edit_reused_tokens"] == 824
    assert reuse["checkpoints"] > 0 and result["peak_memory_mb"] > 0
