"""The process limit of one sandboxed command: processes and threads at once.

Three mechanisms, the strongest the machine allows:
- a `pids` cgroup of its own, when this user may create one (root on most VMs, a systemd
  user with a delegated slice): the kernel refuses the fork past the limit;
- `ulimit -u` inside the sandbox (tools/sandbox/bwrap.py sets it): binds a user who is not root,
  counted in the sandbox's own user namespace, so the user's other processes do not count;
- otherwise (root without a writable cgroup tree) a watch from outside: the machine's task
  count (one read of /proc/loadavg) is polled, and when it has grown past the limit the
  sandbox's own tasks are counted (its PID namespace's members); over the limit, its first
  process is killed, which takes everything inside along.
With a cgroup the watch still runs: a command whose forks are refused at the limit for a
second on end (a fork bomb retries forever) is killed the same way.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from pathlib import Path

POLL_S = 0.05
STUCK_S = 1.0  # how long a command may keep hitting the cgroup's limit before it is killed
CGROUP_ROOTS = (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
LIMIT_SIGNS = ("fork: Resource temporarily unavailable", "fork: retry: Resource temporarily unavailable",
               "can't start new thread", "Cannot fork", "cannot fork")


class ProcessLimit:
    """One command's limit; `wrap` its argv, `start` once it runs, `close` when it has ended."""

    def __init__(self, limit: int):
        self.limit = limit
        self.cgroup = _make_cgroup(limit)
        self._watch: _TaskWatch | None = None
        self._done = threading.Event()

    def wrap(self, argv: list[str]) -> list[str]:
        """argv that first moves itself into the cgroup (on the host, before bwrap starts)."""
        if self.cgroup is None:
            return argv
        join = f'echo $$ > "{self.cgroup / "cgroup.procs"}" || exit 125; exec "$@"'
        return ["/bin/sh", "-c", join, "clover-limit", *argv]

    def start(self, pid: int) -> None:
        if self.cgroup is None and not os.path.exists("/proc/loadavg"):
            return  # not Linux: nothing to watch with
        self._watch = _TaskWatch(pid, self.limit, self.cgroup)
        threading.Thread(target=self._watch.poll, args=(self._done,), name="clover-proclimit",
                         daemon=True).start()

    def hit(self, output: str = "") -> bool:
        """Whether the command ran into the limit (killed by the watch, or forks refused)."""
        if self._watch is not None and self._watch.hit:
            return True
        if self.cgroup is not None and _cgroup_refused(self.cgroup):
            return True
        return any(sign in output for sign in LIMIT_SIGNS)

    def close(self) -> None:
        self._done.set()
        if self.cgroup is not None:
            _remove_cgroup(self.cgroup)

    @property
    def killed(self) -> bool:
        return self._watch is not None and self._watch.hit


def mechanism() -> str:
    """How a command's process limit would be enforced on this machine, in words."""
    if _own_cgroups():
        return "a pids cgroup per command"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "ulimit -u in the sandbox's user namespace"
    return "watched from outside (root without a writable cgroup tree)"


def limit_note(max_processes: int, killed: bool) -> str:
    what = "was killed: it went over" if killed else "ran into"
    return (f"[the command {what} the sandbox's limit of {max_processes} processes and threads at "
            "once; raise max_processes in ~/.config/clover-code/config.toml if it needs more]")


# -- cgroups ------------------------------------------------------------------------------

def _make_cgroup(limit: int) -> Path | None:
    """A new pids cgroup under our own, or None where we may not make one."""
    for parent in _own_cgroups():
        folder = parent / f"clover-{uuid.uuid4().hex[:12]}"
        try:
            folder.mkdir()
        except OSError:
            continue
        try:
            (folder / "pids.max").write_text(str(limit))
            return folder
        except OSError:
            _remove_cgroup(folder)
    return None


def _own_cgroups() -> list[Path]:
    """Folders of our process's cgroup with a pids controller (v1 first, then v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if "pids" in controllers.split(","):
            found.append(CGROUP_ROOTS[0] / path.lstrip("/"))
        elif controllers == "":
            folder = CGROUP_ROOTS[1] / path.lstrip("/")
            if "pids" in _read(folder / "cgroup.subtree_control").split():
                found.append(folder)
    return [f for f in found if os.access(f, os.W_OK)]


def _cgroup_refused(folder: Path) -> bool:
    """pids.events counts forks refused at the limit ("max N")."""
    for line in _read(folder / "pids.events").splitlines():
        name, _, count = line.partition(" ")
        if name == "max" and count.strip().isdigit():
            return int(count) > 0
    return False


def _remove_cgroup(folder: Path) -> None:
    """rmdir, once the processes inside are gone (a PID namespace's teardown takes a moment)."""
    for _ in range(40):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            for pid in _read(folder / "cgroup.procs").split():
                _kill(int(pid))
            time.sleep(0.05)


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


# -- the watch ----------------------------------------------------------------------------

def total_tasks() -> int:
    """Tasks (processes and threads) on the whole machine."""
    return int(_read(Path("/proc/loadavg")).split()[3].split("/")[1])


class _TaskWatch:
    """Watches the sandbox bwrap started as process `pid` (bwrap itself, outside it)."""

    def __init__(self, pid: int, limit: int, cgroup: Path | None = None):
        self.pid, self.limit, self.cgroup = pid, limit, cgroup
        self.baseline = total_tasks()  # tasks outside the sandbox, as far as we know
        self.init: int | None = None  # the namespace's first process, once found
        self.stuck_since: float | None = None  # when the cgroup began refusing forks without pause
        self.hit = False

    def poll(self, done: threading.Event) -> None:
        self._find_init()  # early, while /proc is small
        while not done.wait(POLL_S):
            if self.stuck() if self.cgroup else self.over_limit():
                self.kill()
                return

    def stuck(self) -> bool:
        """At the cgroup's limit, with forks refused, for STUCK_S on end."""
        cgroup = self.cgroup
        current = _read(cgroup / "pids.current").strip() if cgroup else ""
        at_limit = cgroup is not None and current.isdigit() and int(current) >= self.limit and _cgroup_refused(cgroup)
        now = time.monotonic()
        self.stuck_since = (self.stuck_since or now) if at_limit else None
        return self.stuck_since is not None and now - self.stuck_since >= STUCK_S

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
        for pid in (self._find_init(), self.pid):
            if pid:
                _kill(pid)

    def _find_init(self) -> int | None:
        if self.init is None:
            self.init = next((int(p) for p in _pids() if _parent(p) == self.pid), None)
        return self.init


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_group(pid: int) -> None:
    """SIGKILL the process group `pid` leads (a command started in a session of its own)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone


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


MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory",
                "Out of memory", "memory exhausted")


def memory_note(output: str, memory_mb: int) -> str | None:
    """A hint when a command's output looks like it ran into the memory limit."""
    if not any(sign in output for sign in MEMORY_SIGNS):
        return None
    return (f"[the sandbox limits each process to {memory_mb:,} MiB of memory; if this command "
            "needs more, raise memory_mb in ~/.config/clover-code/config.toml]")
