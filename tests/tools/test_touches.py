"""Each tool says what a call touches: the paths it reads and writes and the command it runs,
from its arguments alone. Permissions and the UIs read that, never the argument keys."""

from __future__ import annotations

import asyncio
from typing import ClassVar

import pytest
from pydantic import BaseModel

from clover_code.tools import BoundCall, Declaring, Registry, ToolContext, ToolResult, default_registry
from clover_code.tools.touches import ROOT, UNKNOWN, Touches
from clover_code.tools.workspace import Workspace

REGISTRY = default_registry()
PATCH = ("*** Begin Patch\n*** Add File: docs/new.md\n+hi\n*** Update File: src/a.py\n*** Move to: src/b.py\n"
         "@@\n-x\n+y\n*** Delete File: old.txt\n*** End Patch")


def bound(tmp_path, tool: str, **arguments) -> BoundCall:
    call = REGISTRY.bind(tool, arguments, ToolContext(Workspace(tmp_path)))
    assert isinstance(call, BoundCall), call
    return call


@pytest.mark.parametrize("name, arguments, touches", [
    ("read_file", {"path": "src/a.py", "offset": 3}, Touches(reads=("src/a.py",))),
    ("write_file", {"path": "src/new.py", "content": "x"}, Touches(writes=("src/new.py",))),
    ("edit_file", {"path": "a.py", "old_string": "x", "new_string": "y"}, Touches(reads=("a.py",), writes=("a.py",))),
    ("apply_patch", {"patch": PATCH},
     Touches(reads=("src/a.py", "old.txt"), writes=("docs/new.md", "src/a.py", "src/b.py", "old.txt"))),
    ("list_files", {}, Touches(reads=(ROOT,))),
    ("list_files", {"path": "src", "depth": 2}, Touches(reads=("src",))),
    ("glob", {"pattern": "*.md"}, Touches(reads=(ROOT,), label="*.md")),
    ("grep", {"pattern": "TODO", "path": "src", "glob": "*.py"}, Touches(reads=("src",), label="TODO")),
    ("symbols", {"path": "src/a.py", "name": "add"}, Touches(reads=("src/a.py",))),
    ("repo_map", {"focus": ["src/a.py"]}, Touches(reads=(ROOT, "src/a.py"))),
    ("run_shell", {"command": "pytest -q", "cwd": "src"}, Touches(reads=(ROOT,), writes=(ROOT,), runs="pytest -q")),
    ("git_status", {}, Touches(reads=(ROOT,))),
    ("git_diff", {"path": "src"}, Touches(reads=("src",))),
    ("git_log", {"n": 3}, Touches(reads=(ROOT,))),
    ("git_commit", {"message": "Fix add", "paths": ["src/a.py"]}, Touches(reads=("src/a.py",), label="Fix add")),
    ("git_commit", {"message": "Everything"}, Touches(reads=(ROOT,), label="Everything")),
])
def test_each_tool_declares_what_a_call_touches(tmp_path, name, arguments, touches):
    assert bound(tmp_path, name, **arguments).touches == touches


def test_every_tool_of_clover_code_declares():
    assert [name for name, tool in REGISTRY.tools.items() if not isinstance(tool, Declaring)] == []


def test_a_patch_that_does_not_parse_vouches_for_nothing(tmp_path):
    for text in ("rm -rf /", "*** Begin Patch\n*** Update File: a\n*** End Patch", "*** Begin Patch\n*** End Patch"):
        assert bound(tmp_path, "apply_patch", patch=text).touches == UNKNOWN


def test_a_declaration_says_nothing_about_the_workspace_it_does_not_read(tmp_path):
    """Only the arguments count: a missing file is declared as named (the call fails when run)."""
    call = bound(tmp_path, "edit_file", path="nowhere/x.py", old_string="a", new_string="b")
    assert call.touches.writes == ("nowhere/x.py",) and not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("touches, summary", [
    (Touches(reads=(ROOT,), writes=(ROOT,), runs="make test"), "make test"),
    (Touches(reads=("a.py",), writes=("a.py",)), "a.py"),
    (Touches(writes=("a.py", "b.py")), "a.py b.py"),
    (Touches(reads=(ROOT,), label="*.md"), "*.md"),
    (Touches(reads=(ROOT,)), ""),
    (UNKNOWN, ""),
])
def test_the_summary_uis_show(touches, summary):
    assert touches.summary == summary


class Plain:
    """A tool that declares nothing (as an MCP tool may)."""

    name: ClassVar[str] = "plain"
    kind: ClassVar[str] = "read"

    class Args(BaseModel):
        path: str

    async def run(self, args, ctx) -> ToolResult:
        return ToolResult(True, args.path)


class Broken(Plain):
    name: ClassVar[str] = "broken"

    def touches(self, args) -> Touches:
        raise RuntimeError("a bug in a declaration")


def test_a_tool_without_a_declaration_touches_unknown_and_counts_as_a_write(tmp_path):
    registry, ctx = Registry([Plain(), Broken()]), ToolContext(Workspace(tmp_path))
    plain = registry.bind("plain", {"path": "a.md"}, ctx)
    assert isinstance(plain, BoundCall) and plain.touches == UNKNOWN and plain.kind == "edit"
    assert asyncio.run(plain.run()) == ToolResult(True, "a.md")  # it still runs, when allowed
    broken = registry.bind("broken", {"path": "a.md"}, ctx)
    assert isinstance(broken, BoundCall) and broken.touches == UNKNOWN and broken.kind == "read"
