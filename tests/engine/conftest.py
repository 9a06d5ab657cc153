import os

# Tiny models on a shared 2-core machine: one thread; more only spin against other processes.
# Set through the environment (read when torch loads), so collecting these tests imports no torch
# and `clover-code` processes started by the tests inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")
