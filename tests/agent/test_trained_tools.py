"""A checkpoint that names the tools it was trained to call (`clover_trained_tools`) is offered
only those: the demo model, trained on fourteen tools, went astray (rename-function unsolved)
when its prompt also offered the todo list and the `task` tool. A model that names none gets
every tool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clover_code.agent.permissions import approver_for_mode
from clover_code.engine import EngineError, EngineInfo
from clover_code.engine.embedded.engine import EmbeddedEngine
from clover_code.engine.scripted import ScriptedEngine
from clover_code.models import demo_model
from clover_code.settings import Settings
from clover_code.wiring.assemble import build_agent


def agent_on(engine, repo: Path):
    return build_agent(Settings(engine="scripted", sandbox=False), repo, approver_for_mode("ask"), engine=engine)


def test_the_demo_model_is_offered_the_tools_it_was_trained_with(git_repo: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    model = demo_model()
    assert model is not None
    trained = json.loads((model / "config.json").read_text())["clover_trained_tools"]
    agent = agent_on(EmbeddedEngine(model), git_repo)
    assert sorted(agent.registry.tools) == sorted(trained)
    assert "todo_write" not in agent.registry.tools and "task" not in agent.registry.tools
    assert "# Sub-agents" not in agent.conversation.system


def test_a_model_that_names_no_tools_gets_every_tool(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    agent = agent_on(ScriptedEngine([]), git_repo)
    assert {"todo_write", "task", "read_file"} <= set(agent.registry.tools)


def test_a_malformed_tool_list_is_an_engine_error_naming_the_key(tiny_attention_ckpt: Path, tmp_path: Path):
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_attention_ckpt, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "clover_trained_tools": "read_file"}))
    with pytest.raises(EngineError, match="clover_trained_tools"):
        EmbeddedEngine(folder)


def test_engine_info_names_no_tools_by_default():
    assert EngineInfo("remote", "m").trained_tools is None
