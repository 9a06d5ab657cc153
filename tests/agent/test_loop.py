"""The agent loop on a real temp git repo with the real tools, driven by a ScriptedEngine."""

import asyncio
import json
import subprocess
import time

from clover_code.agent.context import Conversation
from clover_code.agent.events import (
    BlockCommitted,
    ErrorEvent,
    TextDelta,
    ToolCallParsed,
    ToolFinished,
    ToolStarted,
    TurnFinished,
)
from clover_code.agent.session import SessionLog
from clover_code.engine.scripted import ScriptedEngine
from tests.support.agent import call, collect, kinds

CALC = "def add(a, b):\n    return a - b\n"


def test_read_edit_shell_then_answer(git_repo, make_agent):
    (git_repo / "calc.py").write_text(CALC)
    check = "python -c 'import calc; assert calc.add(2, 3) == 5; print(\"ok\")'"
    agent = make_agent([
        "Let me read the file first.\n" + call("read_file", path="calc.py"),
        "The sign is wrong.\n" + call("edit_file", path="calc.py", old_string="a - b", new_string="a + b"),
        call("run_shell", command=check),
        "Fixed `add`: it subtracted. The check passes.",
    ])
    events = asyncio.run(collect(agent, "fix add in calc.py"))
    assert (git_repo / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
    done = events[-1]
    assert isinstance(done, TurnFinished) and done.reason == "done"
    assert done.text == "Fixed `add`: it subtracted. The check passes."
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [f.call.name for f in finished] == ["read_file", "edit_file", "run_shell"]
    assert all(f.ok for f in finished), [f.output for f in finished]
    assert "ok" in finished[2].output
    stats = done.stats
    assert stats["turns"] == 4 and stats["tool_calls"] == 3
    assert stats["blocks"] == sum(isinstance(e, BlockCommitted) for e in events)
    assert stats["tokens"] > 0 and stats["forward_passes"] >= stats["blocks"] and stats["seconds"] > 0
    # the model saw each result, in OpenAI form, after the call that asked for it
    messages = agent.engine.requests[-1].messages
    assert [m["role"] for m in messages] == ["system", "user"] + ["assistant", "tool"] * 3
    assert messages[2]["content"] == "Let me read the file first."
    assert messages[2]["tool_calls"][0]["function"]["name"] == "read_file"
    assert messages[3]["tool_call_id"] == messages[2]["tool_calls"][0]["id"] and "a - b" in messages[3]["content"]
    # the edit was checkpointed: undo brings the old file back
    agent.ctx.checkpoints.undo()
    assert (git_repo / "calc.py").read_text() == CALC


def test_tool_starts_while_the_model_is_still_writing(make_agent):
    engine = ScriptedEngine([call("read_file", path="README.md") + " and now a long explanation follows" * 5,
                             "done"], block_size=4, delay=0.02)
    agent = make_agent(None, engine=engine)
    events = asyncio.run(collect(agent, "read"))
    started = kinds(events).index("ToolStarted")
    parsed = kinds(events).index("ToolCallParsed")
    blocks_after = [e for e in events[started:] if isinstance(e, BlockCommitted) and e.block.index > 0]
    assert blocks_after, "the tool should start before the reply is complete"
    assert kinds(events)[parsed - 1] == "BlockCommitted"  # shown the moment its block commits
    assert events[-1].reason == "done"


def test_structured_tool_calls_from_a_server(make_agent):
    agent = make_agent([
        {"content": "Looking.", "tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}},
                                               {"name": "glob", "arguments": {"pattern": "*.md"}}]},
        "The README says hello.",
    ])
    events = asyncio.run(collect(agent, "what does the readme say"))
    finished = [e for e in events if isinstance(e, ToolFinished)]
    assert [(f.call.name, f.ok) for f in finished] == [("read_file", True), ("glob", True)]
    assert "hello" in finished[0].output
    assistant = agent.engine.requests[1].messages[2]
    assert assistant["content"] == "Looking." and len(assistant["tool_calls"]) == 2
    assert events[-1].reason == "done"


def test_bad_output_becomes_tool_results(make_agent):
    agent = make_agent([
        '<tool_call>{"name": "read_file", "arguments": {"path": </tool_call>'
        + call("no_such_tool", x=1) + call("read_file", limit="many"),
        "Sorry, I give up on reading.",
    ])
    events = asyncio.run(collect(agent, "read something"))
    assert events[-1].reason == "done"
    parsed = [e for e in events if isinstance(e, ToolCallParsed)]
    assert parsed[0].error and "not valid JSON" in parsed[0].error and parsed[0].call.name == "read_file"
    assert [p.error for p in parsed[1:]] == [None, None]
    outputs = [e.output for e in events if isinstance(e, ToolFinished)]
    assert "not valid JSON" in outputs[0] and "<tool_call>" in outputs[0]  # with the format hint
    assert "unknown tool 'no_such_tool'" in outputs[1]
    assert "invalid arguments for read_file" in outputs[2]
    assert not any(isinstance(e, ToolStarted) for e in events)
    messages = agent.engine.requests[1].messages
    assistant = messages[2]
    assert '"path": </tool_call>' in assistant["content"]  # malformed markup kept for the model to see
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["no_such_tool", "read_file"]
    assert [m["role"] for m in messages[3:]] == ["tool"] * 3


def test_markup_debris_reaches_no_reader_and_prose_after_a_call_stays(make_agent, git_repo, tmp_path):
    debris = '"}}\n</tool_call>}}'  # what a model may write after a closed call
    session = SessionLog(tmp_path / "session.jsonl")
    agent = make_agent(["Reading it. " + call("read_file", path="README.md") + debris + " It says hello. </tool_c",
                        "Done.</tool_call>\n}}"], session=session)
    events = asyncio.run(collect(agent, "read the readme"))
    assert events[-1].reason == "done"
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert shown.split() == ["Reading", "it.", "It", "says", "hello.", "Done."], shown
    assert [e.ok for e in events if isinstance(e, ToolFinished)] == [True]
    contents = [m["content"] for m in agent.conversation.messages if m["role"] == "assistant"]
    assert contents == ["Reading it. It says hello.", "Done."]
    raw = "".join(e.block.text for e in events if isinstance(e, BlockCommitted))
    assert debris in raw  # the log keeps every byte the model wrote
    replayed = Conversation(agent.conversation.system, agent.conversation.tools)
    for event in session.events():
        replayed.apply(event)
    assert replayed.messages == agent.conversation.messages


def test_call_cut_off_by_max_tokens(make_agent, git_repo):
    long_content = " ".join(f"line{i}" for i in range(50))
    agent = make_agent([
        "Writing it now. " + call("write_file", path="new.py", content=long_content),
        "I will write shorter.",
    ], max_tokens=20)
    events = asyncio.run(collect(agent, "write new.py"))
    (failed,) = [e for e in events if isinstance(e, ToolFinished)]
    assert not failed.ok and "cut off" in failed.output and "max_tokens (20)" in failed.output
    assert not (git_repo / "new.py").exists()
    assert events[-1].reason == "done"


def test_same_failing_call_three_times_gives_up(make_agent):
    bad = call("read_file", path="missing.py")
    agent = make_agent([bad, "Let me try again. " + bad, bad, "never asked"])
    events = asyncio.run(collect(agent, "read missing.py"))
    done = events[-1]
    assert done.reason == "gave_up" and "the same read_file call failed 3 times in a row" in done.text
    assert len(agent.engine.requests) == 3 and agent.engine.replies == ["never asked"]


def test_failures_with_progress_between_do_not_give_up(make_agent, git_repo):
    (git_repo / "t.py").write_text("x = 1\n")
    test = call("run_shell", command="python -c 'import t; assert t.x == 3'")
    agent = make_agent([
        test, call("read_file", path="t.py"), test,
        call("edit_file", path="t.py", old_string="x = 1", new_string="x = 2"), test,
        call("edit_file", path="t.py", old_string="x = 2", new_string="x = 3"), test, "fixed",
    ])
    events = asyncio.run(collect(agent, "make the test pass"))
    assert events[-1].reason == "done"


def test_max_turns(make_agent):
    agent = make_agent([call("glob", pattern="*")] * 5, max_turns=2)
    events = asyncio.run(collect(agent, "loop"))
    assert events[-1].reason == "max_turns" and events[-1].stats["turns"] == 2
    assert len(agent.engine.replies) == 3


def test_engine_error_ends_the_turn_cleanly(make_agent):
    agent = make_agent([call("glob", pattern="*")])  # then the script runs out
    events = asyncio.run(collect(agent, "go"))
    assert kinds(events)[-2:] == ["ErrorEvent", "TurnFinished"]
    assert events[-2].fatal and "no more replies" in events[-2].message
    assert events[-1].reason == "error"


def test_cancel_stops_a_running_shell_at_once(make_agent, git_repo):
    agent = make_agent([call("run_shell", command="sleep 30; touch late.txt") + " waiting" * 40, "x"])

    async def main():
        gen = agent.run("sleep")
        async for event in gen:
            if isinstance(event, ToolStarted):
                break
        t0 = time.perf_counter()
        await gen.aclose()
        return time.perf_counter() - t0

    assert asyncio.run(main()) < 5
    assert not (git_repo / "late.txt").exists()
    assert agent.conversation.messages[-1]["content"].startswith("(not run")
    out = subprocess.run(["pgrep", "-f", "sleep 30; touch late.txt"], capture_output=True, text=True)
    assert out.stdout.strip() == ""


def test_no_errors_on_plain_answer(make_agent):
    events = asyncio.run(collect(make_agent(["Just an answer."]), "hi"))
    assert kinds(events) == ["UserMessage", "BlockCommitted", "TextDelta", "TurnFinished"]
    assert events[-1].text == "Just an answer." and not any(isinstance(e, ErrorEvent) for e in events)
    assert json.dumps(events[-1].stats)


def test_two_tasks_share_the_conversation_and_pass_on_step(make_agent):
    agent = make_agent(["First answer.", "Second answer."])
    steps = []
    agent.set_on_step(steps.append)
    asyncio.run(collect(agent, "first"))
    events = asyncio.run(collect(agent, "second"))
    assert events[-1].text == "Second answer."
    second = agent.engine.requests[1]
    assert [m["content"] for m in second.messages[1:]] == ["first", "First answer.", "second"]
    assert second.on_step == steps.append
    assert second.tools and second.tools[0]["type"] == "function"


def test_qwen3_coder_calls_run_with_string_parameters_kept(git_repo, make_agent):
    (git_repo / "n.txt").write_text("42\n")
    xml = ("<tool_call>\n<function=edit_file>\n<parameter=path>\nn.txt\n</parameter>\n"
           "<parameter=old_string>\n42\n</parameter>\n<parameter=new_string>\n43\n</parameter>\n"
           "</function>\n</tool_call>")
    agent = make_agent([call("read_file", path="n.txt"), "Bumping it.\n" + xml, "Bumped."])
    events = asyncio.run(collect(agent, "bump the number"))
    assert [e.ok for e in events if isinstance(e, ToolFinished)] == [True, True]
    assert (git_repo / "n.txt").read_text() == "43\n"


def test_same_failing_shell_command_repeated_gives_up_despite_timings(make_agent):
    again = call("run_shell", command="date +%N; exit 1")
    agent = make_agent([again, again, again, "never"])
    events = asyncio.run(collect(agent, "loop"))
    outputs = {e.output for e in events if isinstance(e, ToolFinished)}
    assert len(outputs) == 3 and events[-1].reason == "gave_up"
