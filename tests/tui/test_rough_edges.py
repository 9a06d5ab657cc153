"""The TUI's last rough edges (issue 42, items 10, 13, 14), as a user meets them (Pilot, the real
Agent on a scripted engine, a temporary git repository): a question that outlived its turn, a
long diff's card pulling the view away from the reply, a card heading cut at 80 columns, the
editor's Ctrl+Home and a command typed after a rewound message, a first prompt from the
command line, `/diff`'s stat, `/commit` drafting its message, `/stats` after a cancel."""

from __future__ import annotations

import subprocess

from rich.console import Console

from clover_code.engine.scripted import ScriptedEngine
from clover_code.settings import Settings
from clover_code.ui.tui.app import make_app
from clover_code.ui.tui.widgets.approval_prompt import ApprovalPrompt
from clover_code.ui.tui.widgets.assistant_message import AssistantMessage
from clover_code.ui.tui.widgets.input_editor import InputEditor
from clover_code.ui.tui.widgets.tool_card import ToolCard
from clover_code.ui.tui.widgets.user_message import UserMessage
from clover_code.wiring.assemble import build_agent
from tests.support.tui import call, converse, idle, notes, ready, scripted_app, send, text_of, wait_for

NARROW = (80, 24)
READ = call("read_file", path="app.py")
FIX = call("edit_file", path="app.py", old_string="a - b", new_string="a + b")
SLOW = {"content": " ".join(f"word{i}" for i in range(120)), "delay": 0.2}


def host_git(repo, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def spinner_label(app) -> str | None:
    state = app._spinner_state()
    return state.label if state is not None else None


# --- item 10: the spinner and the view after an approval ----------------------------------------


async def test_a_question_cancelled_with_esc_is_not_waited_for_in_the_next_turn(repo):
    app = scripted_app(repo, [READ, FIX, SLOW])
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: prompt.request is not None)
        assert spinner_label(app) == "Waiting for your answer"
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy)
        await send(pilot, "go on")
        await wait_for(pilot, lambda: app.busy and app.ledger.running is not None
                       and app.ledger.running.tokens_out > 0)
        assert prompt.request is None and app.query_one(InputEditor).display
        assert spinner_label(app) == "Working"  # nothing on screen asks: nothing is waited for
        await pilot.press("escape")


async def test_a_question_left_open_when_its_turn_fails_is_closed(repo):
    app = scripted_app(repo, [READ, FIX])
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await send(pilot, "fix add")
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: prompt.request is not None)
        app.driver._worker.cancel()  # the turn ends without Esc (as a failure or a quit ends it)
        await wait_for(pilot, lambda: not app.busy)
        await wait_for(pilot, lambda: prompt.request is None)
        assert app.query_one(InputEditor).display and app._pending_answer is None


OLD = "".join(f"value_{i} = {i}\n" for i in range(543))
NEW = "".join(f"value_{i} = {i * 2}\n" for i in range(543))


async def test_after_approving_a_543_line_diff_at_80x24_the_reply_is_in_view(repo):
    (repo / "big.py").write_text(OLD)
    app = scripted_app(repo, [call("read_file", path="big.py"), call("write_file", path="big.py", content=NEW),
                              "Doubled every value."])
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await send(pilot, "double every value")
        prompt = app.query_one(ApprovalPrompt)
        await wait_for(pilot, lambda: prompt.request is not None)
        await pilot.press("end")  # read to its end first
        await pilot.press("y")
        await idle(pilot)
        card = app.query(ToolCard).last()
        assert not card.collapsed  # the diff shows, unfolded
        reply = app.query(AssistantMessage).last()
        await wait_for(pilot, lambda: app.view.scroll_y == app.view.max_scroll_y)
        assert "Doubled every value." in reply.text
        assert app.screen.region.contains_region(reply.region)  # on screen, not below the card


async def test_a_card_the_user_unfolds_is_scrolled_into_view(repo):
    app = scripted_app(repo, [READ, "Read.", " ".join(f"more{i}" for i in range(400))], approval="full-auto")
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await converse(pilot, "read it", "talk")
        card = app.query(ToolCard).first()
        assert not app.screen.region.contains_region(card.region)
        card.collapsed = False  # as a click on its title does
        view = app.view
        await wait_for(pilot, lambda: app.screen.region.overlaps(card.region) and view.scroll_y < view.max_scroll_y)


# --- item 13: 80 columns, /help, Ctrl+Home and /redo after a rewind ----------------------------


async def test_a_long_command_leaves_the_cards_mark_in_its_heading_at_80_columns(repo):
    command = "python -m pytest -q tests/test_something_long.py -k 'first or second or third' --maxfail 1"
    app = scripted_app(repo, [call("run_shell", command=command), "Ran."], approval="full-auto")
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await send(pilot, "run it")
        await idle(pilot)
        card = app.query(ToolCard).last()
        title = card.query_one("CollapsibleTitle")
        heading = str(card.title)
        assert heading.startswith("run_shell  python -m pytest") and "…" in heading
        assert card.status in ("ok", "failed") and ("✓" in heading or "✗ exit" in heading)
        assert title.region.right <= card.region.right  # the whole heading, mark included, fits
        await pilot.resize_terminal(120, 40)
        await wait_for(pilot, lambda: len(str(card.title)) > len(heading))  # wider: more of the command


async def test_help_wraps_within_its_columns_at_80_columns(repo):
    app = scripted_app(repo, [])
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await send(pilot, "/help")
        await wait_for(pilot, lambda: app.query(".-help"))
        shown = app.query(".-help").last()
        console = Console(width=shown.content_size.width, color_system=None)
        with console.capture() as out:
            console.print(shown.content)
        lines = out.get().splitlines()
        wrapped = [line for line in lines if line.strip() and not line.startswith("  ") and line.strip() not in
                   ("Commands", "Keys")]
        assert wrapped == []  # no line back at the left edge
        undo = next(i for i, line in enumerate(lines) if line.startswith("  /undo"))
        assert lines[undo + 1].startswith(" " * 20)  # its help goes on in the help's column


async def test_ctrl_home_and_end_move_in_a_rewound_message_and_redo_typed_after_it_runs(repo):
    app = scripted_app(repo, ["One.", "Two."])
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        await converse(pilot, "first line\nsecond line")
        await send(pilot, "/undo 1")
        await wait_for(pilot, lambda: editor.text == "first line\nsecond line")
        scrolled = app.view.scroll_y
        await pilot.press("ctrl+home")
        assert editor.cursor_location == (0, 0) and app.view.scroll_y == scrolled
        await pilot.press("ctrl+end")
        assert editor.cursor_location == (1, len("second line"))
        await pilot.press(*" /redo", "enter")
        await wait_for(pilot, lambda: "Redone" in notes(app))
        assert [m.text for m in app.query(UserMessage) if m.display] == ["first line\nsecond line"]
        assert editor.text == ""  # the message left the editor with the redo, as unedited
        assert len(app.agent.conversation.turns()) == 1  # nothing sent as text


async def test_a_command_on_its_own_line_after_text_runs_alone_and_the_text_stays(repo):
    app = scripted_app(repo, ["Hi."])
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        editor.insert("a draft\n")
        await pilot.press(*"/stats", "enter")
        await wait_for(pilot, lambda: "tokens/pass" in notes(app))
        assert editor.text == "a draft" and not app.query(UserMessage)


async def test_after_text_enter_runs_only_a_command_typed_out(repo):
    app = scripted_app(repo, ["Sent."])
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        editor = app.query_one(InputEditor)
        editor.insert("look at ")
        await pilot.press(*"/co", "enter")  # not a name: Enter completes it, runs nothing, sends nothing
        await pilot.pause(0.1)
        assert editor.text == "look at /commit" and not app.query(UserMessage)
        await pilot.press("escape", "enter")  # the popup closed: Enter sends the text as it is
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)] == ["look at /commit"])
        await idle(pilot)
        editor.insert("a / b ")
        await pilot.press("backspace", "enter")  # a lone slash is prose
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)][-1:] == ["a / b"])


# --- item 14: a first prompt, /diff's stat, /commit's draft, /stats after a cancel ---------------


async def test_a_prompt_from_the_command_line_is_sent_once_the_model_is_ready(repo):
    settings = Settings(engine="scripted", approval="ask", sandbox=False)

    def factory(approver, resume_id):
        return build_agent(settings, repo, approver, resume=resume_id, engine=ScriptedEngine(["On it."]))

    app = make_app(settings, repo, agent_factory=factory, prompt="fix the tests")
    async with app.run_test(size=NARROW) as pilot:
        await wait_for(pilot, lambda: [m.text for m in app.query(UserMessage)] == ["fix the tests"])
        await idle(pilot)
        assert "On it." in app.query(AssistantMessage).last().text
        assert app.agent.conversation.turns()[0].text == "fix the tests"


async def test_diff_starts_with_its_stat(repo):
    add = call("write_file", path="new.py", content="one = 1\ntwo = 2\n")
    app = scripted_app(repo, [READ, FIX, add, "Done."], approval="full-auto")
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await converse(pilot, "fix add and add new.py")
        await send(pilot, "/diff")
        shown = await wait_for(pilot, lambda: app.query(".-diff"))
        text = text_of(shown.last().content)
        head = text.split("diff --git")[0]
        assert "app.py" in head and "+1 -1" in head and "new.py" in head and "+2 -0" in head
        assert "2 files changed, +3 -1" in head


async def test_commit_without_a_message_drafts_one_to_accept_or_edit(repo):
    app = scripted_app(repo, [READ, FIX, "Fixed.", '"Fix add to sum its operands."'], approval="full-auto")
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await converse(pilot, "fix add")
        turns = app.agent.conversation.turn_count
        await send(pilot, "/commit")
        editor = app.query_one(InputEditor)
        await wait_for(pilot, lambda: editor.text == "/commit Fix add to sum its operands")
        assert "Drafted: Fix add to sum its operands" in notes(app)
        assert host_git(repo, "log", "--format=%s").splitlines()[0] == "init"  # nothing committed yet
        assert app.agent.conversation.turn_count == turns  # the draft is not part of the conversation
        await pilot.press("ctrl+end", *" (edited)", "enter")
        await wait_for(pilot, lambda: "Committed" in notes(app))
    assert host_git(repo, "log", "--format=%s").splitlines()[0] == "Fix add to sum its operands (edited)"
    assert host_git(repo, "status", "--porcelain") == ""


async def test_commit_without_changes_says_so_and_asks_nothing(repo):
    host_git(repo, "add", "-A")
    host_git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "app")
    app = scripted_app(repo, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "/commit")
        await wait_for(pilot, lambda: "nothing to commit" in notes(app))
        assert app.query_one(InputEditor).text == ""


async def test_stats_count_a_cancelled_turn(repo):
    app = scripted_app(repo, ["Hi.", SLOW])
    async with app.run_test(size=NARROW) as pilot:
        await ready(pilot)
        await converse(pilot, "hi")
        await send(pilot, "write a lot")
        await wait_for(pilot, lambda: app.ledger.running is not None and app.ledger.running.tokens_out > 0)
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.ledger.finished == 2)
        assert app.ledger.running is None and app.ledger.turns[-1].done
        await send(pilot, "/stats")
        await wait_for(pilot, lambda: "turns 2" in notes(app))


def test_where_a_command_word_is_one():
    from clover_code.ui.tui.completion import Word, word_at

    assert word_at(["/red"], 0, 4) == Word("command", 0, 0, "red")  # the message's start
    assert word_at(["fix it /red"], 0, 11) == Word("command", 0, 7, "red")  # after a space
    assert word_at(["fix it", "/redo"], 1, 5) == Word("command", 1, 0, "redo")  # a line of its own
    assert word_at(["see /usr/bin"], 0, 12) is None  # a path, not a command
    assert word_at(["and/or"], 0, 6) is None  # inside a word
    assert word_at(["fix /redo it"], 0, 7) is None  # the cursor inside the word
    assert not word_at(["fix", "/redo"], 1, 5).leads and word_at(["/redo"], 0, 5).leads
