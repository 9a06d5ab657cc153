"""/init writes a starter AGENTS.md only as a new plain file in the workspace. A repository can
hold an AGENTS.md that is a link (dangling, to a host file, into .git): /init once wrote
through one, creating the link's target on the host. Judged from the files on disk."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.tui import notes, ready, scripted_app, send, wait_for


@pytest.mark.parametrize("target", ["outside/planted.md", "outside/bashrc", "inside/agents.md", ".git/hooks/pre-commit",
                                    "README.md"],
                         ids=["dangling, outside", "a host file", "dangling, inside", "into .git", "a file inside"])
async def test_init_refuses_an_agents_md_link(target, repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bashrc").write_text("export PATH=/usr/bin\n")
    where = (tmp_path if target.startswith("outside/") else repo) / target
    before = {p: p.read_bytes() for p in (outside / "bashrc", repo / "README.md")}
    (repo / "AGENTS.md").symlink_to(where)
    app = scripted_app(repo, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "/init")
        await wait_for(pilot, lambda: "/init:" in notes(app))
        assert "is a symbolic link" in notes(app) and "refusing to write through it" in notes(app)
    assert os.readlink(repo / "AGENTS.md") == str(where)  # the link is left as it was
    assert not (outside / "planted.md").exists() and not (repo / "inside").exists()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    assert {p: p.read_bytes() for p in before} == before


async def test_init_writes_a_plain_file_and_never_overwrites(repo):
    app = scripted_app(repo, [])
    async with app.run_test(size=(100, 30)) as pilot:
        await ready(pilot)
        await send(pilot, "/init")
        await wait_for(pilot, lambda: "wrote AGENTS.md" in notes(app))
        agents = Path(repo / "AGENTS.md")
        assert not agents.is_symlink() and agents.read_text().startswith(f"# {repo.name}\n")
        agents.write_text("mine\n")
        await send(pilot, "/init")
        await wait_for(pilot, lambda: "already exists" in notes(app))
    assert agents.read_text() == "mine\n"
