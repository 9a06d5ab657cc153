"""The process limit of a sandbox, enforced from outside it.

RLIMIT_NPROC does not bind root (CI runners often run as root) and counts every process
of the user, not one sandbox's; cgroups need a delegation most machines lack. So a watch
polls: the kernel's total task count (one read of /proc/loadavg) is cheap, and only when
it has grown by more than the limit are the sandbox's own tasks counted (its PID
namespace's members, in /proc). Over the limit, the namespace's first process is killed,
which takes every process in it along: a fork bomb ends within a poll or two.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading

POLL_S = 0.05


def total_tasks() -> int:
    """Tasks (processes and threads) on the whole machine."""
    with open("/proc/loadavg", encoding="ascii") as f:
        return int(f.read().split()[3].split("/")[1])


def _pid_ns(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def _pids() -> list[str]:
    return [name for name in os.listdir("/proc") if name.isdigit()]


def _parent(pid: str) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _threads(pid: str) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


class TaskWatch:
    """Watches the sandbox bwrap started as process `pid` (bwrap itself, outside it)."""

    def __init__(self, pid: int, limit: int):
        self.pid, self.limit = pid, limit
        self.baseline = total_tasks()  # tasks outside the sandbox, as far as we know
        self.init: int | None = None  # the namespace's first process, once found
        self.hit = False

    def over_limit(self) -> bool:
        total = total_tasks()
        if total - self.baseline <= self.limit:
            return False
        inside = self.count()
        if inside > self.limit:
            return True
        self.baseline = total - inside  # the rest of the machine grew: count from there
        return False

    def count(self) -> int:
        init = self._find_init()
        ns = _pid_ns(init) if init else None
        if ns is None or ns == _pid_ns("self"):
            return 0
        return sum(_threads(pid) for pid in _pids() if _pid_ns(pid) == ns)

    def kill(self) -> None:
        self.hit = True
        init = self._find_init()
        for pid in (init, self.pid):
            if pid:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def _find_init(self) -> int | None:
        if self.init is None:
            self.init = next((int(p) for p in _pids() if _parent(p) == self.pid), None)
        return self.init

    async def run_async(self) -> None:
        """Poll until cancelled; kill the sandbox once over the limit."""
        while True:
            await asyncio.sleep(POLL_S)
            if self.over_limit():
                self.kill()
                return

    def run_in_thread(self, done: threading.Event) -> threading.Thread:
        """Poll in a thread until `done` is set; kill the sandbox once over the limit."""

        def poll() -> None:
            while not done.wait(POLL_S):
                if self.over_limit():
                    self.kill()
                    return

        thread = threading.Thread(target=poll, name="clover-proclimit", daemon=True)
        thread.start()
        return thread


def limit_note(max_processes: int) -> str:
    return (f"[killed: the command went over the sandbox's limit of {max_processes} processes and "
            "threads at once; raise max_processes in ~/.config/clover-code/config.toml if it needs more]")


MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory",
                "Out of memory", "memory exhausted")


def memory_note(output: str, memory_mb: int) -> str | None:
    """A hint when a command's output looks like it ran into the memory limit."""
    if not any(sign in output for sign in MEMORY_SIGNS):
        return None
    return (f"[the sandbox limits each process to {memory_mb:,} MiB of memory; if this command "
            "needs more, raise memory_mb in ~/.config/clover-code/config.toml]")
