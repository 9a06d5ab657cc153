"""Classes 4-7 of issue 31: what a sandboxed command can reach on the host.

Secrets in the environment, unix sockets of host services, credential files, and the
machine's processes and memory; each judged from outside the sandbox.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest

from clover_code.tools import Registry, ToolContext
from clover_code.tools.sandbox import limits
from clover_code.tools.sandbox.bwrap import bwrap_problem
from clover_code.tools.sandbox.limits import total_tasks
from clover_code.tools.sandbox.policy import SandboxPolicy
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
    result = await run(tmp_path, "bomb() { bomb | bomb & }; bomb; wait", SandboxPolicy(max_processes=64),
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
    monkeypatch.setattr(limits, "_own_cgroups", lambda: [])
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
    assert "limits each process to 2,048 MiB" in result.output
    small = await run(tmp_path, "python3 -c \"b = bytearray(200 * 1024**2); print('allocated')\"")
    assert small.ok and "allocated" in small.output
