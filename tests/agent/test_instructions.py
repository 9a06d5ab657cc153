"""AGENTS.md / CLOVER.md discovery and the system prompt."""

from clover_code.agent.instructions import instruction_files, load_instructions, render_system_prompt


def test_from_git_root_down_to_cwd(git_repo):
    (git_repo.parent / "AGENTS.md").write_text("outside the repo: never read")
    (git_repo / "AGENTS.md").write_text("root rules")
    deep = git_repo / "pkg" / "sub"
    deep.mkdir(parents=True)
    (git_repo / "pkg" / "AGENTS.md").write_text("pkg rules")
    (deep / "CLOVER.md").write_text("sub clover rules")
    (git_repo / "other").mkdir()
    (git_repo / "other" / "AGENTS.md").write_text("sibling: never read")
    files = instruction_files(deep)
    assert [f.relative_to(git_repo).as_posix() for f in files] == ["AGENTS.md", "pkg/AGENTS.md", "pkg/sub/CLOVER.md"]
    text = load_instructions(deep).text
    assert text.index("root rules") < text.index("pkg rules") < text.index("sub clover rules")
    assert "# From pkg/AGENTS.md" in text and "never read" not in text


def test_cap_at_32_kib(git_repo):
    (git_repo / "AGENTS.md").write_text("a" * 30_000)
    (git_repo / "CLOVER.md").write_text("b" * 30_000)
    loaded = load_instructions(git_repo)
    assert loaded.truncated and len(loaded.text.encode()) < 32 * 1024 + 100
    assert "cut at 32 KiB" in loaded.text and "b" * 100 in loaded.text


def test_outside_git_only_cwd(tmp_path):
    (tmp_path / "AGENTS.md").write_text("here")
    loaded = load_instructions(tmp_path)
    assert loaded.text.endswith("here") and loaded.files == (tmp_path / "AGENTS.md",)


def test_system_prompt_has_facts_and_instructions(git_repo):
    (git_repo / "AGENTS.md").write_text("Run tests with `make check`.")
    prompt = render_system_prompt(git_repo, "auto-edit", load_instructions(git_repo).text)
    assert str(git_repo.resolve()) in prompt and "auto-edit" in prompt
    assert "Run tests with `make check`." in prompt and "# Project instructions" in prompt
    assert "# Project instructions" not in render_system_prompt(git_repo, "ask", "")


def test_built_agent_carries_the_instructions(git_repo, tmp_path):
    from clover_code.agent.permissions import ModeApprover
    from clover_code.settings import Settings
    from clover_code.wiring.assemble import build_agent

    (git_repo / "CLOVER.md").write_text("Always use tabs.")
    (tmp_path / "r.jsonl").write_text('"hi"\n')
    agent = build_agent(Settings(engine=f"scripted:{tmp_path / 'r.jsonl'}", approval="full-auto",
                                 sandbox=False, allow=["shell:make*"]), git_repo, ModeApprover())
    assert "Always use tabs." in agent.conversation.system
    assert agent.ctx.sandbox  # full-auto always sandboxes the shell
    assert agent.permissions.mode == "full-auto" and agent.permissions.rules == ["shell:make*"]
    assert {"read_file", "edit_file", "run_shell"} <= {t["function"]["name"] for t in agent.conversation.tools}
