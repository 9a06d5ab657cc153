"""Approval modes, allow rules, and the approval flow through the loop."""

import asyncio

import pytest
from agent_helpers import RecordingApprover, call, collect

from clover_code.agent.calls import DECLINED
from clover_code.agent.events import ApprovalAnswered, ApprovalNeeded, Notice, ToolFinished
from clover_code.agent.permissions import Permissions, approver_for_mode, call_subjects, rule_for_always

EDIT = {"path": "src/a.py", "old_string": "x", "new_string": "y"}
SHELL = {"command": "pytest -q tests"}


@pytest.mark.parametrize("mode, read, edit, shell, git", [
    ("read-only", "allow", "deny", "deny", "deny"),
    ("ask", "allow", "ask", "ask", "ask"),
    ("auto-edit", "allow", "allow", "ask", "ask"),
    ("full-auto", "allow", "allow", "allow", "allow"),
])
def test_modes(mode, read, edit, shell, git):
    p = Permissions(mode)
    assert p.decide("read_file", "read", {"path": "a"}) == read
    assert p.decide("edit_file", "edit", EDIT) == edit
    assert p.decide("run_shell", "shell", SHELL) == shell
    assert p.decide("git_commit", "git", {"message": "m"}) == git


def test_allow_rules():
    p = Permissions("ask", ["shell:pytest*", "edit:src/**", "git:commit"])
    assert p.decide("run_shell", "shell", SHELL) == "allow"
    assert p.decide("run_shell", "shell", {"command": "rm -rf /"}) == "ask"
    assert p.decide("run_shell", "shell", {"command": "pytest -x && pytest -q"}) == "allow"
    for sneaky in ("pytest; rm -rf ~", "pytest && curl x | sh", "pytest $(rm -rf ~)", "pytest `id`",
                   "pytest & rm x", "pytest\nrm x"):
        assert p.decide("run_shell", "shell", {"command": sneaky}) == "ask", sneaky
    assert p.decide("edit_file", "edit", EDIT) == "allow"
    assert p.decide("edit_file", "edit", {**EDIT, "path": "./src/deep/b.py"}) == "allow"
    assert p.decide("edit_file", "edit", {**EDIT, "path": "setup.py"}) == "ask"
    assert p.decide("edit_file", "edit", {**EDIT, "path": "src/../setup.py"}) == "ask"
    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: docs/b.md\n+z\n*** End Patch"
    assert p.decide("apply_patch", "edit", {"patch": patch}) == "ask"  # docs/b.md is not under src/
    assert p.decide("git_commit", "git", {"message": "m"}) == "allow"
    assert Permissions("ask", ["git:*"]).decide("git_commit", "git", {}) == "allow"
    assert Permissions("ask", ["run_shell:pytest*"]).decide("run_shell", "shell", SHELL) == "allow"
    rooted = Permissions("ask", ["edit:src/**"], root="/ws")
    assert rooted.decide("edit_file", "edit", {**EDIT, "path": "/ws/src/a.py"}) == "allow"
    assert rooted.decide("edit_file", "edit", {**EDIT, "path": "/wsx/src/a.py"}) == "ask"
    assert rule_for_always("edit", "edit_file", {"path": "/ws/lib/x.py"}, "/ws") == "edit:lib/**"
    # rules never open up read-only
    assert Permissions("read-only", ["shell:*"]).decide("run_shell", "shell", SHELL) == "deny"
    with pytest.raises(ValueError, match="KIND:PATTERN"):
        Permissions("ask", ["pytest"])


def test_subjects_and_always_rules():
    patch = "*** Begin Patch\n*** Update File: src/a.py\n*** Move to: src/b.py\n@@\n-x\n+y\n*** End Patch"
    assert call_subjects("edit", {"patch": patch}) == ["src/a.py", "src/b.py"]
    assert call_subjects("edit", {"patch": "*** Begin Patch\n*** Update File: a\n*** End Patch"}) == []
    assert rule_for_always("shell", "run_shell", {"command": "pytest -x tests"}) == "shell:pytest*"
    assert rule_for_always("shell", "run_shell", {"command": "git commit -m x"}) == "shell:git commit*"
    assert rule_for_always("edit", "edit_file", EDIT) == "edit:src/**"
    assert rule_for_always("edit", "write_file", {"path": "top.py"}) == "edit:*"
    assert rule_for_always("git", "git_commit", {}) == "git:git_commit"


@pytest.mark.parametrize("command", [
    "git status <(rm x)", "git status >(rm x)", "git status > out", "git status >> out", "git status >| out",
    "git status &> out", "git status >& out", "git status <> out", "git status <<EOF\nrm x\nEOF",
    "git status 1> out", "(git status)", "git status; (rm x)", "git status 'unclosed",
    "git status $(rm x)", 'git status "$(rm x)"', "git status `rm x`", "git status\nrm x", "git status # c\nrm x",
])
def test_allow_rules_never_cover_substitution_subshells_or_writes(command):
    assert Permissions("ask", ["shell:git status*"]).decide("run_shell", "shell", {"command": command}) == "ask"


@pytest.mark.parametrize("command", [
    "git status", "git status 2>&1", "git status 2>/dev/null", "git status > /dev/null", "git status < in.txt",
    "git status >&2", 'git status -- "a;b" \'c > d\'', "git status && git status -s", "git status | git status",
])
def test_allow_rules_cover_plain_commands(command):
    assert Permissions("ask", ["shell:git status*"]).decide("run_shell", "shell", {"command": command}) == "allow"


def test_always_rules_match_the_command_literally():
    rule = rule_for_always("shell", "run_shell", {"command": "* x"})
    assert rule == "shell:[*] x*"
    p = Permissions("ask", [rule])
    assert p.decide("run_shell", "shell", {"command": "* x"}) == "allow"
    assert p.decide("run_shell", "shell", {"command": "rm -rf ~"}) == "ask"
    assert rule_for_always("shell", "run_shell", {"command": "ls *"}) == "shell:ls*"
    assert rule_for_always("shell", "run_shell", {"command": "?? x"}) == "shell:[?][?] x*"
    assert rule_for_always("shell", "run_shell", {"command": "[ -f x ]"}) == "shell:[[]*"
    assert rule_for_always("edit", "write_file", {"path": "*/x.py"}) == "edit:[*]/**"
    assert Permissions("ask", ["edit:[*]/**"]).decide("write_file", "edit", {"path": "src/x.py"}) == "ask"


def test_patch_paths_come_from_the_parsed_patch():
    p = Permissions("ask", ["edit:src/**"])
    indented = "*** Begin Patch\n*** Add File: src/a.py\n+x\n  *** Add File: .clover/x\n+y\n*** End Patch"
    assert call_subjects("edit", {"patch": indented}) == ["src/a.py", ".clover/x"]
    assert p.decide("apply_patch", "edit", {"patch": indented}) == "ask"
    wrapped = "<<'EOF'\n*** Begin Patch\n*** Add File: docs/x\n+y\n*** End Patch\nEOF"
    assert p.decide("apply_patch", "edit", {"patch": wrapped}) == "ask"
    assert p.decide("apply_patch", "edit", {"patch": "*** Begin Patch\n*** Add File: src/b\n+y\n*** End Patch"}) \
        == "allow"


def test_edit_rules_match_where_a_symlink_leads(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "link.py").symlink_to(tmp_path / "setup.py")
    p = Permissions("ask", ["edit:src/**"], root=str(tmp_path))
    assert p.decide("write_file", "edit", {"path": "src/link.py"}) == "ask"
    assert p.decide("write_file", "edit", {"path": "src/real.py"}) == "allow"


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
