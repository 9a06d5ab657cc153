"""Classes 4-7 of issue 31 and 9-10 of issue 41: what a sandboxed command can reach on the host.

Secrets in the environment, unix sockets of host services (wherever they live), credential
files, and the machine's processes and memory (per command, /tmp and /dev/shm included);
each judged from outside the sandbox where it can be: the listening server, the kernel's
cgroup, the machine's task count.
"""

from __future__ import annotations

import os
import shutil
import socket
import struct
import tempfile
import threading
import time
from pathlib import Path

import pytest

from clover_code.eval.checks import CheckRunner
from clover_code.sandbox import limits, seccomp
from clover_code.sandbox.bwrap import bwrap_problem, socket_filter_problem, tmpfs_capped
from clover_code.sandbox.gitrun import Git
from clover_code.sandbox.limits import memory_mechanism, total_tasks
from clover_code.sandbox.policy import SandboxPolicy
from clover_code.tools import Registry, ToolContext
from clover_code.tools.shell import TOOLS
from clover_code.tools.workspace import Workspace

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox: {bwrap_problem()}")
SECRET = "s3cr3t-value-0123456789"


async def run(root: Path, command: str, policy: SandboxPolicy | None = None, timeout: float = 30):
    ctx = ToolContext(Workspace(root), sandbox=True, shell_timeout=timeout, policy=policy or SandboxPolicy())
    return await Registry(TOOLS).call("run_shell", {"command": command}, ctx)


async def test_secret_variables_do_not_reach_commands(tmp_path: Path, monkeypatch):
    for name in ("CLOVER_API_KEY", "OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "PGPASSWORD",
                 "NPM_TOKEN"):
        monkeypatch.setenv(name, f"{SECRET}-{name}")
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    result = await run(tmp_path, "env")
    assert "PLAIN_SETTING=visible" in result.output and SECRET not in result.output
    kept = await run(tmp_path, "env", SandboxPolicy(keep_env=("NPM_TOKEN",)))
    assert f"NPM_TOKEN={SECRET}-NPM_TOKEN" in kept.output and "GITHUB_TOKEN" not in kept.output


@pytest.fixture
def host_socket():
    """A listening unix socket under /run, where host services keep theirs; counts connections."""
    folder = Path("/run") / f"clover-test-{os.getpid()}"
    try:
        folder.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot make a socket under /run here: {exc}")
    path = folder / "service.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen()
    server.settimeout(0.2)
    accepted: list[int] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            accepted.append(1)
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield path, accepted
    stop.set()
    thread.join()
    server.close()
    path.unlink()
    folder.rmdir()


async def test_host_unix_sockets_are_out_of_reach(tmp_path: Path, host_socket):
    path, accepted = host_socket
    connect = f"python3 -c \"import socket; socket.socket(socket.AF_UNIX).connect('{path}')\""
    with socket.socket(socket.AF_UNIX) as probe:  # the listener works from the host
        probe.connect(str(path))
    time.sleep(0.3)
    assert accepted == [1]
    result = await run(tmp_path, connect)
    time.sleep(0.3)
    assert not result.ok and accepted == [1]


async def test_credentials_are_hidden(tmp_path: Path, monkeypatch):
    ws = tmp_path / "home"  # the workspace is the home folder: hiding must beat the workspace bind
    (ws / ".ssh").mkdir(parents=True)
    (ws / ".ssh" / "id_ed25519").write_text(f"PRIVATE {SECRET}\n")
    (ws / ".netrc").write_text(f"machine example.com password {SECRET}\n")
    (ws / ".config" / "clover-code").mkdir(parents=True)
    (ws / ".config" / "clover-code" / "config.toml").write_text(f'api_key = "{SECRET}"\n')
    (ws / "project.txt").write_text("readable\n")
    monkeypatch.setenv("HOME", str(ws))
    result = await run(ws, "cat project.txt; cat ~/.ssh/id_ed25519 ~/.netrc ~/.config/clover-code/config.toml; "
                           "ls -a ~/.ssh; echo x > ~/.netrc")
    assert "readable" in result.output and SECRET not in result.output
    assert (ws / ".netrc").read_text().startswith("machine")  # and not writable either
    opened = await run(ws, "cat ~/.netrc", SandboxPolicy(deny_read=()))  # the user's own choice
    assert SECRET in opened.output


async def test_fork_bomb_is_stopped_within_the_limit(tmp_path: Path):
    """With a pids cgroup (root here) the kernel refuses the forks and the stuck bomb is killed;
    elsewhere `ulimit -u` or the outside watch stops it."""
    before = total_tasks()
    started = time.monotonic()
    # The sandbox's first process stays (with `wait` it could end first on a loaded machine,
    # and the PID namespace would take the bomb down before it reached the limit).
    result = await run(tmp_path, "bomb() { bomb | bomb & }; bomb; sleep 80", SandboxPolicy(max_processes=64),
                       timeout=90)
    elapsed = time.monotonic() - started
    assert "limit of 64 processes" in result.output, result.output[-500:]
    assert elapsed < 60  # long before the 90 s timeout
    deadline = time.monotonic() + 5
    while total_tasks() >= before + 20 and time.monotonic() < deadline:
        time.sleep(0.1)  # the PID namespace's teardown takes a moment
    assert total_tasks() < before + 20  # nothing left behind


async def test_the_outside_watch_kills_a_sandbox_over_the_limit(tmp_path: Path, monkeypatch):
    """Root on a machine without a writable cgroup tree: only the watch from outside is left."""
    monkeypatch.setattr(limits, "_own_cgroups", lambda controller: [])
    result = await run(tmp_path, "for i in $(seq 200); do sleep 20 & done; wait", SandboxPolicy(max_processes=64))
    assert not result.ok and "was killed: it went over the sandbox's limit of 64" in result.output


async def test_many_processes_under_the_limit_are_fine(tmp_path: Path):
    result = await run(tmp_path, "for i in $(seq 40); do sleep 1 & done; wait; echo done",
                       SandboxPolicy(max_processes=64))
    assert result.ok and "done" in result.output


async def test_memory_is_limited_per_process(tmp_path: Path):
    grab = "python3 -c \"b = bytearray(3 * 1024**3); print('allocated')\""
    result = await run(tmp_path, grab, SandboxPolicy(memory_mb=2048))
    assert not result.ok and "allocated" not in result.output
    assert "memory limit of 2,048 MiB" in result.output
    small = await run(tmp_path, "python3 -c \"b = bytearray(200 * 1024**2); print('allocated')\"")
    assert small.ok and "allocated" in small.output


NO_MEMORY_CGROUP = "memory cgroup" not in memory_mechanism()


# Takes 96 MiB, then stays until each of the eight has either taken its share too or is gone.
HOLD = """
import os, time
open(f"/tmp/start-{os.getpid()}", "w").close()
taken = b"x" * (96 << 20)
open(f"/tmp/held-{os.getpid()}", "w").close()

def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False

def settled():
    started = [name.split("-")[1] for name in os.listdir("/tmp") if name.startswith("start-")]
    return len(started) == 8 and all(os.path.exists(f"/tmp/held-{p}") or not alive(p) for p in started)

deadline = time.monotonic() + 30
while not settled() and time.monotonic() < deadline:
    time.sleep(0.02)
"""


@pytest.mark.skipif(NO_MEMORY_CGROUP, reason=f"only per-process limits here: {memory_mechanism()}")
async def test_memory_is_limited_per_command(tmp_path: Path):
    """Eight processes of 96 MiB each, every one under the per-process limit, all held at once:
    768 MiB against the command's 384. The kernel's cgroup kills some (its count is the note)."""
    (tmp_path / "hold.py").write_text(HOLD)
    command = ("for i in 1 2 3 4 5 6 7 8; do python3 hold.py & done; "
               "failed=0; for job in $(jobs -p); do wait $job || failed=1; done; exit $failed")
    result = await run(tmp_path, command, SandboxPolicy(memory_mb=384), timeout=60)
    assert not result.ok, result.output
    assert "killed at the sandbox's memory limit of 384 MiB for all its processes together" in result.output


@pytest.mark.skipif(not tmpfs_capped(), reason="this bwrap cannot size a tmpfs (--size came with 0.10)")
async def test_tmp_and_dev_shm_fill_only_to_their_cap(tmp_path: Path, monkeypatch):
    """Without a memory cgroup (monkeypatched away), the tmpfs's size is what holds."""
    monkeypatch.setattr(limits, "_own_cgroups", lambda controller: [])
    fill = "dd if=/dev/zero of={0}/fill bs=1M count=300 2>&1; stat -c '{0} %s' {0}/fill; "
    result = await run(tmp_path, fill.format("/tmp") + fill.format("/dev/shm"), SandboxPolicy(memory_mb=128))
    assert "No space left on device" in result.output, result.output
    sizes = dict(line.split() for line in result.output.splitlines() if line.startswith(("/tmp ", "/dev/shm ")))
    assert sizes.keys() == {"/tmp", "/dev/shm"} and all(int(size) <= 128 << 20 for size in sizes.values())


@pytest.mark.skipif(NO_MEMORY_CGROUP, reason=f"only per-process limits here: {memory_mechanism()}")
async def test_what_tmp_holds_counts_against_the_commands_memory(tmp_path: Path):
    result = await run(tmp_path, "dd if=/dev/zero of=/tmp/fill bs=1M count=300; echo survived",
                       SandboxPolicy(memory_mb=128))
    assert not result.ok and "survived" not in result.output
    assert "killed at the sandbox's memory limit of 128 MiB" in result.output, result.output


async def test_no_other_tmpfs_takes_memory(tmp_path: Path, monkeypatch):
    """/dev itself, /run and a hidden folder are empty tmpfs mounts: read-only, not a place to fill."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    writes = " ".join(f"echo x > {path}/fill 2>/dev/null && echo 'wrote {path}';"
                      for path in ("/dev", "/run", str(home / ".ssh")))
    result = await run(tmp_path, f"{writes} echo done")
    assert "done" in result.output and "wrote" not in result.output, result.output


# -- unix sockets wherever they are ---------------------------------------------------------

class UnixServers:
    """A stream and a datagram unix socket listening on the host in `folder`; what reached them
    is read after a last message from the host itself, which queues behind anything earlier."""

    def __init__(self, folder: Path):
        self.stream_path, self.dgram_path = folder / "service.sock", folder / "log.sock"
        self.stream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.stream.bind(str(self.stream_path))
        self.stream.listen(16)
        self.dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.dgram.bind(str(self.dgram_path))
        for server in (self.stream, self.dgram):
            server.settimeout(10)  # a lost message fails the test instead of hanging it

    def received(self) -> list[bytes]:
        """Every message that reached either socket, each list ending with the host's own."""
        with socket.socket(socket.AF_UNIX) as last:
            last.connect(str(self.stream_path))
            last.sendall(b"host")
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as last:
            last.sendto(b"host", str(self.dgram_path))
        streamed: list[bytes] = []
        while streamed[-1:] != [b"host"]:
            conn, _ = self.stream.accept()
            with conn:
                conn.settimeout(10)
                streamed.append(conn.recv(64))
        sent: list[bytes] = []
        while sent[-1:] != [b"host"]:
            sent.append(self.dgram.recv(64))
        return streamed + sent

    def close(self) -> None:
        self.stream.close()
        self.dgram.close()


@pytest.fixture(params=["workspace", "var-tmp"])
def unix_servers(request, tmp_path: Path):
    """Servers in a folder the sandbox sees and does not hide: the workspace itself, or one
    under /var/tmp (as under /var/lib, /srv, LXD's or the Nix daemon's folders)."""
    outside = request.param != "workspace"
    folder = Path(tempfile.mkdtemp(prefix="clover-sock-", dir="/var/tmp")) if outside else tmp_path
    servers = UnixServers(folder)
    yield servers
    servers.close()
    if outside:
        shutil.rmtree(folder)


ATTACKS = """
import socket, sys
stream, dgram = sys.argv[1:]
def attempt(name, fn):
    try:
        fn()
        print(name, "reached")
    except OSError as exc:
        print(name, "refused:", exc.strerror)
def connect():
    s = socket.socket(socket.AF_UNIX)
    s.connect(stream)
    s.sendall(b"sandbox")
def datagram():
    socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b"sandbox", dgram)
def pair():  # a datagram pair's sendto may name any socket path
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    a.sendto(b"sandbox", dgram)
attempt("connect", connect)
attempt("datagram", datagram)
attempt("pair", pair)
"""


async def attack_from(runner: str, root: Path, command: str) -> str:
    """`command` run by one of the places that start sandboxed commands: the agent's shell
    (also the TUI's `!cmd`), the git runner (a repository's alias, as a hook would), an eval check."""
    if runner == "run_shell":
        return (await run(root, command)).output
    if runner == "git":
        done = Git(root).run("-c", f"alias.attack=!{command}", "attack", writable=(), check=False)
        return done.out + done.err
    return CheckRunner().run(command, root).output


@pytest.mark.parametrize("runner", ["run_shell", "git", "eval check"])
async def test_host_unix_sockets_anywhere_are_out_of_reach(tmp_path: Path, unix_servers: UnixServers, runner: str):
    assert socket_filter_problem() is None  # x86_64 and aarch64 have the filter
    (tmp_path / "attack.py").write_text(ATTACKS)
    stream, dgram = unix_servers.stream_path, unix_servers.dgram_path
    command = f"test -S {stream} && echo visible; python3 attack.py {stream} {dgram}"
    output = await attack_from(runner, tmp_path, command)
    assert "visible" in output  # seen, so the filter holds, not the hiding
    for attack in ("connect", "datagram", "pair"):
        assert f"{attack} refused: Operation not permitted" in output, output
    assert unix_servers.received() == [b"host", b"host"]


@pytest.mark.parametrize("arch", sorted(seccomp.ABIS))
def test_the_filter_is_whole_on_every_architecture_it_knows(arch: str):
    """Every jump lands inside the program and every path ends in a return (what the kernel
    checks when bwrap loads it); the one for this machine is loaded by the tests above."""
    code = seccomp.program(arch)
    assert code is not None and len(code) % 8 == 0
    program = list(struct.iter_unpack("=HBBI", code))
    for at, (op, jump_true, jump_false, _) in enumerate(program):
        if op & 0x07 == 0x05:  # BPF_JMP
            assert at + 1 + max(jump_true, jump_false) < len(program)
    assert program[-1][0] == seccomp.RET_K
    assert seccomp.program("riscv64") is None  # no filter: docs/security.md says what holds then


async def test_everyday_tools_run_under_the_socket_filter(tmp_path: Path):
    """Stream socket pairs (asyncio's self-pipe, subprocess pipes), python, pytest, git and rg."""
    (tmp_path / "test_one.py").write_text("import asyncio\n\ndef test_loop():\n"
                                          "    assert asyncio.run(asyncio.sleep(0, 'ok')) == 'ok'\n")
    pair = "import socket; a, b = socket.socketpair(); a.send(b'pair'); print(b.recv(4).decode())"
    command = (f'python3 -c "{pair}" && '
               "python -m pytest -q -p no:cacheprovider test_one.py && "
               "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm one && "
               "git log --oneline | wc -l && rg -l loop")
    result = await run(tmp_path, command, timeout=60)
    assert result.ok, result.output
    assert "pair" in result.output and "1 passed" in result.output and "test_one.py" in result.output
