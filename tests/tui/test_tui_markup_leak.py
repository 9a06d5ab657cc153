"""The TUI shows the agent's parse of a reply: no tool-call markup, however blocks cut it.

The case that once leaked: two calls in one reply, the first closing in the block where the
second opens, the second closing in the next block. A card for the first call ended the
message, and a fresh filter then read the second call's rest as plain text. And markup debris
(`"}}</tool_call>}}` after a closed call, a tag the reply's end cut off): never prose.
"""

from __future__ import annotations

from clover_code.ui.tui.widgets.assistant_message import AssistantMessage
from clover_code.ui.tui.widgets.tool_card import ToolCard
from tests.support.tui import idle, ready, scripted_app, send

MARKUP = ("<tool_call", "tool_call>", '"name"', '"arguments"', "README.md", "*.md", "}", "</")


async def test_two_calls_the_second_cut_by_a_block_show_no_markup(repo, second_call_cut):
    app = scripted_app(repo, [second_call_cut(8), "Finished."], approval="full-auto", block_size=8)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "read the readme")
        await idle(pilot)
        shown = [m.text for m in app.query(AssistantMessage)]
        assert [card.call.name for card in app.query(ToolCard)] == ["read_file", "glob"]
        assert " ".join(shown).split() == ["Reading", "it.", "Then", "Done.", "Finished."], shown
        assert not [m for m in MARKUP if any(m in text for text in shown)], shown


async def test_debris_after_a_call_is_not_shown_and_the_prose_after_it_is(repo, debris_cut):
    app = scripted_app(repo, [debris_cut(8), "Finished.</tool_call>"], approval="full-auto", block_size=8)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot)
        await send(pilot, "read the readme")
        await idle(pilot)
        shown = [m.text for m in app.query(AssistantMessage)]
        assert [card.call.name for card in app.query(ToolCard)] == ["read_file"]
        words = [w for w in " ".join(shown).split() if w != "word"]  # without the filler that places the cut
        assert words == ["Reading", "it.", "Then", "done.", "Finished."], shown
        assert not [m for m in MARKUP if any(m in text for text in shown)], shown
