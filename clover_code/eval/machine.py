"""The machine results were measured on: CPU model, cores, memory, GPU (nvidia-smi, when there
is one; torch is never loaded for this), Python and clover-code versions."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys

from clover_code import __version__
from clover_code.jsonsafe import JSONObject


def machine() -> JSONObject:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count() or 1,
        "memory_gb": _memory_gb(),
        "gpu": _gpus(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "clover_code": __version__,
    }


def describe(m: JSONObject) -> str:
    """One line: `2 cores, AMD EPYC 9B14, 8 GB, no GPU`."""
    memory = f", {m['memory_gb']:g} GB" if m.get("memory_gb") else ""
    gpu = ", ".join(m.get("gpu") or []) or "no GPU"
    return f"{m.get('cores')} cores, {m.get('cpu')}{memory}, {gpu}"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or sys.platform


def _memory_gb() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def _gpus() -> list[str]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "--query-gpu=name,memory.total", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()] if out.returncode == 0 else []
