"""Pilot tests of issue 45's todo list, plan-then-go and sub-agent card, on the real Agent
(build_agent) with a ScriptedEngine in a temp repository."""

from __future__ import annotations

import subprocess

from textual.widgets import Static

from clover_code.ui.tui.widgets.plan_choice import PlanChoice
from clover_code.ui.tui.widgets.todo_panel import TodoPanel
from clover_code.ui.tui.widgets.tool_card import ToolCard
from tests.support.tui import call, idle, plain, ready, scripted_app, send, wait_for

TODOS = [{"content": "read app.py and find where add subtracts instead of adding", "status": "done"},
         {"content": "change the sign in add so that it returns the sum of both of its arguments, "
                     "not their difference", "status": "in_progress"},
         {"content": "run the tests", "status": "pending"}]
READ = call("read_file", path="app.py")
FIX = call("edit_file", path="app.py", old_string="a - b", new_string="a + b")
PLAN = "Plan:\n1. In app.py, make add return a + b.\n2. Run the tests."


def panel_lines(app) -> list[str]:
    panel = app.query_one(TodoPanel)
    return [line.rstrip() for line in plain(panel.content).splitlines() if line.strip()]


def git_status(repo) -> str:
    return subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout


async def test_todo_list_pinned_while_working_folded_after_and_back_on_resume(repo):
    app = scripted_app(repo, [call("todo_write", todos=TODOS), {"content": "Working on it.", "delay": 0.3}])
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        panel = app.query_one(TodoPanel)
        await wait_for(pilot, lambda: panel.todos is not None and app.busy)
        assert panel.display and not panel.folded
        lines = panel_lines(app)
        assert lines[0] == "Todo 1/3 done"
        assert len(lines) == 4 and all(len(line) <= 80 for line in lines)  # one line each at 80 columns
        assert lines[2].startswith("▸ change the sign in add") and lines[2].endswith("…")  # cut to fit
        assert panel.region.y < app.editor.region.y  # above the editor
        await idle(pilot)
        assert panel.folded and panel.display
        (folded,) = panel_lines(app)
        assert folded.startswith("Todo 1/3 done · read app.py") and len(folded) <= 80
    resumed = scripted_app(repo, ["Again."], resume="last")
    async with resumed.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        panel = resumed.query_one(TodoPanel)
        await wait_for(pilot, lambda: panel.todos is not None)
        assert not panel.folded and "run the tests" in "\n".join(panel_lines(resumed))


async def test_plan_mode_ends_with_no_change_and_approve_switches_mode_and_runs(repo):
    before = git_status(repo)
    app = scripted_app(repo, [READ, FIX, PLAN, FIX, "Fixed: add returns a + b."], approval="plan")
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        choice = app.query_one(PlanChoice)
        await wait_for(pilot, lambda: choice.is_open)
        assert (repo / "app.py").read_text().endswith("a - b\n") and git_status(repo) == before
        assert not app.editor.display
        await idle(pilot)
        await pilot.press("1")  # approve, run in auto-edit
        await wait_for(pilot, lambda: app.agent.permissions.mode == "auto-edit")
        assert app.status.info.approval == "auto-edit"
        await wait_for(pilot, lambda: (repo / "app.py").read_text().endswith("a + b\n"))
        await idle(pilot)
        sent = [m["content"] for m in app.agent.engine.requests[-1].messages if m["role"] == "user"]
        assert sent[-1].startswith("The plan above is approved") and not choice.is_open


async def test_keep_planning_changes_nothing(repo):
    app = scripted_app(repo, [PLAN], approval="plan")
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        choice = app.query_one(PlanChoice)
        await wait_for(pilot, lambda: choice.is_open)
        await idle(pilot)
        await pilot.press("3")
        assert app.agent.permissions.mode == "plan" and app.editor.display and not app.busy
        assert len(app.agent.engine.requests) == 1


async def test_a_subagent_is_one_card_that_unfolds_to_its_transcript(repo):
    app = scripted_app(repo, [call("task", description="find add", prompt="Where is add?"),
                              call("read_file", path="app.py"), "add is in app.py.", "Found it."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "where is add?")
        await idle(pilot)
        cards = list(app.query(ToolCard))
        assert [c.call.name for c in cards] == ["task"]  # the sub-agent's read is inside its card
        card = cards[0]
        assert card.status == "ok" and card.collapsed
        body = plain(card.query_one(".tool-body", Static).content)
        assert "read_file app.py" in body and "add is in app.py." in body
