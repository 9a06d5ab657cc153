"""The limits of one sandboxed command: processes and threads at once, and memory.

Processes, by the strongest mechanism the machine allows:
- a `pids` cgroup of its own, when this user may create one (root on most VMs, a systemd
  user with a delegated slice): the kernel refuses the fork past the limit;
- `ulimit -u` inside the sandbox (sandbox/bwrap.py sets it): binds a user who is not root,
  counted in the sandbox's own user namespace, so the user's other processes do not count;
- otherwise (root without a writable cgroup tree) a watch from outside: the machine's task
  count (one read of /proc/loadavg) is polled, and when it has grown past the limit the
  sandbox's own tasks are counted (its PID namespace's members); over the limit, its first
  process is killed, which takes everything inside along.
With a cgroup the watch still runs: a command whose forks are refused at the limit for a
second on end (a fork bomb retries forever) is killed the same way.

Memory: a `memory` cgroup of its own holds all the command's processes together, and what
they write to the sandbox's /tmp and /dev/shm, to `memory_mb` (swap included); past it the
kernel kills the largest. Where no memory cgroup can be made, `ulimit -d` (bwrap.py) holds
each process's heap and private mappings alone, and the size of /tmp and /dev/shm caps those.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

POLL_S = 0.05
STUCK_S = 1.0  # how long a command may keep hitting the cgroup's limit before it is killed
CGROUP_FS = Path("/sys/fs/cgroup")
LIMIT_SIGNS = ("fork: Resource temporarily unavailable", "fork: retry: Resource temporarily unavailable",
               "can't start new thread", "Cannot fork", "cannot fork")
# The file that sets a memory limit, the one that keeps swap out of it (optional), per cgroup version.
MEMORY_FILES = (("memory.max", "memory.swap.max"), ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"))


class CommandLimits:
    """One command's limits; `wrap` its argv, `start` once it runs, `close` when it has ended."""

    def __init__(self, max_processes: int, memory_mb: int | None = None):
        """Without `memory_mb`, processes only (a memory cgroup needs a limit to hold)."""
        self.limit = max_processes
        self.memory_mb = memory_mb
        self.pids, self.memory = _make_cgroups(max_processes, memory_mb)  # each None where none can be made
        self._watch: _TaskWatch | None = None
        self._done = threading.Event()
        self._refused = False  # forks refused at the pids cgroup's limit, as read at close()
        self.oom_killed = False  # a process killed at the memory cgroup's limit, as read at close()

    def wrap(self, argv: list[str]) -> list[str]:
        """argv that first moves itself into the cgroups (on the host, before bwrap starts)."""
        folders = list(dict.fromkeys(f for f in (self.pids, self.memory) if f is not None))
        if not folders:
            return argv
        join = "".join(f'echo $$ > "{f / "cgroup.procs"}" || exit 125; ' for f in folders)
        return ["/bin/sh", "-c", join + 'exec "$@"', "clover-limit", *argv]

    def start(self, pid: int) -> None:
        if self.pids is None and not os.path.exists("/proc/loadavg"):
            return  # not Linux: nothing to watch with
        self._watch = _TaskWatch(pid, self.limit, self.pids)
        threading.Thread(target=self._watch.poll, args=(self._done,), name="clover-proclimit",
                         daemon=True).start()

    def hit(self, output: str = "") -> bool:
        """Whether the command ran into the process limit (killed by the watch, or forks refused)."""
        if self._watch is not None and self._watch.hit:
            return True
        if self._refused or (self.pids is not None and _cgroup_refused(self.pids)):
            return True
        return any(sign in output for sign in LIMIT_SIGNS)

    def memory_note(self, output: str) -> str | None:
        """A hint when the command ran into its memory limit (after `close`)."""
        if self.memory_mb is None:
            return None
        return memory_note(output, self.memory_mb, killed=self.oom_killed, per_command=self.memory is not None)

    def close(self) -> None:
        """Stop watching and remove the cgroups, keeping what they counted."""
        self._done.set()
        self._refused = self.pids is not None and _cgroup_refused(self.pids)
        self.oom_killed = self.memory is not None and _oom_kills(self.memory) > 0
        for folder in dict.fromkeys(f for f in (self.pids, self.memory) if f is not None):
            _remove_cgroup(folder)

    @property
    def killed(self) -> bool:
        return self._watch is not None and self._watch.hit


def mechanism() -> str:
    """How a command's process limit would be enforced on this machine, in words."""
    if _own_cgroups("pids"):
        return "a pids cgroup per command"
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        return "ulimit -u in the sandbox's user namespace"
    return "watched from outside (root without a writable cgroup tree)"


def memory_mechanism() -> str:
    """How a command's memory limit would be enforced on this machine, in words."""
    if _own_cgroups("memory"):
        return "a memory cgroup per command: all its processes together"
    return "each process on its own (ulimit -d): no memory cgroup may be made here"


def limit_note(max_processes: int, killed: bool) -> str:
    what = "was killed: it went over" if killed else "ran into"
    return (f"[the command {what} the sandbox's limit of {max_processes} processes and threads at "
            "once; raise max_processes in ~/.config/clover-code/config.toml if it needs more]")


# -- cgroups ------------------------------------------------------------------------------

def _make_cgroups(max_processes: int, memory_mb: int | None) -> tuple[Path | None, Path | None]:
    """This command's pids cgroup and memory cgroup (one folder in cgroup v2, one per hierarchy
    in v1), each None where we may not make it."""
    made: dict[Path, Path] = {}  # a parent cgroup -> the command's folder in it
    pids = _limited(made, "pids", lambda folder: _write(folder / "pids.max", str(max_processes)))
    memory = None if memory_mb is None else _limited(made, "memory", lambda f: _set_memory(f, memory_mb))
    for folder in made.values():
        if folder not in (pids, memory):
            _remove_cgroup(folder)
    return pids, memory


def _limited(made: dict[Path, Path], controller: str, configure: Callable[[Path], bool]) -> Path | None:
    """The command's folder under the first of our cgroups that has `controller`, configured."""
    for parent in _own_cgroups(controller):
        folder = made.get(parent) or _new_cgroup(parent)
        if folder is None:
            continue
        made[parent] = folder
        if configure(folder):
            return folder
    return None


def _new_cgroup(parent: Path) -> Path | None:
    folder = parent / f"clover-{uuid.uuid4().hex[:12]}"
    try:
        folder.mkdir()
    except OSError:
        return None
    return folder


def _set_memory(folder: Path, memory_mb: int) -> bool:
    limit = str(memory_mb * 1024 * 1024)
    for main, swap in MEMORY_FILES:
        if (folder / main).exists():
            if not _write(folder / main, limit):
                return False
            _write(folder / swap, "0" if swap == "memory.swap.max" else limit)  # no swap beyond it, where there is any
            return True
    return False


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
    except OSError:
        return False
    return True


def _own_cgroups(controller: str) -> list[Path]:
    """Folders of our process's cgroup where `controller` can be used (v1 first, then v2)."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return []
    found = []
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(","):
            found.append(CGROUP_FS / controllers / path.lstrip("/"))
        elif controllers == "":
            folder = CGROUP_FS / path.lstrip("/")
            if controller in _read(folder / "cgroup.subtree_control").split():
                found.append(folder)
    return [f for f in found if os.access(f, os.W_OK)]


def _cgroup_refused(folder: Path) -> bool:
    """pids.events counts forks refused at the limit ("max N")."""
    return _count(folder / "pids.events", "max") > 0


def _oom_kills(folder: Path) -> int:
    """Processes the kernel killed at the memory limit (v2: memory.events, v1: memory.oom_control)."""
    return max(_count(folder / "memory.events", "oom_kill"), _count(folder / "memory.oom_control", "oom_kill"))


def _count(path: Path, name: str) -> int:
    """The number on `name`'s line of a cgroup's "name N" file; 0 when absent."""
    for line in _read(path).splitlines():
        key, _, count = line.partition(" ")
        if key == name and count.strip().isdigit():
            return int(count)
    return 0


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


def memory_note(output: str, memory_mb: int, *, killed: bool = False, per_command: bool = False) -> str | None:
    """A hint when a command ran into the memory limit: a process killed at the memory cgroup's
    limit, or output that says an allocation failed."""
    if not killed and not any(sign in output for sign in MEMORY_SIGNS):
        return None
    what = "a process of the command was killed at" if killed else "the command ran into"
    held = "for all its processes together (and each one)" if per_command else "for each of its processes"
    return (f"[{what} the sandbox's memory limit of {memory_mb:,} MiB {held}; if it needs more, "
            "raise memory_mb in ~/.config/clover-code/config.toml]")
