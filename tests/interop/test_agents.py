"""Real Claude Code and real Codex CLI (from npm, pinned) drive `clover-code serve --engine
scripted:FILE`: Claude Code over Messages writes a file with its Write tool and runs Bash, Codex
over Responses runs exec_command and applies a freeform apply_patch; each ends on the server's
final text with exit 0. What happened is judged outside the agents: the files in the
workspace, the marker the command wrote, their exit codes and their printed results.

Run with tools/interop_agents.sh (CI does); skipped only where node or npm is missing. The
clients install once into CLOVER_INTEROP_CACHE (default ~/.cache/clover-code/interop).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.serving import serve_process

pytestmark = pytest.mark.interop

CLAUDE_CODE = ("@anthropic-ai/claude-code", "2.1.197", "claude")
CODEX = ("@openai/codex", "0.169.0", "codex")
KEY = "k-interop-5"


def installed(package: str, version: str, command: str) -> Path:
    """The agent's command, installed with npm into the cache on first use."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("node and npm are needed for the agents' interop tests")
    cache = Path(os.environ.get("CLOVER_INTEROP_CACHE", Path.home() / ".cache/clover-code/interop"))
    prefix = cache / f"{package.rsplit('/', 1)[-1]}-{version}"
    binary = prefix / "node_modules" / ".bin" / command
    if not binary.exists():
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", str(prefix), f"{package}@{version}"],
                       check=True, capture_output=True, timeout=900)
    found = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    assert version in found.stdout, found.stdout + found.stderr
    return binary


@contextmanager
def serve(replies: list, folder: Path) -> Iterator[str]:
    """`clover-code serve --engine scripted:FILE --api-key KEY` on a free port; yields its root URL."""
    script = folder / "replies.jsonl"
    script.write_text("".join(json.dumps(r) + "\n" for r in replies))
    with serve_process("--engine", f"scripted:{script}", "--api-key", KEY) as url:
        yield url.removesuffix("/v1")


def call(name: str, **arguments: object) -> dict:
    return {"content": "", "tool_calls": [{"name": name, "arguments": arguments}]}


def test_claude_code_writes_a_file_and_runs_bash(tmp_path):
    claude = installed(*CLAUDE_CODE)
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    home.mkdir()
    replies = [{**call("Write", file_path=str(work / "hello.txt"), content="hello from clover\n"),
                "content": "I'll write the file."},
               call("Bash", command="cat hello.txt > bash-ran.txt", description="Copy the file"),
               "Done: hello.txt is written and checked."]
    with serve(replies, tmp_path) as root:
        env = {**os.environ, "HOME": str(home), "ANTHROPIC_BASE_URL": root, "ANTHROPIC_AUTH_TOKEN": KEY,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
        run = subprocess.run([str(claude), "-p", "write hello.txt, then copy it with bash", "--output-format", "json",
                              "--permission-mode", "acceptEdits", "--allowedTools", "Write", "Bash"],
                             cwd=work, env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["result"] == "Done: hello.txt is written and checked." and result["is_error"] is False
    assert (work / "hello.txt").read_text() == "hello from clover\n"
    assert (work / "bash-ran.txt").read_text() == "hello from clover\n"  # Bash ran in the workspace


def codex_home(folder: Path, root: str, model: str) -> Path:
    home = folder / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'model = "{model}"\nmodel_provider = "clover"\n\n[model_providers.clover]\nname = "clover-code serve"\n'
        f'base_url = "{root}/v1"\nwire_api = "responses"\nenv_key = "CLOVER_SERVE_KEY"\n')
    return home


def run_codex(codex: Path, home: Path, work: Path, task: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home.parent), "CODEX_HOME": str(home), "CLOVER_SERVE_KEY": KEY}
    return subprocess.run([str(codex), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                           task], cwd=work, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)


def test_codex_runs_exec_command(tmp_path):
    codex = installed(*CODEX)
    work = tmp_path / "work"
    work.mkdir()
    replies = [call("exec_command", cmd=f"echo ran > {work / 'ran.txt'}"), "Done: the command ran."]
    with serve(replies, tmp_path) as root:
        run = run_codex(codex, codex_home(tmp_path, root, "clover"), work, "run a command")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith("Done: the command ran.")
    assert (work / "ran.txt").read_text() == "ran\n"


def test_codex_applies_a_freeform_patch(tmp_path):
    codex = installed(*CODEX)
    work = tmp_path / "work"
    work.mkdir()
    patch = f"*** Begin Patch\n*** Add File: {work / 'patched.txt'}\n+patched by clover\n*** End Patch\n"
    replies = [call("apply_patch", input=patch), "Done: patched."]
    with serve(replies, tmp_path) as root:  # for this model Codex declares apply_patch as a freeform tool
        run = run_codex(codex, codex_home(tmp_path, root, "gpt-5.5"), work, "add a file")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().endswith("Done: patched.")
    assert (work / "patched.txt").read_text() == "patched by clover\n"
