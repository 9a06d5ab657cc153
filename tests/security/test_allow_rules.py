"""Attack: a model rides an allow rule (`shell:git status*`, `edit:src/**`) to run or write
what the user never allowed: process substitution, redirections, an indented patch header,
a glob in a command approved with "always". The real `clover-code --task` process runs on a
temp repo in `ask` mode (headless: every question is answered no); the host is checked after."""

from __future__ import annotations

import asyncio
import json

import pytest

from clover_code.settings import Settings
from clover_code.wiring.assemble import build_agent
from tests.support.replies import scripted_engine, tool_call

pytestmark = pytest.mark.usefixtures("clean_env")




ATTACKS = [
    tool_call("run_shell", command="git status > pwned1"),
    tool_call("run_shell", command="git status >> pwned2"),
    tool_call("run_shell", command="git status <(touch pwned3)"),
    tool_call("run_shell", command="git status >(touch pwned4)"),
    tool_call("run_shell", command="git status\ntouch pwned5"),
    tool_call("apply_patch", patch="*** Begin Patch\n*** Add File: src/ok.py\n+x = 1\n"
                                   "  *** Add File: pwned6.py\n+import os\n*** End Patch"),
]


def test_allow_rules_do_not_cover_substitution_redirection_or_hidden_patch_headers(git_repo, tmp_path, cli):
    xdg = tmp_path / "xdg"
    (xdg / "clover-code").mkdir(parents=True)
    (xdg / "clover-code" / "config.toml").write_text('allow = ["shell:git status*", "edit:src/**"]\n')
    engine = scripted_engine(tmp_path / "r.jsonl", *ATTACKS, tool_call("run_shell", command="git status 2>&1"), "done")
    proc = cli("--task", "go", "--cwd", str(git_repo), "--approval", "ask", "--engine", engine,
               env={"XDG_CONFIG_HOME": str(xdg)})
    assert proc.returncode == 0, proc.stderr
    left = sorted(p.name for p in git_repo.rglob("pwned*"))
    assert left == [] and not (git_repo / "src").exists(), proc.stderr

    (log,) = (git_repo / ".clover" / "sessions").glob("*.jsonl")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    asked = [e["call"]["name"] for e in events if e["type"] == "ApprovalNeeded"]
    assert len(asked) == len(ATTACKS)  # each attack was asked (and declined), the plain command was not
    (ran,) = [e for e in events if e["type"] == "ToolFinished" and e["ok"]]
    assert json.loads(ran["call"]["arguments"])["command"] == "git status 2>&1"


class FirstAlways:
    """The user answers "always" once, then "no" to everything."""

    def __init__(self):
        self.asked: list[str] = []

    async def __call__(self, request) -> str:
        self.asked.append(request.preview)
        return "always" if len(self.asked) == 1 else "no"


def test_always_on_a_glob_command_does_not_allow_everything(git_repo, tmp_path):
    script = tmp_path / "r.jsonl"
    settings = Settings(engine=scripted_engine(script, tool_call("run_shell", command="* --version"),
                                       tool_call("run_shell", command="touch pwned"), "done"),
                        approval="ask", sandbox=False)
    approver = FirstAlways()
    agent = build_agent(settings, git_repo, approver)

    async def drain() -> None:
        async for _ in agent.run("go"):
            pass

    asyncio.run(drain())
    assert agent.permissions.rules == ["shell:[*]*"]  # a command starting with a literal `*`, not `**`
    assert approver.asked == ["* --version", "touch pwned"]  # the second call was still asked
    assert not (git_repo / "pwned").exists()
