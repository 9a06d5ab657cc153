"""Agents on real temp git repositories with real tools, driven by a ScriptedEngine."""

from pathlib import Path

import pytest

from clover_code.agent.loop import Agent, AgentSettings
from clover_code.agent.permissions import Permissions
from clover_code.engine.scripted import ScriptedEngine
from clover_code.tools import Registry, ToolContext, default_registry
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoints import Checkpoints
from tests.support.agent import RecordingApprover


@pytest.fixture
def make_agent(git_repo: Path, tmp_path: Path):
    def make(replies, *, approval="full-auto", approver=None, registry: Registry | None = None,
             engine=None, session=None, rules=(), system_prompt="You are a test agent.", conversation=None,
             **settings):
        engine = engine or ScriptedEngine(replies)
        ctx = ToolContext(Workspace(git_repo), sandbox=True, shell_timeout=30,
                          checkpoints=Checkpoints(git_repo, cache_dir=tmp_path / "cache"))
        return Agent(engine, registry or default_registry(), ctx, approver or RecordingApprover(),
                     AgentSettings(approval=approval, **settings), session=session,
                     system_prompt=system_prompt, permissions=Permissions(approval, list(rules)),
                     conversation=conversation)
    return make
