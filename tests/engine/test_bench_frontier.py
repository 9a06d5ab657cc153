"""tools/bench/bench_frontier.py in its --quick mode: the frontier benchmark runs end to end
(fresh held-out sessions, the real engine under each policy, the JSON and the plot), so it
cannot rot."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_frontier_bench_runs_quick(tmp_path):
    out = tmp_path / "frontier"
    proc = subprocess.run([sys.executable, "-m", "tools.bench.bench_frontier", "--quick", "--json",
                           "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result == json.loads((out / "frontier.json").read_text())
    points = result["sets"]["quick"]
    assert sorted(points) == ["factor:1", "factor:3", "threshold:0.7", "threshold:0.95"]
    for figures in points.values():
        assert figures["tpf"] > 1 and figures["calls_expected"] > 0 and 0 <= figures["exact_call_rate"] <= 1
    # the threshold rule commits more per pass at a lower knob, on the same turns
    assert points["threshold:0.7"]["tpf"] >= points["threshold:0.95"]["tpf"]
    assert result["goal"] == {"tpf": 12.0, "exact_call_rate": 0.85, "valid_call_rate": 1.0}
    assert set(result["meets_goal_on_every_set"]) <= set(points)
    assert result["machine"]["nproc"] >= 1 and "--quick" in result["command"]
    assert (out / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "points" / "quick" / "factor_3.json").is_file()  # kept point by point


def test_several_checkpoints_are_measured_side_by_side(tmp_path):
    out, shipped = tmp_path / "frontier", ROOT / "clover_code" / "models" / "clover-demo"
    proc = subprocess.run([sys.executable, "-m", "tools.bench.bench_frontier", "--quick", "--json", "--out", str(out),
                           "--sweep", "threshold:0.95", "--model", f"old={shipped}", "--model", f"new={shipped}"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    points = json.loads(proc.stdout)["sets"]["quick"]
    assert sorted(points) == ["threshold:0.95 new", "threshold:0.95 old"]
    assert points["threshold:0.95 new"]["tpf"] == points["threshold:0.95 old"]["tpf"]  # the same weights
    assert (out / "points" / "quick" / "old" / "threshold_0.95.json").is_file()
    bad = subprocess.run([sys.executable, "-m", "tools.bench.bench_frontier", "--quick", "--model", str(tmp_path)],
                         capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert bad.returncode != 0 and "a checkpoint folder with a config.json" in bad.stderr
