"""What a UI changes on an agent goes through the agent's own methods: the approval mode
(`set_mode`, the TUI's /mode and Shift+Tab) and letting go of it (`aclose`)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from clover_code.agent.loop import Agent
from clover_code.engine.scripted import ScriptedEngine
from clover_code.settings import Settings
from clover_code.wiring.assemble import build_agent
from tests.support.agent import RecordingApprover, call, collect


class ClosingEngine(ScriptedEngine):
    """A scripted engine that remembers being closed."""

    closed = False

    async def aclose(self) -> None:
        self.closed = True


def built(root: Path, replies: list[str], **settings) -> Agent:
    return build_agent(Settings(approval="ask", **settings), root, RecordingApprover(),
                       engine=ClosingEngine(replies))


def open_files() -> set[str]:
    fds = Path("/proc/self/fd")
    return {os.path.realpath(fds / fd) for fd in os.listdir(fds)}


def test_full_auto_runs_commands_sandboxed_whatever_was_chosen(git_repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    touch = call("run_shell", command=f"touch {outside}/marker")
    agent = built(git_repo, [touch, "done"], sandbox=False)
    assert not agent.ctx.sandbox and agent.ctx.git is not None and not agent.ctx.git.sandbox
    agent.set_mode("full-auto", sandbox=False)
    assert agent.permissions.mode == "full-auto" and agent.ctx.git.sandbox  # git (and checkpoints) too
    asyncio.run(collect(agent, "touch it"))
    assert not (outside / "marker").exists()  # the sandbox's root is read-only outside the workspace
    agent.set_mode("ask", sandbox=False)  # back to what the user chose
    assert agent.permissions.mode == "ask" and not agent.ctx.sandbox and not agent.ctx.git.sandbox


def test_aclose_lets_go_of_the_log_and_the_engine_unless_told_to_keep_it(git_repo):
    agent = built(git_repo, ["hi", "again"], sandbox=False)
    asyncio.run(collect(agent, "hello"))
    assert agent.session is not None and str(agent.session.path) in open_files()
    asyncio.run(agent.aclose(engine=False))  # another agent goes on with this engine
    assert str(agent.session.path) not in open_files() and not agent.engine.closed
    asyncio.run(agent.aclose())
    assert agent.engine.closed
