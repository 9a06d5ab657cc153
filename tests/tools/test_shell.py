"""run_shell against a real bash, a real bubblewrap sandbox and real processes."""

from __future__ import annotations

import asyncio
import http.server
import shutil
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from clover_code.sandbox.bwrap import bwrap_problem
from clover_code.tools import Registry, ToolContext
from clover_code.tools.shell import TOOLS, OutputCap
from clover_code.tools.workspace import Workspace

needs_bwrap = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox here: {bwrap_problem()}")
MODES = [pytest.param(True, marks=needs_bwrap, id="sandboxed"), pytest.param(False, id="bare")]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def make_ctx(root: Path, sandbox: bool = True, timeout: float = 20.0) -> ToolContext:
    return ToolContext(Workspace(root), sandbox=sandbox, shell_timeout=timeout)


async def shell(ctx: ToolContext, command: str, **args):
    return await Registry(TOOLS).call("run_shell", {"command": command, **args}, ctx)


def marked_pids(mark: str) -> list[int]:
    """Host pids of live processes whose command line carries `mark`."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if mark.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:
                pass
    return found


async def wait_for_pids(mark: str, count: int, within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while len(pids := marked_pids(mark)) < count:
        assert time.monotonic() < deadline, f"processes marked {mark} never started"
        await asyncio.sleep(0.05)
    return pids


def two_sleepers(mark: str) -> str:
    """A background child and a foreground one, both findable on the host by `mark`
    (spelled so that only the sleeps, not the shell or bwrap command lines, carry it)."""
    head, tail = mark.split("-", 1)
    return f"h={head}; (exec -a $h-{tail} sleep 1000) & (exec -a $h-{tail} sleep 1000)"


@pytest.mark.parametrize("sandbox", MODES)
async def test_output_and_exit_code(ws: Path, sandbox: bool):
    result = await shell(make_ctx(ws, sandbox), "echo out; echo err >&2; exit 3")
    assert not result.ok
    assert result.data["exit_code"] == 3
    assert "out\nerr\n" in result.output and "[exit code 3]" in result.output
    ok = await shell(make_ctx(ws, sandbox), "true")
    assert ok.ok and ok.data["exit_code"] == 0 and "(no output)" in ok.output


@pytest.mark.parametrize("sandbox", MODES)
async def test_timeout_kills_the_whole_group(ws: Path, sandbox: bool):
    mark = f"clover-sleep-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    task = asyncio.create_task(shell(make_ctx(ws, sandbox), two_sleepers(mark), timeout=1.5))
    assert len(await wait_for_pids(mark, 2)) == 2
    result = await task
    assert time.monotonic() - started < 6
    assert result.data["timed_out"] and not result.ok
    assert "timed out after 1.5 s" in result.output
    await asyncio.sleep(0.2)
    assert marked_pids(mark) == [], "children outlived the timeout"


@pytest.mark.parametrize("sandbox", MODES)
async def test_cancellation_kills_the_whole_group(ws: Path, sandbox: bool):
    mark = f"clover-cancel-{uuid.uuid4().hex[:8]}"
    task = asyncio.create_task(shell(make_ctx(ws, sandbox), two_sleepers(mark)))
    await wait_for_pids(mark, 2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.2)
    assert marked_pids(mark) == []


async def test_timeout_argument_only_lowers_the_limit(ws: Path):
    result = await shell(make_ctx(ws, sandbox=False, timeout=0.5), "sleep 5", timeout=60)
    assert result.data["timed_out"] and "timed out after 0.5 s" in result.output


@pytest.mark.parametrize("sandbox", MODES)
async def test_endless_output_is_capped(ws: Path, sandbox: bool):
    result = await shell(make_ctx(ws, sandbox, timeout=1), "yes")
    assert result.data["timed_out"]
    assert len(result.output) < 40_000
    assert "cut from the middle" in result.output and result.output.startswith("y\ny\n")


async def test_cut_counts_bytes_and_lines(ws: Path):
    result = await shell(make_ctx(ws, sandbox=False), "seq 1 100000")
    assert result.ok
    lines = result.output.splitlines()
    notice = next(i for i, line in enumerate(lines) if "cut from the middle" in line)
    head, tail = lines[:notice], lines[notice + 1 : -1]
    assert head[0] == "1" and tail[-1] == "100000"
    cut_lines = int(tail[0]) - int(head[-1]) - 1  # whole lines, no half line kept
    assert f"({cut_lines:,} lines)" in lines[notice]
    total = len("".join(f"{i}\n" for i in range(1, 100001)).encode())
    kept = sum(len(x) + 1 for x in head + tail)
    assert f"{total - kept:,} bytes" in lines[notice]


def test_output_cap_keeps_short_output_whole():
    cap = OutputCap(10, 10)
    cap.feed(b"abc\n")
    cap.feed(b"def\n")
    assert cap.text() == "abc\ndef\n" and cap.cut_bytes == 0


@needs_bwrap
async def test_sandbox_has_no_network_not_even_host_loopback(ws: Path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        # The same commands reach the server from outside the sandbox ...
        probe = (f"python -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); "
                 "print('CONNECTED')\"")
        bare = await shell(make_ctx(ws, sandbox=False), probe)
        assert "CONNECTED" in bare.output
        # ... and not from inside.
        boxed = await shell(make_ctx(ws), probe)
        assert "CONNECTED" not in boxed.output and boxed.data["exit_code"] != 0
        if shutil.which("curl"):
            curl = await shell(make_ctx(ws), f"curl -sS -m 3 http://127.0.0.1:{port}/")
            assert curl.data["exit_code"] != 0
            dns = await shell(make_ctx(ws), "curl -sS -m 3 http://example.com/")
            assert dns.data["exit_code"] != 0
    finally:
        server.shutdown()
        server.server_close()


@needs_bwrap
async def test_sandbox_writes_only_the_workspace(ws: Path):
    outside = Path(tempfile.mkdtemp(prefix="clover-outside-", dir="/var/tmp"))
    marker = f"clover-private-{uuid.uuid4().hex[:8]}"
    try:
        result = await shell(make_ctx(ws), f"touch {outside}/x; echo hi > in.txt; echo t > /tmp/{marker}; "
                             f"cat /tmp/{marker}; touch $HOME/{marker}")
        assert "Read-only file system" in result.output
        assert not (outside / "x").exists()
        assert not (Path.home() / marker).exists()
        assert (ws / "in.txt").read_text() == "hi\n"
        assert "t\n" in result.output and not (Path("/tmp") / marker).exists()  # private /tmp
    finally:
        shutil.rmtree(outside)


@needs_bwrap
async def test_sandbox_keeps_git_read_only_but_readable(git_repo: Path):
    result = await shell(make_ctx(git_repo), "touch .git/hooks/pre-commit; git log --oneline | wc -l")
    assert "Read-only file system" in result.output
    assert not (git_repo / ".git/hooks/pre-commit").exists()
    assert result.output.splitlines()[-2].strip() == "1"


@needs_bwrap
async def test_sandbox_runs_the_venv_tools(ws: Path):
    (ws / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    run_tests = "PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q -p no:cacheprovider test_ok.py"
    result = await shell(make_ctx(ws), f"{run_tests} && rg --version")
    assert result.ok, result.output
    assert "1 passed" in result.output and "ripgrep" in result.output


async def test_cwd_must_stay_inside(ws: Path):
    (ws / "sub").mkdir()
    inside = await shell(make_ctx(ws, sandbox=False), "pwd", cwd="sub")
    assert inside.output.splitlines()[0] == str(ws / "sub")
    outside = await shell(make_ctx(ws, sandbox=False), "pwd", cwd="..")
    assert not outside.ok and "outside the workspace" in outside.output


async def test_refuses_without_bubblewrap_unless_unsandboxed(ws: Path, tmp_path: Path, monkeypatch):
    import clover_code.sandbox.bwrap as sandbox

    monkeypatch.setattr(sandbox, "bwrap_binary", lambda: None)  # neither a system nor a bundled bwrap
    bwrap_problem.cache_clear()
    try:
        refused = await shell(make_ctx(ws), "echo hi")
        assert not refused.ok and "bubblewrap" in refused.output and "not installed" in refused.output
        allowed = await shell(make_ctx(ws, sandbox=False), "echo hi")
        assert allowed.ok and allowed.output.startswith("hi\n") and not allowed.data["sandboxed"]
    finally:
        bwrap_problem.cache_clear()


@needs_bwrap
async def test_sandbox_keeps_project_settings_read_only(ws: Path):
    (ws / ".clover").mkdir()
    (ws / ".clover/config.toml").write_text("sandbox = true\n")
    result = await shell(make_ctx(ws), "echo 'sandbox = false' > .clover/config.toml")
    assert "Read-only file system" in result.output
    assert (ws / ".clover/config.toml").read_text() == "sandbox = true\n"


@pytest.mark.parametrize("sandbox", MODES)
async def test_output_is_streamed_as_it_is_printed(ws: Path, sandbox: bool):
    """`on_output` gets each piece when it is read, long before the command ends; a character
    split across reads comes out whole; the result still holds the whole (capped) output."""
    seen: list[tuple[float, str]] = []
    start = time.monotonic()
    ctx = make_ctx(ws, sandbox)
    ctx.on_output = lambda text: seen.append((time.monotonic() - start, text))
    command = "printf 'first\\n'; sleep 0.6; printf '\\xc3'; sleep 0.1; printf '\\xa9 done\\n'"
    result = await shell(ctx, command)
    assert result.ok and result.output.startswith("first\né done")
    assert seen[0][1].startswith("first") and seen[0][0] < seen[-1][0] - 0.4  # not at the end
    assert "".join(text for _, text in seen) == "first\né done\n"
