import os
import sys
from pathlib import Path

# Tiny models on a shared 2-core machine: one thread; more only spin against other processes.
# Set through the environment (read when torch loads), so collecting these tests imports no torch
# and `clover-code` processes started by the tests inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

TOOLS = str(Path(__file__).resolve().parents[2] / "tools" / "training")
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)  # make_tiny_model, for checkpoints beyond the shared fixtures
