"""Reviewing a long change before approving it (issue 34): at 80x24 a 200-line rewrite
scrolls inside the prompt, the y/a/n legend stays on screen, and the end can be reached."""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.widgets import Static

from clover_code.ui.tui.widgets.approval_prompt import ApprovalPrompt
from tests.support.tui import call, idle, ready, scripted_app, wait_for

OLD = "".join(f"value_{i} = {i}\n" for i in range(200))
NEW = "".join(f"value_{i} = {i * 2}\n" for i in range(200))


def on_screen(app, widget) -> bool:
    """The widget's whole region lies within the screen (nothing of it cut off)."""
    screen = app.screen.region
    region = widget.region
    return region.height > 0 and screen.contains_region(region)


async def test_a_200_line_diff_can_be_read_to_its_end_with_the_legend_in_view(repo):
    (repo / "big.py").write_text(OLD)
    replies = [call("read_file", path="big.py"), call("write_file", path="big.py", content=NEW), "Doubled."]
    app = scripted_app(repo, replies)
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        app.query_one("#input").insert("double every value")
        await pilot.press("enter")
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: prompt.request is not None)
        await pilot.pause(0.1)
        body = prompt.query_one("#approval-body", VerticalScroll)
        legend = prompt.query_one("#approval-legend", Static)
        assert on_screen(app, legend) and on_screen(app, prompt.query_one("#approval-head"))
        assert "[y] yes once" in str(legend.render()) and "[n] no" in str(legend.render())
        assert "more below" in str(legend.render())
        assert body.max_scroll_y > 0  # longer than the screen: it scrolls, nothing is cut
        await pilot.press("end")
        await pilot.pause(0.1)
        assert body.scroll_y == body.max_scroll_y
        assert "the end" in str(legend.render()) and on_screen(app, legend)
        await pilot.press("pageup", "home")
        await pilot.pause(0.1)
        assert body.scroll_y == 0
        assert (repo / "big.py").read_text() == OLD  # nothing written while reviewing
        await pilot.press("y")
        await idle(pilot)
        assert (repo / "big.py").read_text() == NEW
        assert app.query_one("#input").display and app.focused is app.query_one("#input")


async def test_the_legend_names_the_rule_that_always_adds(repo):
    app = scripted_app(repo, [call("run_shell", command="pytest -q tests"), "Ran."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        app.query_one("#input").insert("run the tests")
        await pilot.press("enter")
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: prompt.request is not None)
        await pilot.pause(0.05)
        assert prompt.request.always == "shell:pytest*"  # the agent's rule, carried by the request
        assert "[a] always, this session: shell:pytest*" in str(prompt.query_one("#approval-legend").render())
        await pilot.press("a")
        await idle(pilot)
        assert app.agent.permissions.rules == ["shell:pytest*"]


async def test_a_commit_approval_shows_the_files_not_json(repo):
    (repo / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "notes.txt").write_text("new file\n")
    app = scripted_app(repo, [call("git_commit", message="Fix add"), "Committed."])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        app.query_one("#input").insert("commit")
        await pilot.press("enter")
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: prompt.request is not None)
        await pilot.pause(0.05)
        shown = str(prompt.query_one("#approval-preview").render())
        assert "null" not in shown and '"paths"' not in shown and "{" not in shown, shown
        assert "Fix add" in shown and "app.py" in shown and "?? notes.txt" in shown, shown
        await pilot.press("n")
        await idle(pilot)
