"""Approval modes, allow rules, and the approval flow through the loop.

Rules are matched against what each call touches as its tool declares it (`declared` asks the
real tool), never against argument keys."""

import asyncio
from pathlib import Path

import pytest
from pydantic import BaseModel

from clover_code.agent.calls import DECLINED
from clover_code.agent.context import Conversation
from clover_code.agent.events import ApprovalAnswered, ApprovalNeeded, Notice, ToolFinished
from clover_code.agent.loop import Agent, AgentSettings
from clover_code.agent.permissions import Permissions, approver_for_mode, rule_for_always, written_paths
from clover_code.engine.scripted import ScriptedEngine
from clover_code.tools import BoundCall, Registry, ToolContext, ToolResult, default_registry
from clover_code.tools.touches import UNKNOWN, Touches
from clover_code.tools.workspace import Workspace
from tests.support.agent import RecordingApprover, call, collect

EDIT = {"path": "src/a.py", "old_string": "x", "new_string": "y"}
SHELL = {"command": "pytest -q tests"}
REGISTRY = default_registry()


def declared(name: str, **arguments) -> Touches:
    """What the real tool `name` says a call with `arguments` touches."""
    bound = REGISTRY.bind(name, arguments, ToolContext(Workspace(Path.cwd())))
    assert isinstance(bound, BoundCall), bound
    return bound.touches


def shell(command: str) -> Touches:
    return declared("run_shell", command=command)


def edit(path: str) -> Touches:
    return declared("edit_file", **{**EDIT, "path": path})


def write(path: str) -> Touches:
    return declared("write_file", path=path, content="x")


def patch(text: str) -> Touches:
    return declared("apply_patch", patch=text)


COMMIT = declared("git_commit", message="m")


@pytest.mark.parametrize("mode, read, edit_, shell_, git", [
    ("read-only", "allow", "deny", "deny", "deny"),
    ("ask", "allow", "ask", "ask", "ask"),
    ("auto-edit", "allow", "allow", "ask", "ask"),
    ("full-auto", "allow", "allow", "allow", "allow"),
])
def test_modes(mode, read, edit_, shell_, git):
    p = Permissions(mode)
    assert p.decide("read_file", "read", declared("read_file", path="a")) == read
    assert p.decide("edit_file", "edit", edit("src/a.py")) == edit_
    assert p.decide("run_shell", "shell", shell(SHELL["command"])) == shell_
    assert p.decide("git_commit", "git", COMMIT) == git


def test_allow_rules():
    p = Permissions("ask", ["shell:pytest*", "edit:src/**", "git:commit"])
    assert p.decide("run_shell", "shell", shell("pytest -q tests")) == "allow"
    assert p.decide("run_shell", "shell", shell("rm -rf /")) == "ask"
    assert p.decide("run_shell", "shell", shell("pytest -x && pytest -q")) == "allow"
    for sneaky in ("pytest; rm -rf ~", "pytest && curl x | sh", "pytest $(rm -rf ~)", "pytest `id`",
                   "pytest & rm x", "pytest\nrm x"):
        assert p.decide("run_shell", "shell", shell(sneaky)) == "ask", sneaky
    assert p.decide("edit_file", "edit", edit("src/a.py")) == "allow"
    assert p.decide("edit_file", "edit", edit("./src/deep/b.py")) == "allow"
    assert p.decide("edit_file", "edit", edit("setup.py")) == "ask"
    assert p.decide("edit_file", "edit", edit("src/../setup.py")) == "ask"
    two = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: docs/b.md\n+z\n*** End Patch"
    assert p.decide("apply_patch", "edit", patch(two)) == "ask"  # docs/b.md is not under src/
    assert p.decide("git_commit", "git", COMMIT) == "allow"
    assert Permissions("ask", ["git:*"]).decide("git_commit", "git", COMMIT) == "allow"
    assert Permissions("ask", ["run_shell:pytest*"]).decide("run_shell", "shell", shell("pytest -q")) == "allow"
    rooted = Permissions("ask", ["edit:src/**"], root="/ws")
    assert rooted.decide("edit_file", "edit", edit("/ws/src/a.py")) == "allow"
    assert rooted.decide("edit_file", "edit", edit("/wsx/src/a.py")) == "ask"
    assert rule_for_always("edit", "edit_file", write("/ws/lib/x.py"), "/ws") == "edit:lib/**"
    # rules never open up read-only
    assert Permissions("read-only", ["shell:*"]).decide("run_shell", "shell", shell("pytest")) == "deny"
    with pytest.raises(ValueError, match="KIND:PATTERN"):
        Permissions("ask", ["pytest"])


def test_written_paths_and_always_rules():
    moved = "*** Begin Patch\n*** Update File: src/a.py\n*** Move to: src/b.py\n@@\n-x\n+y\n*** End Patch"
    assert written_paths(patch(moved)) == ["src/a.py", "src/b.py"]
    assert patch("*** Begin Patch\n*** Update File: a\n*** End Patch") == UNKNOWN  # no hunk: does not parse
    assert rule_for_always("shell", "run_shell", shell("pytest -x tests")) == "shell:pytest*"
    assert rule_for_always("shell", "run_shell", shell("git commit -m x")) == "shell:git commit*"
    assert rule_for_always("edit", "edit_file", edit("src/a.py")) == "edit:src/**"
    assert rule_for_always("edit", "write_file", write("top.py")) == "edit:*"
    assert rule_for_always("git", "git_commit", COMMIT) == "git:git_commit"


def test_a_call_whose_tool_declares_nothing_is_covered_only_by_a_rule_naming_it():
    """A tool from elsewhere (an MCP server) that says nothing of what it touches: no path or
    command rule vouches for it, whatever its arguments look like, and "always" names the tool
    (an MCP tool as the issue's rules do: `mcp:SERVER/TOOL`)."""
    broad = Permissions("ask", ["edit:*", "shell:*", "mcp__fs__write:pytest*"])
    assert broad.decide("mcp__fs__write", "edit", UNKNOWN) == "ask"
    assert broad.decide("mcp__fs__exec", "shell", UNKNOWN) == "ask"
    assert rule_for_always("edit", "mcp__fs__write", UNKNOWN) == "mcp:fs/write"
    assert rule_for_always("edit", "other_tool", UNKNOWN) == "other_tool:*"
    for rules in (["mcp__fs__write:*"], ["mcp:fs/write"]):
        named = Permissions("ask", rules)
        assert named.decide("mcp__fs__write", "edit", UNKNOWN) == "allow"
        assert named.decide("mcp__fs__other", "edit", UNKNOWN) == "ask"
    server = Permissions("ask", ["mcp:fs/*"])
    assert server.decide("mcp__fs__other", "shell", UNKNOWN) == "allow"
    assert server.decide("mcp__web__other", "shell", UNKNOWN) == "ask"
    assert Permissions("read-only", ["mcp:fs/*"]).decide("mcp__fs__other", "shell", UNKNOWN) == "deny"


@pytest.mark.parametrize("command", [
    "git status <(rm x)", "git status >(rm x)", "git status > out", "git status >> out", "git status >| out",
    "git status &> out", "git status >& out", "git status <> out", "git status <<EOF\nrm x\nEOF",
    "git status 1> out", "(git status)", "git status; (rm x)", "git status 'unclosed",
    "git status $(rm x)", 'git status "$(rm x)"', "git status `rm x`", "git status\nrm x", "git status # c\nrm x",
])
def test_allow_rules_never_cover_substitution_subshells_or_writes(command):
    assert Permissions("ask", ["shell:git status*"]).decide("run_shell", "shell", shell(command)) == "ask"


@pytest.mark.parametrize("command", [
    "git status", "git status 2>&1", "git status 2>/dev/null", "git status > /dev/null", "git status < in.txt",
    "git status >&2", 'git status -- "a;b" \'c > d\'', "git status && git status -s", "git status | git status",
])
def test_allow_rules_cover_plain_commands(command):
    assert Permissions("ask", ["shell:git status*"]).decide("run_shell", "shell", shell(command)) == "allow"


def test_always_rules_match_the_command_literally():
    rule = rule_for_always("shell", "run_shell", shell("* x"))
    assert rule == "shell:[*] x*"
    p = Permissions("ask", [rule])
    assert p.decide("run_shell", "shell", shell("* x")) == "allow"
    assert p.decide("run_shell", "shell", shell("rm -rf ~")) == "ask"
    assert rule_for_always("shell", "run_shell", shell("ls *")) == "shell:ls*"
    assert rule_for_always("shell", "run_shell", shell("?? x")) == "shell:[?][?] x*"
    assert rule_for_always("shell", "run_shell", shell("[ -f x ]")) == "shell:[[]*"
    assert rule_for_always("edit", "write_file", write("*/x.py")) == "edit:[*]/**"
    assert Permissions("ask", ["edit:[*]/**"]).decide("write_file", "edit", write("src/x.py")) == "ask"


def test_patch_paths_come_from_the_parsed_patch():
    p = Permissions("ask", ["edit:src/**"])
    indented = "*** Begin Patch\n*** Add File: src/a.py\n+x\n  *** Add File: .clover/x\n+y\n*** End Patch"
    assert written_paths(patch(indented)) == ["src/a.py", ".clover/x"]
    assert p.decide("apply_patch", "edit", patch(indented)) == "ask"
    wrapped = "<<'EOF'\n*** Begin Patch\n*** Add File: docs/x\n+y\n*** End Patch\nEOF"
    assert p.decide("apply_patch", "edit", patch(wrapped)) == "ask"
    assert p.decide("apply_patch", "edit", patch("*** Begin Patch\n*** Add File: src/b\n+y\n*** End Patch")) \
        == "allow"


def test_edit_rules_match_where_a_symlink_leads(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "link.py").symlink_to(tmp_path / "setup.py")
    p = Permissions("ask", ["edit:src/**"], root=str(tmp_path))
    assert p.decide("write_file", "edit", write("src/link.py")) == "ask"
    assert p.decide("write_file", "edit", write("src/real.py")) == "allow"


def test_headless_approver_by_mode():
    assert asyncio.run(approver_for_mode("full-auto")(None)) == "yes"
    assert asyncio.run(approver_for_mode("ask")(None)) == "no"


def test_approval_yes_shows_the_diff_and_runs(git_repo, make_agent):
    (git_repo / "a.py").write_text("x = 1\n")
    approver = RecordingApprover("yes")
    agent = make_agent([call("read_file", path="a.py"),
                        call("edit_file", path="a.py", old_string="x = 1", new_string="x = 2"), "done"],
                       approval="ask", approver=approver)
    events = asyncio.run(collect(agent, "edit"))
    (asked,) = approver.asked
    assert asked.kind == "edit" and "-x = 1" in asked.preview and "+x = 2" in asked.preview
    assert [e.answer for e in events if isinstance(e, ApprovalAnswered)] == ["yes"]
    assert (git_repo / "a.py").read_text() == "x = 2\n"


def test_approval_no_tells_the_model(git_repo, make_agent):
    approver = RecordingApprover("n")
    agent = make_agent([call("run_shell", command="touch made.txt"), "ok, I will not."],
                       approval="auto-edit", approver=approver)
    events = asyncio.run(collect(agent, "make a file"))
    assert approver.asked[0].preview == "touch made.txt"
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert not finished.ok and finished.output == DECLINED
    assert not (git_repo / "made.txt").exists()
    assert agent.engine.requests[1].messages[-1]["content"] == DECLINED


def test_approval_always_adds_a_rule(git_repo, make_agent):
    approver = RecordingApprover("always", "no")
    agent = make_agent([call("run_shell", command="touch one.txt"), call("run_shell", command="touch two.txt"),
                        call("run_shell", command="ls"), "done"],
                       approval="ask", approver=approver)
    asyncio.run(collect(agent, "touch twice"))
    # `touch two.txt` ran without a question; `ls` is not covered by `shell:touch*`
    assert [a.preview for a in approver.asked] == ["touch one.txt", "ls"]
    assert (git_repo / "one.txt").exists() and (git_repo / "two.txt").exists()
    assert agent.permissions.rules == ["shell:touch*"]


def test_always_rule_is_announced(git_repo, make_agent):
    agent = make_agent([call("run_shell", command="touch one.txt"), "done"], approval="ask",
                       approver=RecordingApprover("a"))
    events = asyncio.run(collect(agent, "touch"))
    assert any(isinstance(e, Notice) and "shell:touch*" in e.text for e in events)
    assert any(isinstance(e, ApprovalNeeded) for e in events)


def test_read_only_refuses_edits(git_repo, make_agent):
    approver = RecordingApprover()
    agent = make_agent([call("write_file", path="new.txt", content="x"), "I cannot write."],
                       approval="read-only", approver=approver)
    events = asyncio.run(collect(agent, "write"))
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert not finished.ok and "read-only" in finished.output and not approver.asked
    assert not (git_repo / "new.txt").exists()


def test_allow_rule_from_settings_skips_the_question(git_repo, make_agent):
    approver = RecordingApprover()
    agent = make_agent([call("run_shell", command="echo hi"), "done"], approval="ask", approver=approver,
                       rules=["shell:echo*"])
    events = asyncio.run(collect(agent, "say hi"))
    assert not approver.asked and events[-1].reason == "done"


def test_failing_preview_does_not_ask(git_repo, make_agent):
    approver = RecordingApprover()
    agent = make_agent([call("edit_file", path="README.md", old_string="nope", new_string="x"), "ok"],
                       approval="ask", approver=approver)
    events = asyncio.run(collect(agent, "edit"))
    (finished,) = [e for e in events if isinstance(e, ToolFinished)]
    assert not finished.ok and not approver.asked


def test_always_adds_exactly_the_rule_the_request_carried(git_repo, make_agent):
    approver = RecordingApprover("always", "always")
    agent = make_agent([call("run_shell", command="touch one.txt"), call("write_file", path="lib/new.py", content="x"),
                        call("run_shell", command="touch two.txt"), call("write_file", path="lib/b.py", content="y"),
                        "done"], approval="ask", approver=approver)
    events = asyncio.run(collect(agent, "go"))
    shell_ask, write_ask = approver.asked  # the second command and the second write were not asked
    assert shell_ask.touches.runs == "touch one.txt" and write_ask.touches.writes == ("lib/new.py",)
    assert (shell_ask.always, write_ask.always) == ("shell:touch*", "edit:lib/**")
    assert agent.permissions.rules == [shell_ask.always, write_ask.always]
    notices = [e.text for e in events if isinstance(e, Notice)]
    assert notices == [f"Allowed without asking from now on: {a.always}" for a in approver.asked]
    assert (git_repo / "two.txt").exists() and (git_repo / "lib" / "b.py").read_text() == "y"


class Undeclared:
    """A tool from elsewhere (as an MCP tool will be): a kind, arguments, and no declaration."""

    name = "mcp__notes__append"
    kind = "read"  # what it claims; it says nothing of what it touches

    class Args(BaseModel):
        path: str

    async def run(self, args, ctx) -> ToolResult:
        return ToolResult(True, f"appended to {args.path}")


def undeclared_agent(root: Path, replies: list[str], approval: str, approver=None, rules=()) -> Agent:
    ctx = ToolContext(Workspace(root), sandbox=True, shell_timeout=30)
    return Agent(ScriptedEngine(replies), Registry([Undeclared()]), ctx, approver or RecordingApprover(),
                 AgentSettings(approval=approval), permissions=Permissions(approval, list(rules)),
                 conversation=Conversation("You are a test agent.", []))  # it has no prompt file


def test_a_tool_that_declares_nothing_is_asked_as_a_write(git_repo):
    approver = RecordingApprover("always")
    agent = undeclared_agent(git_repo, [call("mcp__notes__append", path="src/a.md"),
                                        call("mcp__notes__append", path="b.md"), "done"],
                             "ask", approver, rules=["edit:*"])
    asyncio.run(collect(agent, "go"))
    (asked,) = approver.asked  # `edit:*` did not cover it; the "always" covers this tool only
    assert asked.kind == "edit" and asked.touches == UNKNOWN and asked.always == "mcp:notes/append"
    assert agent.permissions.rules == ["edit:*", "mcp:notes/append"]
    read_only = undeclared_agent(git_repo, [call("mcp__notes__append", path="a.md"), "done"], "read-only")
    (finished,) = [e for e in asyncio.run(collect(read_only, "go")) if isinstance(e, ToolFinished)]
    assert not finished.ok and "read-only" in finished.output
