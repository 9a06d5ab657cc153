"""apply_patch: the Codex scenario suite, then fuzz, line endings and the workspace policy."""

import os
import shutil
from pathlib import Path

import pytest

from clover_code.tools import Registry, ToolContext
from clover_code.tools.files import TOOLS, ApplyPatch
from clover_code.tools.workspace import Workspace

SCENARIOS = Path(__file__).parents[2].parent / "shared" / "peer-suites" / "codex-apply-patch" / "scenarios"
# The scenarios whose patch must be rejected (expected/ says what is left on disk).
FAILING = {"005", "006", "007", "008", "009", "012", "013", "015"}


def scenario_dirs() -> list[Path]:
    if not SCENARIOS.is_dir():
        return []
    return sorted(p for p in SCENARIOS.iterdir() if p.is_dir())


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under root (folders too, as None) with its bytes."""
    if not root.is_dir():
        return {}
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in root.rglob("*")}


async def apply(ctx: ToolContext, patch: str):
    return await Registry(TOOLS).call("apply_patch", {"patch": patch}, ctx)


def seen_all(root: Path) -> ToolContext:
    """A context in which the agent has read every file (as it would before patching)."""
    ws = Workspace(root)
    for path in root.rglob("*"):
        if path.is_file():
            ws.note_read(path.resolve())
    return ToolContext(workspace=ws)


# CI always has shared/ beside the clone: there a missing suite is a failure, not a skip.
MISSING_OK = not os.environ.get("CI")


@pytest.mark.skipif(MISSING_OK and not SCENARIOS.is_dir(), reason=f"Codex scenarios not found at {SCENARIOS}")
@pytest.mark.parametrize("scenario", scenario_dirs(), ids=lambda p: p.name)
async def test_codex_scenario(scenario: Path, tmp_path: Path):
    work = tmp_path / "work"
    if (scenario / "input").is_dir():
        shutil.copytree(scenario / "input", work)
    else:
        work.mkdir()
    result = await apply(seen_all(work), (scenario / "patch.txt").read_text(encoding="utf-8"))
    assert snapshot(work) == snapshot(scenario / "expected")
    should_fail = scenario.name[:3] in FAILING
    assert result.ok is not should_fail, result.output
    if should_fail:
        assert result.output and "Traceback" not in result.output
    else:
        assert result.output.startswith("Success.") and result.data["diff"]


def test_all_scenarios_present():
    if MISSING_OK and not SCENARIOS.is_dir():
        pytest.skip(f"Codex scenarios not found at {SCENARIOS}")
    assert len(scenario_dirs()) == 23


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    return root


def patch(*body: str) -> str:
    return "\n".join(["*** Begin Patch", *body, "*** End Patch"]) + "\n"


async def test_fuzz_trailing_whitespace_and_unicode_punctuation(root: Path):
    (root / "a.py").write_text("x = 1   \nmsg = \u201chello \u2014 world\u201d\ny = 2\n")
    result = await apply(seen_all(root), patch(
        "*** Update File: a.py", "@@", " x = 1", '-msg = "hello - world"', '+msg = "hi"', " y = 2"))
    assert result.ok, result.output
    assert (root / "a.py").read_text() == 'x = 1   \nmsg = "hi"\ny = 2\n'


async def test_context_header_picks_the_right_occurrence(root: Path):
    (root / "a.py").write_text("def f():\n    return 0\n\ndef g():\n    return 0\n")
    result = await apply(seen_all(root), patch(
        "*** Update File: a.py", "@@ def g():", "-    return 0", "+    return 1"))
    assert result.ok, result.output
    assert (root / "a.py").read_text() == "def f():\n    return 0\n\ndef g():\n    return 1\n"


async def test_keeps_crlf_and_missing_final_newline(root: Path):
    (root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree")
    result = await apply(seen_all(root), patch("*** Update File: win.txt", "@@", " one", "-two", "+2"))
    assert result.ok, result.output
    assert (root / "win.txt").read_bytes() == b"one\r\n2\r\nthree"


async def test_escape_refuses_whole_patch(root: Path):
    result = await apply(seen_all(root), patch("*** Add File: ok.txt", "+fine", "*** Add File: ../evil.txt", "+x"))
    assert not result.ok and "outside the workspace" in result.output
    assert not (root / "ok.txt").exists() and not (root.parent / "evil.txt").exists()
    (root / "etc").symlink_to("/etc", target_is_directory=True)
    result = await apply(seen_all(root), patch("*** Update File: etc/hostname", "@@", "+x"))
    assert not result.ok and "symlink" in result.output


async def test_git_dir_refused(root: Path):
    (root / ".git").mkdir()
    result = await apply(seen_all(root), patch("*** Add File: .git/hooks/post-checkout", "+#!/bin/sh"))
    assert not result.ok and ".git" in result.output
    assert not (root / ".git" / "hooks").exists()


@pytest.mark.parametrize("header", ["*** Add File: .clover/sessions/x.jsonl", "  *** Add File: .clover/x",
                                    "*** Add File: ./.clover/../.clover/x", "*** Add File: sub/.git/config"])
async def test_clover_and_nested_git_refused(root: Path, header: str):
    result = await apply(seen_all(root), patch("*** Add File: ok.txt", "+fine", header, "+{}"))
    assert not result.ok and "never write" in result.output
    assert snapshot(root) == {}


async def test_move_into_clover_refused(root: Path):
    (root / "a.txt").write_text("a\n")
    result = await apply(seen_all(root), patch("*** Update File: a.txt", "*** Move to: .clover/config.toml",
                                               "@@", "-a", "+engine = 1"))
    assert not result.ok and ".clover" in result.output
    assert snapshot(root) == {"a.txt": b"a\n"}


async def test_stale_read_guard_changes_nothing(root: Path):
    (root / "a.txt").write_text("a\n")
    (root / "b.txt").write_text("b\n")
    ctx = ToolContext(workspace=Workspace(root))
    unread = await apply(ctx, patch("*** Add File: new.txt", "+n", "*** Update File: a.txt", "@@", "-a", "+A"))
    assert not unread.ok and "not read it yet" in unread.output
    assert not (root / "new.txt").exists()
    ctx = seen_all(root)
    (root / "b.txt").write_text("b, edited by the user\n")
    stale = await apply(ctx, patch("*** Update File: a.txt", "@@", "-a", "+A", "*** Delete File: b.txt"))
    assert not stale.ok and "changed on disk" in stale.output
    assert (root / "a.txt").read_text() == "a\n" and (root / "b.txt").exists()


async def test_binary_file_refused(root: Path):
    (root / "blob").write_bytes(b"a\0b\n")
    result = await apply(seen_all(root), patch("*** Update File: blob", "@@", "-a", "+b"))
    assert not result.ok and "binary" in result.output


@pytest.mark.parametrize("text, message", [
    ("*** Update File: a.txt\n@@\n-a\n+b\n*** End Patch", "first line"),
    ("*** Begin Patch\n*** Update File: a.txt\n@@\n-a\n+b", "last line"),
    (patch("*** Update File: a.txt", "@@", "-a", "oops"), "unexpected line"),
])
async def test_parse_errors_are_clear(root: Path, text: str, message: str):
    (root / "a.txt").write_text("a\n")
    result = await apply(seen_all(root), text)
    assert not result.ok and message in result.output
    assert (root / "a.txt").read_text() == "a\n"


async def test_preview_does_not_write(root: Path):
    (root / "a.txt").write_text("a\n")
    ctx = seen_all(root)
    tool = ApplyPatch()
    diff = tool.preview(tool.Args(patch=patch("*** Update File: a.txt", "@@", "-a", "+b",
                                              "*** Add File: c.txt", "+c")), ctx)
    assert "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n" in diff
    assert "--- /dev/null\n+++ b/c.txt\n" in diff
    assert (root / "a.txt").read_text() == "a\n" and not (root / "c.txt").exists()


async def test_result_lists_paths_and_diff(root: Path):
    (root / "old.txt").write_text("keep\nchange\n")
    result = await apply(seen_all(root), patch(
        "*** Update File: old.txt", "*** Move to: sub/new.txt", "@@", " keep", "-change", "+changed"))
    assert result.ok, result.output
    assert result.data["paths"] == ["sub/new.txt", "old.txt"]
    assert "A sub/new.txt" in result.output and "D old.txt" in result.output
    assert (root / "sub/new.txt").read_text() == "keep\nchanged\n"


async def test_stacked_headers_narrow_down(root: Path):
    (root / "a.py").write_text(
        "class A:\n    def m(self):\n        return 0\n\nclass B:\n    def m(self):\n        return 0\n")
    result = await apply(seen_all(root), patch(
        "*** Update File: a.py", "@@ class B:", "@@     def m(self):", "-        return 0", "+        return 1"))
    assert result.ok, result.output
    assert (root / "a.py").read_text().endswith("class B:\n    def m(self):\n        return 1\n")
    assert "class A:\n    def m(self):\n        return 0\n" in (root / "a.py").read_text()


async def test_pure_addition_under_header_goes_after_it(root: Path):
    (root / "a.py").write_text("import os\n\ndef main():\n    pass\n")
    result = await apply(seen_all(root), patch("*** Update File: a.py", "@@ import os", "+import sys"))
    assert result.ok, result.output
    assert (root / "a.py").read_text() == "import os\nimport sys\n\ndef main():\n    pass\n"


async def test_missing_lines_error_shows_closest_region(root: Path):
    (root / "a.py").write_text("def f():\n    total = compute(1, 2)\n    return total\n")
    result = await apply(seen_all(root), patch(
        "*** Update File: a.py", "@@", "-    total = compute(1, 3)", "+    total = 0"))
    assert not result.ok
    assert "could not find these lines in a.py" in result.output
    assert "closest region (lines 2-2" in result.output and "     2\t    total = compute(1, 2)" in result.output
    assert "Nothing was changed" in result.output


async def test_partial_failure_reports_what_was_applied(root: Path):
    result = await apply(seen_all(root), patch("*** Add File: made.txt", "+m", "*** Delete File: nope.txt"))
    assert not result.ok
    assert "operation 2 (*** Delete File: nope.txt) failed" in result.output and "A made.txt" in result.output
    assert result.data["paths"] == ["made.txt"] and "+m" in result.data["diff"]


async def test_insertion_and_change_at_the_same_line(root: Path):
    (root / "a.py").write_text("import os\nx = 1\n")
    result = await apply(seen_all(root), patch(
        "*** Update File: a.py", "@@ import os", "+import sys", "@@", "-x = 1", "+x = 2"))
    assert result.ok, result.output
    assert (root / "a.py").read_text() == "import os\nimport sys\nx = 2\n"
