"""Harbor: a task folder run locally through `clover-code eval` (verifier paths rewritten, the
reward read), and the installed-agent adapter's command, install script and context, offline."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from clover_code.eval.harbor_agent import INSTALL_TEMPLATE, context_values, model_part, run_command
from tests.support.evals import eval_env, results, run_eval, tool_call, write_replies

VERIFIER = """#!/bin/bash
# As Harbor runs it: the tests in /tests, the work in the WORKDIR, the reward to /logs/verifier.
if [ "$(cat /app/out.txt)" = "hello from $(cat /tests/expected_name.txt)" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "out.txt is: $(cat /app/out.txt 2>&1)"
  echo 0 > /logs/verifier/reward.txt
fi
"""


def harbor_task(root: Path, name: str, dockerfile: str) -> Path:
    folder = root / name
    for sub in ("environment", "tests", "solution"):
        (folder / sub).mkdir(parents=True)
    (folder / "instruction.md").write_text("Write `hello from NAME` to out.txt, NAME being the one in name.txt.\n")
    (folder / "task.toml").write_text('version = "1.0"\n[metadata]\ncategory = "files"\n'
                                      "[agent]\ntimeout_sec = 120.0\n[verifier]\ntimeout_sec = 60.0\n")
    (folder / "environment" / "Dockerfile").write_text(dockerfile)
    (folder / "environment" / "name.txt").write_text("clover\n")
    (folder / "tests" / "test.sh").write_text(VERIFIER)
    (folder / "tests" / "expected_name.txt").write_text("clover\n")
    (folder / "solution" / "solve.sh").write_text("echo 'hello from clover' > out.txt\n")
    return folder


def test_a_harbor_task_runs_locally_and_one_that_needs_docker_says_so(tmp_path):
    local = harbor_task(tmp_path, "hello", "FROM python:3.12-slim\nWORKDIR /app\nCOPY name.txt /app/\n")
    docker = harbor_task(tmp_path, "apt", "FROM ubuntu:24.04\nRUN apt-get install -y jq\nWORKDIR /app\n")
    engine = tmp_path / "engine"
    listing = "ls -a; cat name.txt"
    write_replies(engine / "hello.jsonl", [
        tool_call("run_shell", command=listing),
        tool_call("write_file", path="out.txt", content="hello from wrong\n"),
        "Done.",
    ])
    write_replies(engine / "hello.try2.jsonl", [
        tool_call("read_file", path="out.txt") + "\n" + tool_call("write_file", path="out.txt",
                                                                  content="hello from clover\n"),
        "Fixed.",
    ])
    out = tmp_path / "out"
    proc = run_eval(str(local), str(docker), "--engine", f"s=scripted:{engine}", "--out", str(out), tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr  # needing Docker is no error of the run
    first, second = results(out)
    assert (first["status"], first["reward"], second["status"], second["reward"]) == ("failed", 0.0, "passed", 1.0)
    assert first["family"] == "files" and first["format"] == "harbor"
    shown = next(e["output"] for e in map(json.loads, (out / "logs/s/hello/try1.events.jsonl").read_text().splitlines())
                 if e["type"] == "ToolFinished")
    assert "name.txt" in shown and "clover" in shown
    assert "tests" not in shown and "solution" not in shown and "Dockerfile" not in shown
    retry = (out / "logs/s/hello/try2.prompt.md").read_text()
    assert "out.txt is: hello from wrong" in retry and "reward 0" in retry
    assert "apt: environment/Dockerfile runs `RUN apt-get install -y jq`" in proc.stderr
    assert "needs Docker" in (out / "report.md").read_text()


def test_the_adapter_command_quotes_the_instruction_and_names_the_engine():
    instruction = "Fix it: don't `rm -rf /`; echo \"$HOME\" $(id)\nline two"
    command = run_command(instruction, endpoint="http://gpu:8000/v1", model=model_part("openai/clover-35b"),
                          max_turns=40)
    assert command.startswith("mkdir -p /logs/agent && clover-code --task ")
    argv = shlex.split(command.split("&&", 1)[1].split(">", 1)[0])
    assert argv[argv.index("--task") + 1] == instruction
    assert argv[argv.index("--endpoint") + 1] == "http://gpu:8000/v1"
    assert argv[argv.index("--model") + 1] == "clover-35b"
    assert {"--no-sandbox", "full-auto", "stream-json"} <= set(argv) and argv[-1] == "40"
    assert command.endswith("> /logs/agent/clover-code.events.jsonl 2> /logs/agent/clover-code.stderr.txt")
    assert model_part("bare") == "bare" and model_part(None) is None


def test_the_adapter_command_runs_clover_code_and_its_events_fill_harbors_context(tmp_path, git_repo):
    replies = write_replies(tmp_path / "r.jsonl", [tool_call("read_file", path="README.md"), "It says hello."])
    clover = Path(sys.executable).parent / "clover-code"
    command = run_command("What does the README say?", engine=f"scripted:{replies}", logs=str(tmp_path / "logs"),
                          executable=str(clover))
    done = subprocess.run(["bash", "-c", command], cwd=git_repo, env=eval_env(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, (tmp_path / "logs" / "clover-code.stderr.txt").read_text()
    values = context_values(tmp_path / "logs" / "clover-code.events.jsonl", price=(3.0, 15.0))
    assert values["n_input_tokens"] > 1000 and values["n_output_tokens"] > 0
    assert values["cost_usd"] == pytest.approx(values["n_input_tokens"] * 3e-6 + values["n_output_tokens"] * 15e-6)
    meta = values["metadata"]["clover_code"]
    assert meta["exit_reason"] == "done" and meta["tool_calls"] == 1 and meta["turns"] == 2


FAKE_HARBOR = {  # just the names the adapter imports, shaped as Harbor's are
    "harbor/__init__.py": "",
    "harbor/agents/__init__.py": "",
    "harbor/agents/installed/__init__.py": "",
    "harbor/agents/installed/base.py": (
        "from dataclasses import dataclass\n"
        "@dataclass\nclass ExecInput:\n    command: str\n    cwd: str | None = None\n"
        "    env: dict | None = None\n    timeout_sec: int | None = None\n"
        "class BaseInstalledAgent:\n"
        "    def __init__(self, logs_dir, model_name=None, *args, **kwargs):\n"
        "        self.logs_dir, self.model_name = logs_dir, model_name\n"
        "    @property\n    def _template_variables(self):\n        return {'version': 'latest'}\n"),
}
PROBE = """
import json, pathlib, sys, types
from clover_code.eval.harbor_agent import CloverCodeAgent, EVENTS
agent = CloverCodeAgent(logs_dir=pathlib.Path(sys.argv[1]), model_name="openai/clover", endpoint="http://gpu/v1",
                        max_turns="9", price_in="1", price_out="2", install_spec="/wheels/clover_code.whl")
(cmd,) = agent.create_run_agent_commands("do the task")
context = types.SimpleNamespace(n_input_tokens=None, n_output_tokens=None, cost_usd=None, metadata=None)
agent.populate_context_post_run(context)
print(json.dumps({"name": agent.name(), "cmd": cmd.command, "env": cmd.env, "vars": agent._template_variables,
                  "template": str(agent._install_agent_template_path), "in": context.n_input_tokens,
                  "out": context.n_output_tokens, "cost": context.cost_usd, "meta": context.metadata}))
"""


def test_the_adapter_class_on_harbors_interface(tmp_path):
    for rel, text in FAKE_HARBOR.items():
        (tmp_path / "site" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "site" / rel).write_text(text)
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "clover-code.events.jsonl").write_text(
        json.dumps({"type": "BlockCommitted", "block": {"tokens": 40, "forward_passes": 5, "index": 0,
                                                        "seconds_since_start": 0.2, "prompt_tokens": 2000}}) + "\n"
        + json.dumps({"type": "Result", "exit_code": 0, "exit_reason": "done", "turns": 1}) + "\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site"), "CLOVER_API_KEY": "sk-from-host"}
    done = subprocess.run([sys.executable, "-c", PROBE, str(logs)], capture_output=True, text=True, env=env,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["name"] == "clover-code" and Path(got["template"]) == INSTALL_TEMPLATE
    assert "--endpoint http://gpu/v1 --model clover --max-turns 9" in got["cmd"]
    assert got["env"] == {"CLOVER_API_KEY": "sk-from-host"}  # the key travels in the environment, not argv
    assert got["vars"]["install_spec"] == "/wheels/clover_code.whl" and got["vars"]["version"] == "latest"
    assert (got["in"], got["out"]) == (2000, 40) and got["cost"] == pytest.approx(2000e-6 + 80e-6)
    assert got["meta"]["clover_code"]["tpf"] == 8.0


def test_the_install_script_renders_to_valid_bash(tmp_path):
    script = jinja2.Template(INSTALL_TEMPLATE.read_text()).render(install_spec="clover-code==0.1.0",
                                                                   pip_args="--no-cache-dir", version="0.1.0")
    path = tmp_path / "install.sh"
    path.write_text(script)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    assert 'pip install -q --disable-pip-version-check --no-cache-dir "clover-code==0.1.0"' in script
    assert script.rstrip().endswith('echo "INSTALL SUCCESS!"')
