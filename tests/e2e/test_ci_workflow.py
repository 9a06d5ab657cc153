"""The README's GitHub Actions workflow, its agent step run as written: identity only from the
environment the step sets (no git config anywhere), against a real server on 127.0.0.1; the
agent's git_commit must land on the step's branch."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from clover_code.engine.scripted import ScriptedEngine
from clover_code.engine.wire.server import create_app
from clover_code.sandbox.bwrap import bwrap_problem
from tests.support.e2e import tool_call
from tests.support.serving import serve_app

README = Path(__file__).resolve().parents[2] / "README.md"
RUN_ID = "4242"

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox: {bwrap_problem()}")


def agent_step() -> tuple[dict[str, str], str]:
    """The `Run the agent` step of the README's workflow: its env (values as written) and script."""
    text = README.read_text(encoding="utf-8")
    workflow = text[text.index("### In CI: GitHub Actions"):]
    block = workflow[workflow.index("```yaml\n") + 8:workflow.index("\n```", workflow.index("```yaml"))]
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "- name: Run the agent")
    env: dict[str, str] = {}
    script: list[str] = []
    section = ""
    for line in lines[start + 1:]:
        if line.startswith("      - "):  # the next step
            break
        if line.startswith("        ") and not line.startswith("         "):
            section = line.strip()
            continue
        if section == "env:":
            key, _, value = line.strip().partition(":")
            env[key] = value.split("#")[0].strip()
        elif section == "run: |":
            script.append(line[10:])
    return env, "\n".join(script) + "\n"


def test_the_readme_workflow_commits_with_the_identity_it_sets(git_repo: Path, tmp_path: Path):
    env, script = agent_step()
    assert env["GIT_AUTHOR_NAME"] == "clover-code" and "clover-code --task" in script
    home = tmp_path / "home"  # a runner's home: no git config, no clover-code config
    home.mkdir()
    summary = tmp_path / "summary.md"
    replies = [tool_call("write_file", path="NOTES.md", content="written by the agent\n"),
               tool_call("git_commit", message="Add notes"), "Committed the notes."]
    with serve_app(create_app(ScriptedEngine(replies, model="tiny", block_size=8))) as url:
        values = {"${{ inputs.task }}": "Add a NOTES.md and commit it", "${{ secrets.CLOVER_ENDPOINT }}": url,
                  "${{ secrets.CLOVER_API_KEY }}": "unused-key"}
        step_env = {key: values.get(value, value) for key, value in env.items()}
        assert not any("${{" in value for value in step_env.values()), step_env
        runner = {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", "HOME": str(home),
                  "XDG_CONFIG_HOME": str(home / ".config"), "XDG_STATE_HOME": str(home / ".local" / "state"),
                  "GITHUB_STEP_SUMMARY": str(summary), "LANG": "C.UTF-8"}
        git_repo_config = subprocess.run(["git", "config", "--local", "--get-regexp", "^user\\."], cwd=git_repo,
                                         capture_output=True, text=True).stdout
        assert git_repo_config == ""  # the identity comes from the step's environment alone
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               script.replace("${{ github.run_id }}", RUN_ID)],
                              cwd=git_repo, env={**runner, **step_env}, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "exit: done" in summary.read_text()
    log = subprocess.run(["git", "log", "-1", "--format=%D|%an <%ae>|%cn <%ce>|%s"], cwd=git_repo,
                         capture_output=True, text=True, check=True).stdout.strip()
    assert re.fullmatch(rf"HEAD -> clover/{RUN_ID}\|clover-code <clover-code@users.noreply.github.com>\|"
                        r"clover-code <clover-code@users.noreply.github.com>\|Add notes", log), log
    assert (git_repo / "NOTES.md").read_text() == "written by the agent\n"
