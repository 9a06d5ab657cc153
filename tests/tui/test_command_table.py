"""The command table (issue 42, item 3): one entry per command, read by `/help`, the `/` popup and
dispatch; a command registered on a running app (as a user's own will be) joins all three."""

from __future__ import annotations

import pytest

from clover_code.settings import ConfigError
from clover_code.ui.tui.commands.host import CommandHost
from clover_code.ui.tui.commands.table import Command
from clover_code.ui.tui.widgets.completion_popup import CompletionPopup
from clover_code.ui.tui.widgets.input_editor import InputEditor
from tests.support.tui import notes, ready, scripted_app, send, wait_for

SIZE = (100, 30)


async def test_a_registered_command_is_listed_offered_and_run(repo):
    app = scripted_app(repo, [])
    ran: list[str] = []

    def deploy(host: CommandHost, argument: str) -> None:
        ran.append(argument)
        host.note(f"deploying to {argument or 'staging'}")

    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        app.commands.register(Command("/deploy", "ship the work tree", deploy, "[ENV]"))
        await send(pilot, "/help")
        await wait_for(pilot, lambda: "/deploy [ENV]" in notes(app))
        assert "  /deploy [ENV]      ship the work tree" in notes(app)  # in the column of the others
        popup = app.query_one(CompletionPopup)
        await pilot.press(*"/dep")
        await wait_for(pilot, lambda: popup.is_open)
        assert [(c.value, c.detail) for c in popup.items] == [("/deploy", "[ENV]  ship the work tree")]
        await pilot.press("enter")
        await wait_for(pilot, lambda: "deploying to staging" in notes(app))
        await send(pilot, "/DEPLOY prod")
        await wait_for(pilot, lambda: "deploying to prod" in notes(app))
        assert ran == ["", "prod"] and app.query_one(InputEditor).text == ""
        await send(pilot, "/deploys")
        await wait_for(pilot, lambda: "unknown command /deploys; /help lists them" in notes(app))


@pytest.mark.parametrize(("name", "aliases", "says"), [
    ("/help", (), "command /help is already defined"),
    ("/ship", ("/usage",), "command /usage is already defined"),  # an alias of /cost
    ("deploy", (), "must be one word after a slash"),
    ("/two words", (), "must be one word after a slash"),
])
def test_a_name_taken_or_malformed_is_refused(name, aliases, says):
    from clover_code.ui.tui.commands.builtin import builtin_commands

    table = builtin_commands()
    with pytest.raises(ConfigError, match=says):
        table.register(Command(name, "whatever", lambda host, argument: None, aliases=aliases))
    assert [c.name for c in table].count("/help") == 1 and table.find("/ship") is None


async def test_during_a_turn_a_command_runs_only_where_its_entry_allows(repo):
    app = scripted_app(repo, [" ".join(f"w{i}" for i in range(80))], delay=0.1)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot)
        await send(pilot, "write a lot")
        await wait_for(pilot, lambda: app.busy)
        await send(pilot, "/clear")  # it would change the conversation under the running turn
        await wait_for(pilot, lambda: any("press Esc to cancel it first" in str(n.message)
                                          for n in app._notifications))
        assert app.agent.conversation.messages  # not cleared
        await send(pilot, "/mode auto-edit")  # allowed during a turn
        await wait_for(pilot, lambda: app.agent.permissions.mode == "auto-edit")
        assert app.busy
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy)
