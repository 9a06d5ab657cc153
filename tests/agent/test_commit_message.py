"""`/commit` without a message (issue 42, item 14): the agent reads what a commit would take
through its git tools and asks the model for one line, outside the conversation."""

import pytest

from clover_code.agent.commit_message import cut_middle, first_line
from clover_code.tools import ToolError


async def test_the_model_drafts_one_line_from_the_changes(make_agent, git_repo):
    (git_repo / "README.md").write_text("hello, world\n")
    (git_repo / "notes.txt").write_text("new file\n")
    agent = make_agent(['Commit message: "Greet the world in the README."\n\nIt changes one line.'])
    message = await agent.draft_commit_message()
    assert message == "Greet the world in the README"
    asked = agent.engine.requests[-1]
    text = "\n".join(m["content"] for m in asked.messages)
    assert "+hello, world" in text and "-hello" in text and "notes.txt" in text  # the diff, and the new file
    assert not asked.tools and agent.conversation.messages == []  # not a turn: the conversation is untouched


async def test_nothing_to_commit_is_said_and_the_model_is_not_asked(make_agent):
    agent = make_agent([])
    with pytest.raises(ToolError, match="nothing to commit"):
        await agent.draft_commit_message()
    assert agent.engine.requests == []


def test_a_draft_is_one_printable_line():
    assert first_line("```\nFix add\x1b]52;c;aGk=\x07 to sum\u202e.\n```") == "Fix add]52;c;aGk= to sum"
    assert first_line("`Rename calc_total`") == "Rename calc_total"
    assert first_line("") == "" and first_line("```\n```") == ""
    assert len(first_line("word " * 100)) == 100


def test_long_changes_keep_their_start_and_end():
    text = "".join(f"line {i}\n" for i in range(5000))
    cut = cut_middle(text, 1000)
    assert cut.startswith("line 0\n") and cut.endswith("line 4999\n") and "characters left out" in cut
    assert len(cut) < 1100 and cut_middle("short", 1000) == "short"
