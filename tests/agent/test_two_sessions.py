"""Two sessions in one repository, each an agent with its own checkpoints, on a real temp
repository with the real tools (issue 42, item 8): what one session's model writes while the
other is at work is never the other's to show in /diff, rewind or redo."""

import asyncio
from collections.abc import Awaitable, Callable

from clover_code.agent.context import Conversation
from clover_code.agent.session import SessionLog
from clover_code.engine.scripted import ScriptedEngine
from tests.support.agent import call, collect


class Meanwhile(ScriptedEngine):
    """A model that, before writing its reply to request `at` (0: the first), lets `job` run:
    the other session at work while this one's model is thinking."""

    def __init__(self, replies: list, at: int, job: Callable[[], Awaitable[object]]):
        super().__init__(replies)
        self.at, self.job = at, job

    async def stream(self, request):
        if len(self.requests) == self.at:
            await self.job()
        async for block in super().stream(request):
            yield block


def edit(path: str, old: str, new: str) -> list[str]:
    """One edit as the model makes it: read the file, then edit it."""
    return [call("read_file", path=path), call("edit_file", path=path, old_string=old, new_string=new)]


def test_a_file_the_other_session_changed_between_my_calls_is_not_mine(git_repo, make_agent):
    (git_repo / "calc.py").write_text("a - b\n")
    (git_repo / "theirs.py").write_text("theirs v0\n")
    other = make_agent([*edit("theirs.py", "v0", "v1"), "Done."])
    mine = make_agent([], engine=Meanwhile([*edit("calc.py", "a - b", "a + b"), *edit("calc.py", "a + b", "a * b"),
                                            "Done."], 2, lambda: collect(other, "bump theirs")))
    asyncio.run(collect(mine, "make it multiply"))
    assert (git_repo / "theirs.py").read_text() == "theirs v1\n" and (git_repo / "calc.py").read_text() == "a * b\n"

    diff = mine.ctx.checkpoints.diff_since_start()
    assert "+a * b" in diff and "theirs" not in diff
    event = asyncio.run(mine.rewind(0, "code"))
    assert (git_repo / "calc.py").read_text() == "a - b\n" and "restored: calc.py" in event.files
    assert (git_repo / "theirs.py").read_text() == "theirs v1\n" and "theirs" not in event.files
    assert "Another clover-code session is at work in this folder" in event.files


def test_my_file_the_other_session_changed_in_between_is_left_and_named(git_repo, make_agent):
    """Someone else's edit between two of mine (or before my first, within my turn) would be
    lost by putting the file back: it is left as it is, and the summary names it."""
    (git_repo / "shared.py").write_text("v0\n")
    (git_repo / "early.py").write_text("e0\n")
    (git_repo / "calc.py").write_text("a - b\n")
    other = make_agent([*edit("shared.py", "v1", "v1 and theirs"), *edit("early.py", "e0", "e1 theirs"), "Done."])
    mine = make_agent([], engine=Meanwhile([*edit("shared.py", "v0", "v1"), *edit("calc.py", "a - b", "a + b"),
                                            *edit("shared.py", "theirs", "theirs, then mine"),
                                            *edit("early.py", "theirs", "mine"), "Done."],
                                           3, lambda: collect(other, "add to shared")))
    asyncio.run(collect(mine, "work"))
    assert (git_repo / "shared.py").read_text() == "v1 and theirs, then mine\n"

    event = asyncio.run(mine.rewind(0, "code"))
    assert (git_repo / "calc.py").read_text() == "a - b\n"
    assert (git_repo / "shared.py").read_text() == "v1 and theirs, then mine\n"
    assert (git_repo / "early.py").read_text() == "e1 mine\n"
    assert "2 left as they are (someone else changed them too): early.py, shared.py" in event.files


def test_my_file_the_other_session_changed_between_my_turns_is_left(git_repo, make_agent):
    (git_repo / "shared.py").write_text("v0\n")
    other = make_agent([*edit("shared.py", "v1", "v1 theirs"), "Done."])
    mine = make_agent([*edit("shared.py", "v0", "v1"), "One.", *edit("shared.py", "theirs", "theirs v2"), "Two."])
    asyncio.run(collect(mine, "first"))
    asyncio.run(collect(other, "theirs"))
    asyncio.run(collect(mine, "second"))
    event = asyncio.run(mine.rewind(0, "code"))
    assert (git_repo / "shared.py").read_text() == "v1 theirs v2\n"
    assert "left as they are (someone else changed them too): shared.py" in event.files
    asyncio.run(mine.redo())
    event = asyncio.run(mine.rewind(1, "code"))  # the second turn alone is all mine
    assert (git_repo / "shared.py").read_text() == "v1 theirs\n" and "restored: shared.py" in event.files


def test_a_redo_leaves_what_the_other_session_changed_after_the_rewind(git_repo, make_agent):
    (git_repo / "calc.py").write_text("a - b\n")
    (git_repo / "notes.py").write_text("n0\n")
    mine = make_agent([*edit("calc.py", "a - b", "a + b"), *edit("notes.py", "n0", "n1"), "Done."])
    asyncio.run(collect(mine, "work"))
    asyncio.run(mine.rewind(0, "code"))
    assert (git_repo / "notes.py").read_text() == "n0\n"
    other = make_agent([*edit("notes.py", "n0", "n0 theirs"), *edit("README.md", "hello", "hello there"), "Done."])
    asyncio.run(collect(other, "theirs"))

    redone = asyncio.run(mine.redo())
    assert redone is not None and (git_repo / "calc.py").read_text() == "a + b\n"
    assert (git_repo / "notes.py").read_text() == "n0 theirs\n"  # not clobbered by the redo
    assert (git_repo / "README.md").read_text() == "hello there\n"  # not the rewind's: never touched
    assert "restored: calc.py" in redone.files
    assert "1 left as they are (someone else changed them too): notes.py" in redone.files


def test_a_resumed_session_still_knows_what_was_not_its_own(git_repo, make_agent):
    """What the other session changed between my calls is written down with my checkpoints:
    after a resume (a new agent on my session log) the rewind still leaves it."""
    (git_repo / "calc.py").write_text("a - b\n")
    (git_repo / "theirs.py").write_text("theirs v0\n")
    other = make_agent([*edit("theirs.py", "v0", "v1"), "Done."])
    log = SessionLog.create(git_repo)
    mine = make_agent([], session=log, engine=Meanwhile([*edit("calc.py", "a - b", "a + b"),
                                                         *edit("calc.py", "a + b", "a * b"), "Done."],
                                                        2, lambda: collect(other, "bump theirs")))
    asyncio.run(collect(mine, "work"))
    log.close()

    resumed_log = SessionLog.open(git_repo, log.id)
    conversation = Conversation("You are a test agent.")
    for logged in resumed_log.events():  # as clover-code --resume replays it
        conversation.apply(logged)
    resumed = make_agent([], session=resumed_log, conversation=conversation)
    event = asyncio.run(resumed.rewind(0, "code"))
    assert (git_repo / "calc.py").read_text() == "a - b\n" and "restored: calc.py" in event.files
    assert (git_repo / "theirs.py").read_text() == "theirs v1\n"
