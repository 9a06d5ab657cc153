"""list_files, glob and grep on real temp trees, through the real ripgrep binary."""

import subprocess
import sys
from pathlib import Path

import pytest

from clover_code.tools import Registry, ToolContext, tool_schema
from clover_code.tools.search import TOOLS
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.listing import rg_binary


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    files = {
        ".gitignore": "build/\n*.log\n",
        "README.md": "Hello project\n",
        "src/app.py": "import os\n\ndef main():\n    print('hello world')\n    return compute(1)\n",
        "src/util.py": "def compute(x):\n    return x * 2  # Hello\n",
        "src/pkg/deep.py": "VALUE = 'a.b(c'\n",
        "src/pkg/.gitignore": "generated.py\n",
        "src/pkg/generated.py": "hello = 1\n",
        "build/out.py": "hello = 2\n",
        "debug.log": "hello log\n",
        ".github/workflows/ci.yml": "name: hello\n",
        ".git/config": "hello = git internals\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root))


async def call(ctx: ToolContext, name: str, **args):
    return await Registry(TOOLS).call(name, args, ctx)


VISIBLE = [".github/workflows/ci.yml", ".gitignore", "README.md", "src/app.py", "src/pkg/.gitignore",
           "src/pkg/deep.py", "src/util.py"]


def test_rg_comes_from_the_venv():
    assert Path(rg_binary()).parent == Path(sys.executable).parent


def test_schemas_come_from_args_and_prompts():
    for tool in TOOLS:
        schema = tool_schema(tool)["function"]
        assert schema["description"] and tool.kind == "read"
        assert all(p.get("description") for p in schema["parameters"]["properties"].values()), tool.name


# -- list_files / glob ----------------------------------------------------------------


async def test_list_files_honours_gitignore_without_git(ctx: ToolContext):
    result = await call(ctx, "list_files")
    assert result.ok and result.output.splitlines() == VISIBLE


async def test_list_files_honours_gitignore_in_a_git_repo(root: Path, ctx: ToolContext):
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / ".git" / "info").mkdir(exist_ok=True)
    (root / ".git" / "info" / "exclude").write_text("README.md\n")
    result = await call(ctx, "list_files")
    assert result.output.splitlines() == [p for p in VISIBLE if p != "README.md"]


async def test_list_files_subdir_depth_and_limit(ctx: ToolContext):
    assert (await call(ctx, "list_files", path="src/pkg")).output.splitlines() == [
        "src/pkg/.gitignore", "src/pkg/deep.py"]
    shallow = await call(ctx, "list_files", depth=1)
    assert shallow.output.splitlines() == [".github/ (1 file)", ".gitignore", "README.md", "src/ (4 files)"]
    capped = await call(ctx, "list_files", limit=2)
    assert capped.output.splitlines()[:2] == VISIBLE[:2]
    assert "showing 2 of 7 entries" in capped.output


async def test_list_files_skips_symlinks_out(root: Path, ctx: ToolContext):
    (root / "passwd").symlink_to("/etc/passwd")
    (root / "etc").symlink_to("/etc")
    assert (await call(ctx, "list_files")).output.splitlines() == VISIBLE


async def test_glob_matches_at_any_depth_and_anchored(ctx: ToolContext):
    assert (await call(ctx, "glob", pattern="*.py")).output.splitlines() == [
        "src/app.py", "src/pkg/deep.py", "src/util.py"]
    assert (await call(ctx, "glob", pattern="pkg/**/*.py", path="src")).output.splitlines() == ["src/pkg/deep.py"]
    none = await call(ctx, "glob", pattern="*.rs")
    assert none.ok and "no files match" in none.output


@pytest.mark.parametrize("path", ["../", "/etc", "src/../../x"])
async def test_paths_outside_are_refused(ctx: ToolContext, path: str):
    for name, args in [("list_files", {}), ("glob", {"pattern": "*"}), ("grep", {"pattern": "root"})]:
        result = await call(ctx, name, path=path, **args)
        assert not result.ok and "outside the workspace" in result.output


async def test_symlinked_directory_to_outside_is_refused(root: Path, ctx: ToolContext):
    (root / "etc").symlink_to("/etc")
    result = await call(ctx, "grep", pattern="root", path="etc")
    assert not result.ok and "symlink" in result.output


async def test_list_files_on_a_file_says_so(ctx: ToolContext):
    result = await call(ctx, "list_files", path="src/app.py")
    assert not result.ok and "read_file" in result.output


# -- grep ------------------------------------------------------------------------------


async def test_grep_finds_lines_and_skips_ignored(ctx: ToolContext):
    result = await call(ctx, "grep", pattern="hello")
    assert result.ok
    assert sorted(result.output.splitlines()) == [
        ".github/workflows/ci.yml:1:name: hello", "src/app.py:4:    print('hello world')"]


async def test_grep_options(ctx: ToolContext):
    loud = await call(ctx, "grep", pattern="hello", ignore_case=True, glob="*.py")
    assert sorted(loud.output.splitlines()) == ["src/app.py:4:    print('hello world')",
                                                "src/util.py:2:    return x * 2  # Hello"]
    assert (await call(ctx, "grep", pattern="hello", glob="!*.py")).output == ".github/workflows/ci.yml:1:name: hello"
    assert (await call(ctx, "grep", pattern="VALUE", glob="src/pkg/*.py")).output == "src/pkg/deep.py:1:VALUE = 'a.b(c'"
    literal = await call(ctx, "grep", pattern="a.b(c", fixed_strings=True)
    assert literal.output == "src/pkg/deep.py:1:VALUE = 'a.b(c'"
    regex = await call(ctx, "grep", pattern=r"def \w+\(x\)", path="src")
    assert regex.output == "src/util.py:1:def compute(x):"
    one_file = await call(ctx, "grep", pattern="compute", path="src/app.py")
    assert one_file.output == "src/app.py:5:    return compute(1)"
    files = await call(ctx, "grep", pattern="compute", files_only=True)
    assert sorted(files.output.splitlines()) == ["src/app.py", "src/util.py"]
    dash = await call(ctx, "grep", pattern="-x", fixed_strings=True)
    assert dash.ok and "no matches" in dash.output


async def test_grep_context_lines(ctx: ToolContext):
    result = await call(ctx, "grep", pattern="print", path="src/app.py", context=1)
    assert result.output.splitlines() == [
        "src/app.py-3-def main():", "src/app.py:4:    print('hello world')", "src/app.py-5-    return compute(1)"]


async def test_grep_lists_files_in_path_order_whatever_order_rg_found_them(root: Path, ctx: ToolContext):
    # rg searches with several threads and in the directory's order: without sorting, these
    # came back in another order from run to run
    names = [f"{d}/m{i:02d}.py" for d in ("zeta", "alpha", "mid") for i in range(40, 0, -3)]
    for name in names:
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text("x = 1\nneedle = 2\ny = 3\nneedle = 4\n")
    matches = (await call(ctx, "grep", pattern="needle")).output.splitlines()
    assert matches == [f"{name}:{line}:needle = {line}" for name in sorted(names) for line in (2, 4)]
    files = await call(ctx, "grep", pattern="needle", files_only=True)
    assert files.output.splitlines() == sorted(names)
    context = (await call(ctx, "grep", pattern="needle = 4", context=1)).output.split("\n--\n")
    assert context == [f"{name}-3-y = 3\n{name}:4:needle = 4" for name in sorted(names)]


async def test_grep_caps_matches_with_a_note(root: Path, ctx: ToolContext):
    (root / "many.txt").write_text("".join(f"needle {i}\n" for i in range(1000)))
    result = await call(ctx, "grep", pattern="needle", max_matches=10)
    lines = result.output.splitlines()
    assert lines[:10] == [f"many.txt:{i + 1}:needle {i}" for i in range(10)]
    assert len(lines) == 11 and "capped at 10 matches" in lines[-1]
    assert result.data == {"matches": 10, "capped": True}
    exact = await call(ctx, "grep", pattern="needle 99[0-9]", max_matches=10)
    assert exact.data == {"matches": 10, "capped": False} and "capped" not in exact.output


async def test_grep_bad_regex_says_how_to_fix(ctx: ToolContext):
    result = await call(ctx, "grep", pattern="compute(")
    assert not result.ok
    assert "invalid regex" in result.output and "unclosed group" in result.output
    assert "fixed_strings" in result.output


async def test_grep_cuts_long_lines_and_survives_binary(root: Path, ctx: ToolContext):
    (root / "long.txt").write_text("needle" + "x" * 100_000 + "\n")
    (root / "blob.bin").write_bytes(b"\x00\x01needle\xff\xfe" * 100)
    result = await call(ctx, "grep", pattern="needle")
    assert result.ok and len(result.output) < 2000
    assert result.output.startswith("long.txt:1:needle")


async def test_grep_missing_path(ctx: ToolContext):
    result = await call(ctx, "grep", pattern="x", path="nope")
    assert not result.ok and "does not exist" in result.output
