"""Skills (issue 45, item 2): SKILL.md folders from the user's config and the repository's
.clover/skills/ and .agents/skills/; the first request carries each one's name and description
only (recorded by a real HTTP server), the body comes when the model asks for it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from clover_code.agent.context import Conversation
from clover_code.agent.context_count import SKILLS, SYSTEM, count_parts
from clover_code.agent.instructions import render_skills, render_system_prompt
from clover_code.errors import ToolError
from clover_code.tokens import estimate_tokens
from clover_code.tools.skills import find_skills

BODIES = {"pdf-forms": "Fill forms with scripts/fill.py; BODY-PDF.",
          "release-notes": "Write notes from git log; BODY-RELEASE.",
          "db-migrate": "Run alembic upgrade head; BODY-DB."}


def skill(folder: Path, name: str, description: str, body: str, *, dirname: str | None = None) -> Path:
    path = folder / (dirname or name) / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
    return path


@pytest.fixture
def three_places(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One skill in each place, and what must not be listed."""
    xdg = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(xdg))
    user = xdg / "clover-code" / "skills"
    skill(user, "release-notes", "Draft release notes from the history.", BODIES["release-notes"])
    skill(git_repo / ".clover" / "skills", "db-migrate", "Apply database migrations.", BODIES["db-migrate"])
    skill(git_repo / ".agents" / "skills", "pdf-forms", "Fill in PDF forms.", BODIES["pdf-forms"])
    skill(git_repo / ".agents" / "skills", "release-notes", "A repository's impostor.", "IMPOSTOR")
    skill(git_repo / ".agents" / "skills", "Bad Name", "no valid name", "x", dirname="bad")
    skill(git_repo / ".agents" / "skills", "no-description", "", "x")
    leak = git_repo / ".agents" / "skills" / "leak"
    leak.mkdir()
    (leak / "SKILL.md").symlink_to(xdg / "clover-code" / "skills" / "release-notes" / "SKILL.md")
    return git_repo


def test_skills_come_from_three_places(three_places: Path):
    found = {s.name: s for s in find_skills(three_places)}
    assert set(found) == set(BODIES)  # invalid ones, and a symlink out of its folder, are left out
    assert found["release-notes"].description == "Draft release notes from the history."  # the user's wins
    assert (found["db-migrate"].source, found["pdf-forms"].source) == (".clover/skills", ".agents/skills")


def test_a_skills_folder_that_is_a_link_out_of_the_workspace_holds_nothing(git_repo: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    elsewhere = tmp_path / "elsewhere"
    skill(elsewhere, "private", "Someone's private notes.", "SECRET")
    (git_repo / ".agents").mkdir()
    (git_repo / ".agents" / "skills").symlink_to(elsewhere, target_is_directory=True)
    assert find_skills(git_repo) == []


async def test_a_skill_swapped_for_a_link_after_listing_reads_nothing(three_places: Path, tmp_path: Path):
    from clover_code.tools import ToolContext
    from clover_code.tools.skills import SkillTool
    from clover_code.tools.workspace import Workspace

    tool = SkillTool(find_skills(three_places))
    ctx = ToolContext(Workspace(three_places))
    assert BODIES["pdf-forms"] in (await tool.run(tool.Args(name="pdf-forms"), ctx)).output
    listed = three_places / ".agents" / "skills" / "pdf-forms" / "SKILL.md"
    listed.unlink()
    listed.symlink_to(tmp_path / "xdg" / "clover-code" / "skills" / "release-notes" / "SKILL.md")
    with pytest.raises(ToolError, match="can no longer be read"):
        await tool.run(tool.Args(name="pdf-forms"), ctx)
    with pytest.raises(ToolError, match="no skill named 'nope'"):
        await tool.run(tool.Args(name="nope"), ctx)


def test_the_listing_is_capped():
    many = [(f"skill-{i}", "d" * 200) for i in range(100)]
    listing = render_skills(many, max_chars=2000)
    assert len(listing) < 2300 and "more skills not listed" in listing
    assert render_skills([]) == ""


def test_cost_counts_the_listing_apart(three_places: Path):
    listing = render_skills([(s.name, s.description) for s in find_skills(three_places)])
    system = render_system_prompt(three_places, "ask", "", True, listing)
    parts = {p.name: p.tokens for p in count_parts(Conversation(system, []), None).parts}
    assert parts[SKILLS] == estimate_tokens(listing) > 0
    assert parts[SYSTEM] + parts[SKILLS] == estimate_tokens(system)
    bare_system = render_system_prompt(three_places, "ask")
    bare = {p.name: p.tokens for p in count_parts(Conversation(bare_system, []), None).parts}
    assert bare[SKILLS] == 0


class Recorder:
    """An OpenAI-compatible server on 127.0.0.1 that records each chat request and streams the
    next scripted reply."""

    def __init__(self, replies: list[str]):
        self.replies, self.requests = list(replies), []  # type: tuple[list[str], list[dict[str, Any]]]
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not self.path.endswith("/chat/completions"):
                    return self.do_GET()  # a probe for the context window: unknown here
                recorder.requests.append(body)
                text = recorder.replies.pop(0)
                chunks = [{"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
                          {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]
                data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data.encode())))
                self.end_headers()
                self.wfile.write(data.encode())

            def do_GET(self) -> None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    call = {"name": "skill", "arguments": {"name": "pdf-forms"}}  # tool_call() takes `name` itself
    server = Recorder([f"<tool_call>\n{json.dumps(call)}\n</tool_call>", "Filled."])
    threading.Thread(target=server.server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def test_names_and_descriptions_first_the_body_on_demand(three_places: Path, recorder: Recorder, tmp_path: Path, cli):
    proc = cli("--task", "fill the form", "--cwd", str(three_places), "--endpoint", recorder.url, "--model", "m",
               "--output-format", "json", env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert proc.returncode == 0, proc.stderr
    first, second = recorder.requests
    system = first["messages"][0]["content"]
    for name, description in (("release-notes", "Draft release notes from the history."),
                              ("db-migrate", "Apply database migrations."), ("pdf-forms", "Fill in PDF forms.")):
        assert f"- {name}: {description}" in system
    sent = json.dumps(first)
    assert not [body for body in [*BODIES.values(), "IMPOSTOR"] if body in sent]  # no body before it is asked
    assert "skill" in [t["function"]["name"] for t in first["tools"]]
    (result,) = [m for m in second["messages"] if m["role"] == "tool"]
    assert BODIES["pdf-forms"] in result["content"] and ".agents/skills/pdf-forms" in result["content"]
    assert "BODY-RELEASE" not in json.dumps(second) and "BODY-DB" not in json.dumps(second)


def test_no_skills_no_tool_and_no_listing(git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from clover_code.agent.permissions import approver_for_mode
    from clover_code.engine.scripted import ScriptedEngine
    from clover_code.settings import Settings
    from clover_code.wiring.assemble import build_agent

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    agent = build_agent(Settings(engine="scripted", sandbox=False), git_repo, approver_for_mode("ask"),
                        engine=ScriptedEngine([]))
    assert "skill" not in agent.registry.tools and "<skills>" not in agent.conversation.system


def test_a_description_written_as_a_block_reads_as_one_line(git_repo: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    path = git_repo / ".agents" / "skills" / "changelog" / "SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text("---\nname: changelog\ndescription: >\n  Keep CHANGELOG.md in\n  the house style.\n"
                    "license: MIT\n---\nBody.\n")
    (found,) = find_skills(git_repo)
    assert found.description == "Keep CHANGELOG.md in the house style."
