"""Custom commands and skills in the TUI (issue 45, items 1 and 2): a user's and a repository's
commands join `/help` and the `/` popup with their description and source, running one sends its
filled-in template, a built-in name wins with the clash said once, and `/skills` lists skills."""

from __future__ import annotations

from pathlib import Path

import pytest

from clover_code.ui.tui.widgets.completion_popup import CompletionPopup
from tests.support.tui import idle, notes, ready, scripted_app, send, wait_for

SIZE = (100, 30)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def commands(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    user = tmp_path / "xdg" / "clover-code" / "commands"
    write(user / "explain.md", "---\ndescription: Explain a file\nargument-hint: FILE\n---\nExplain $1 briefly.\n")
    write(user / "help.md", "---\ndescription: my own help\n---\nHelp me.\n")
    write(repo / ".clover" / "commands" / "frontend" / "review.md",
          "---\ndescription: Review a component\n---\nReview $ARGUMENTS for accessibility.\n")
    return repo


async def test_commands_are_listed_offered_and_sent(commands: Path):
    app = scripted_app(commands, ["Explained.", "Reviewed."])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "/help")
        await wait_for(pilot, lambda: "/explain FILE" in notes(app))
        shown = notes(app)
        assert "Explain a file (user)" in shown
        assert "/frontend:review" in shown and "Review a component (project)" in shown
        popup = app.query_one(CompletionPopup)
        await pilot.press(*"/fro")
        await wait_for(pilot, lambda: popup.is_open)
        assert [c.value for c in popup.items] == ["/frontend:review"]
        await pilot.press("escape", "ctrl+c")
        await send(pilot, "/explain app.py")
        await idle(pilot)
        await send(pilot, "/frontend:review the navbar")
        await idle(pilot)
        sent = [r.messages[-1]["content"] for r in app.agent.engine.requests]
        assert sent == ["Explain app.py briefly.", "Review the navbar for accessibility."]


async def test_a_builtin_name_wins_and_the_clash_is_said_once(commands: Path):
    app = scripted_app(commands, [])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await wait_for(pilot, lambda: "built-in /help" in notes(app))
        await send(pilot, "/help")
        await wait_for(pilot, lambda: "/explain" in notes(app))
        assert notes(app).count("built-in /help has that name") == 1
        assert "my own help" not in notes(app)  # /help is still the built-in help
        assert not app.agent.engine.requests


async def test_skills_lists_them(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    write(repo / ".agents" / "skills" / "pdf-forms" / "SKILL.md",
          "---\nname: pdf-forms\ndescription: Fill in PDF forms.\n---\nBODY\n")
    app = scripted_app(repo, [])
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "/skills")
        await wait_for(pilot, lambda: "pdf-forms" in notes(app))
        assert "Fill in PDF forms." in notes(app) and ".agents/skills" in notes(app) and "BODY" not in notes(app)
