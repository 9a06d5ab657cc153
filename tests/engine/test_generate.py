"""`clover-code generate` on a tiny checkpoint, through the real process."""

import re


def test_generate_streams_blocks_and_prints_totals(cli, tiny_attention_ckpt):
    proc = cli("generate", "--model", str(tiny_attention_ckpt), "--max-tokens", "80", "--show-steps",
                   "write hello world")
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.strip()) == 80  # the reply itself, nothing else, on stdout
    assert re.search(r"\[block 0: 32 tokens, \d+ passes, \d+ ms\]", proc.stderr)
    assert "[block 2: 16 tokens" in proc.stderr
    assert re.search(r"block 0 step 1: [█·]{32} \+\d+", proc.stderr)
    totals = re.search(r"80 tokens in 3 blocks, [\d.]+ s, [\d.]+ tokens/s, (\d+) forward passes, TPF ([\d.]+)",
                       proc.stderr)
    assert totals, proc.stderr
    assert float(totals[2]) == round(80 / int(totals[1]), 2)


def test_generate_reports_a_missing_model_folder(cli, tmp_path):
    proc = cli("generate", "--model", str(tmp_path / "missing"), "hi")
    assert proc.returncode == 3
    assert "model folder not found" in proc.stderr and "Traceback" not in proc.stderr
