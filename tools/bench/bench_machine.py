"""What every benchmark reports about the machine it ran on (DESIGN.md: Benchmarks)."""

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def machine_info() -> dict:
    return {"nproc": os.cpu_count(), "cpu": cpu_model(), "python": platform.python_version()}
