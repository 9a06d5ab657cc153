"""read_file, write_file and edit_file on real files in a temp workspace."""

import os
import stat
from pathlib import Path

import pytest

from clover_code.tools import Registry, ToolContext
from clover_code.tools.files import TOOLS, EditFile, WriteFile
from clover_code.tools.workspace import Workspace


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    return root


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root))


async def call(ctx: ToolContext, name: str, **args):
    return await Registry(TOOLS).call(name, args, ctx)


async def read(ctx: ToolContext, path: str, **args):
    result = await call(ctx, "read_file", path=path, **args)
    assert result.ok, result.output
    return result


# -- read_file ---------------------------------------------------------------------


async def test_read_numbers_lines(root: Path, ctx: ToolContext):
    (root / "a.py").write_text("one\ntwo\nthree\n")
    result = await read(ctx, "a.py")
    assert result.output == "     1\tone\n     2\ttwo\n     3\tthree"
    assert result.data["paths"] == ["a.py"]


async def test_read_offset_limit_and_notice(root: Path, ctx: ToolContext):
    (root / "a.txt").write_text("".join(f"line {n}\n" for n in range(1, 101)))
    result = await read(ctx, "a.txt", offset=10, limit=3)
    lines = result.output.splitlines()
    assert lines[:3] == ["    10\tline 10", "    11\tline 11", "    12\tline 12"]
    assert "showing lines 10-12 of 100" in lines[-1] and "offset=13" in lines[-1]
    past = await call(ctx, "read_file", path="a.txt", offset=500)
    assert not past.ok and "past the end" in past.output


async def test_read_cuts_long_lines(root: Path, ctx: ToolContext):
    (root / "min.js").write_text("x" * 10_000 + "\nshort\n")
    result = await read(ctx, "min.js")
    first, second = result.output.splitlines()[:2]
    assert first.endswith("[...]") and len(first) < 2100
    assert second == "     2\tshort"
    assert "were cut" in result.output


async def test_read_refuses_binary(root: Path, ctx: ToolContext):
    (root / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    result = await call(ctx, "read_file", path="img.png")
    assert not result.ok and "binary file" in result.output


async def test_read_non_utf8(root: Path, ctx: ToolContext):
    (root / "latin1.txt").write_bytes("café\nplain\n".encode("latin-1"))
    result = await read(ctx, "latin1.txt")
    assert "caf\ufffd" in result.output and "     2\tplain" in result.output
    assert "not valid UTF-8" in result.output


async def test_read_empty_missing_directory(root: Path, ctx: ToolContext):
    (root / "empty.txt").write_text("")
    (root / "src" / "main.py").write_text("")
    assert "is empty" in (await read(ctx, "empty.txt")).output
    missing = await call(ctx, "read_file", path="src/mian.py")
    assert not missing.ok and "file not found" in missing.output and "src/main.py" in missing.output
    folder = await call(ctx, "read_file", path="src")
    assert not folder.ok and "directory" in folder.output


async def test_read_refuses_escapes(root: Path, ctx: ToolContext):
    (root / "etc").symlink_to("/etc", target_is_directory=True)
    (root / "passwd").symlink_to("/etc/passwd")
    for path in ["../x", "/etc/passwd", "passwd", "etc/passwd", "/home/user/.bashrc"]:
        result = await call(ctx, "read_file", path=path)
        assert not result.ok and "outside the workspace" in result.output, path


@pytest.fixture(scope="module")
def big_file(tmp_path_factory) -> Path:
    """A 50 MB text file: 1.1 million numbered lines, one marker near the end."""
    root = tmp_path_factory.mktemp("big")
    lines = [b"line %07d of a big generated file\n" % n for n in range(1, 1_400_001)]
    lines[-5] = b"UNIQUE MARKER near the end\n"
    data = b"".join(lines)
    assert len(data) >= 50_000_000
    (root / "big.log").write_bytes(data)
    return root


async def test_big_file_read_and_edit(big_file: Path):
    ctx = ToolContext(workspace=Workspace(big_file))
    first = await read(ctx, "big.log")
    assert first.output.startswith("     1\tline 0000001 of a big generated file")
    assert len(first.output.splitlines()) == 2001  # 2000 lines and the notice
    assert "offset=2001" in first.output and "MB" in first.output
    tail = await read(ctx, "big.log", offset=1_399_990, limit=20)
    assert "UNIQUE MARKER" in tail.output
    edited = await call(ctx, "edit_file", path="big.log", old_string="UNIQUE MARKER", new_string="EDITED MARKER")
    assert edited.ok, edited.output
    with open(big_file / "big.log", "rb") as fh:
        fh.seek(-200, 2)
        assert b"EDITED MARKER near the end\n" in fh.read()


# -- write_file --------------------------------------------------------------------


async def test_write_creates_with_parents(root: Path, ctx: ToolContext):
    result = await call(ctx, "write_file", path="pkg/sub/mod.py", content="x = 1\n")
    assert result.ok, result.output
    assert (root / "pkg/sub/mod.py").read_text() == "x = 1\n"
    assert result.data["paths"] == ["pkg/sub/mod.py"]
    assert "+++ b/pkg/sub/mod.py" in result.data["diff"] and "+x = 1" in result.data["diff"]


async def test_write_existing_needs_read_and_keeps_mode(root: Path, ctx: ToolContext):
    script = root / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    refused = await call(ctx, "write_file", path="run.sh", content="#!/bin/sh\necho new\n")
    assert not refused.ok and "read it with read_file first" in refused.output
    await read(ctx, "run.sh")
    result = await call(ctx, "write_file", path="run.sh", content="#!/bin/sh\necho new\n")
    assert result.ok, result.output
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert "-echo old\n+echo new" in result.data["diff"]


async def test_write_keeps_crlf(root: Path, ctx: ToolContext):
    (root / "win.txt").write_bytes(b"a\r\nb\r\n")
    await read(ctx, "win.txt")
    assert (await call(ctx, "write_file", path="win.txt", content="a\nc\n")).ok
    assert (root / "win.txt").read_bytes() == b"a\r\nc\r\n"


async def test_write_into_git_refused(root: Path, ctx: ToolContext):
    result = await call(ctx, "write_file", path=".git/hooks/pre-commit", content="#!/bin/sh\ncurl evil\n")
    assert not result.ok and ".git" in result.output
    assert not (root / ".git/hooks").exists()


async def test_write_into_clover_refused(root: Path, ctx: ToolContext):
    (root / ".clover" / "sessions").mkdir(parents=True)
    (root / "notes").symlink_to(root / ".clover", target_is_directory=True)
    for path in (".clover/sessions/forged.jsonl", ".clover/config.toml", "./.clover/../.clover/x", "notes/x"):
        result = await call(ctx, "write_file", path=path, content="{}")
        assert not result.ok and ".clover" in result.output and "never write" in result.output, path
    (root / ".clover" / "config.toml").write_text("max_turns = 3\n")
    await read(ctx, ".clover/config.toml")  # reading is fine
    result = await call(ctx, "edit_file", path=".clover/config.toml", old_string="3", new_string="9")
    assert not result.ok and ".clover" in result.output
    assert sorted(p.name for p in (root / ".clover").rglob("*")) == ["config.toml", "sessions"]
    assert (root / ".clover" / "config.toml").read_text() == "max_turns = 3\n"


async def test_write_through_symlinked_dir_refused(root: Path, tmp_path: Path, ctx: ToolContext):
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "out").symlink_to(outside, target_is_directory=True)
    result = await call(ctx, "write_file", path="out/evil.txt", content="x")
    assert not result.ok and "symlink" in result.output
    assert not (outside / "evil.txt").exists()


async def test_write_preview_does_not_write(root: Path, ctx: ToolContext):
    diff = WriteFile().preview(WriteFile.Args(path="new.txt", content="hello\n"), ctx)
    assert "+hello" in diff and not (root / "new.txt").exists()


# -- edit_file ---------------------------------------------------------------------


async def edit(ctx, path, old, new, **kw):
    return await call(ctx, "edit_file", path=path, old_string=old, new_string=new, **kw)


async def test_edit_replaces_once(root: Path, ctx: ToolContext):
    (root / "a.py").write_text("def f():\n    return 1\n")
    await read(ctx, "a.py")
    result = await edit(ctx, "a.py", "return 1", "return 2")
    assert result.ok, result.output
    assert (root / "a.py").read_text() == "def f():\n    return 2\n"
    assert "-    return 1\n+    return 2" in result.data["diff"]
    assert result.data["paths"] == ["a.py"]


async def test_edit_ambiguous_and_replace_all(root: Path, ctx: ToolContext):
    (root / "a.py").write_text("x = 1\ny = x\nz = x\n")
    await read(ctx, "a.py")
    ambiguous = await edit(ctx, "a.py", "= x", "= w")
    assert not ambiguous.ok and "matches 2 times" in ambiguous.output and "lines 2, 3" in ambiguous.output
    assert (root / "a.py").read_text() == "x = 1\ny = x\nz = x\n"
    assert (await edit(ctx, "a.py", "= x", "= w", replace_all=True)).ok
    assert (root / "a.py").read_text() == "x = 1\ny = w\nz = w\n"


async def test_edit_not_found_shows_closest_region(root: Path, ctx: ToolContext):
    body = "".join(f"def f{n}(a, b):\n    return a + {n}\n\n" for n in range(30))
    (root / "m.py").write_text(body)
    await read(ctx, "m.py")
    result = await edit(ctx, "m.py", "def f17(a, b):\n  return a + 17", "def f17(a, b):\n    return a - 17")
    assert not result.ok
    assert "not found" in result.output and "closest region (lines 52-53" in result.output
    assert "    52\tdef f17(a, b):" in result.output and "    53\t    return a + 17" in result.output
    nothing = await edit(ctx, "m.py", "@@@@@@@@@@@@@@@@@@@@@@@@", "x")
    assert not nothing.ok and "Nothing in the file looks like it" in nothing.output


async def test_edit_keeps_crlf_and_missing_final_newline(root: Path, ctx: ToolContext):
    (root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree")
    await read(ctx, "win.txt")
    result = await edit(ctx, "win.txt", "one\ntwo", "one\n1.5\ntwo")
    assert result.ok, result.output
    assert (root / "win.txt").read_bytes() == b"one\r\n1.5\r\ntwo\r\nthree"
    assert (await edit(ctx, "win.txt", "three", "3")).ok
    assert (root / "win.txt").read_bytes() == b"one\r\n1.5\r\ntwo\r\n3"


async def test_edit_keeps_undecodable_bytes(root: Path, ctx: ToolContext):
    (root / "mixed.txt").write_bytes(b"caf\xe9\nvalue = 1\n")
    await read(ctx, "mixed.txt")
    assert (await edit(ctx, "mixed.txt", "value = 1", "value = 2")).ok
    assert (root / "mixed.txt").read_bytes() == b"caf\xe9\nvalue = 2\n"


async def test_edit_stale_read_guard(root: Path, ctx: ToolContext):
    path = root / "a.py"
    path.write_text("x = 1\n")
    unread = await edit(ctx, "a.py", "x = 1", "x = 2")
    assert not unread.ok and "not read it yet" in unread.output
    await read(ctx, "a.py")
    path.write_text("x = 1\ny = 'typed by the user'\n")
    stale = await edit(ctx, "a.py", "x = 1", "x = 2")
    assert not stale.ok and "changed on disk since you last read it" in stale.output
    assert path.read_text() == "x = 1\ny = 'typed by the user'\n"
    await read(ctx, "a.py")
    assert (await edit(ctx, "a.py", "x = 1", "x = 2")).ok
    assert (await edit(ctx, "a.py", "x = 2", "x = 3")).ok  # our own write counts as read
    assert path.read_text() == "x = 3\ny = 'typed by the user'\n"


async def test_edit_refuses_binary_missing_same_and_git(root: Path, ctx: ToolContext):
    (root / "blob.bin").write_bytes(b"abc\0def")
    assert not (await call(ctx, "read_file", path="blob.bin")).ok
    assert "binary" in (await edit(ctx, "blob.bin", "abc", "xyz")).output
    assert "file not found" in (await edit(ctx, "nope.py", "a", "b")).output
    assert "the same" in (await edit(ctx, "blob.bin", "a", "a")).output
    (root / ".git" / "config").write_text("[core]\n")
    assert ".git" in (await edit(ctx, ".git/config", "[core]", "[evil]")).output


async def test_edit_preview_does_not_write(root: Path, ctx: ToolContext):
    (root / "a.py").write_text("x = 1\n")
    await read(ctx, "a.py")
    tool = EditFile()
    diff = tool.preview(tool.Args(path="a.py", old_string="x = 1", new_string="x = 2"), ctx)
    assert diff.startswith("--- a/a.py\n+++ b/a.py\n") and "-x = 1\n+x = 2\n" in diff
    assert (root / "a.py").read_text() == "x = 1\n"


def test_schemas_come_from_args_and_prompts():
    schemas = {s["function"]["name"]: s["function"] for s in Registry(TOOLS).schemas()}
    assert set(schemas) == {"read_file", "write_file", "edit_file", "apply_patch"}
    assert "*** Begin Patch" in schemas["apply_patch"]["description"]
    edit = schemas["edit_file"]["parameters"]
    assert edit["required"] == ["path", "old_string", "new_string"]
    assert "replace_all" in edit["properties"] and edit["properties"]["replace_all"]["description"]
    kinds = {tool.name: tool.kind for tool in TOOLS}
    assert kinds == {"read_file": "read", "write_file": "edit", "edit_file": "edit", "apply_patch": "edit"}


async def test_write_over_binary_file(root: Path, ctx: ToolContext):
    (root / "data.bin").write_bytes(b"\0\1\2")
    assert not (await call(ctx, "read_file", path="data.bin")).ok  # refused, but seen
    result = await call(ctx, "write_file", path="data.bin", content="now text\n")
    assert result.ok, result.output
    assert result.data["diff"] == "Binary file data.bin changed (3 -> 9 bytes)\n"
    assert (root / "data.bin").read_text() == "now text\n"


async def test_fifo_refused_without_blocking(root: Path, ctx: ToolContext):
    os.mkfifo(root / "pipe")
    result = await call(ctx, "read_file", path="pipe")
    assert not result.ok and "not a regular file" in result.output


async def test_edit_with_line_number_prefixes_gets_a_hint(root: Path, ctx: ToolContext):
    (root / "a.py").write_text("\n\nx = 1\n")
    await read(ctx, "a.py")
    result = await edit(ctx, "a.py", "     3\tx = 1", "     3\tx = 2")
    assert not result.ok and "line numbers" in result.output
    near = await edit(ctx, "a.py", "x = 11", "x = 2")
    assert "closest region (lines 3-3" in near.output  # leading blank lines keep their numbers
