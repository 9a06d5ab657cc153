"""Workspace policy on real files: paths stay inside the root, stale reads, atomic writes."""

import os
import stat
from pathlib import Path

import pytest

from clover_code.tools import ToolError
from clover_code.tools.workspace import Workspace


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "src" / "a.py").write_text("a = 1\n")
    return Workspace(root)


def test_root_must_be_a_directory(tmp_path: Path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ToolError, match="not a directory"):
        Workspace(tmp_path / "file")
    with pytest.raises(ToolError, match="does not exist"):
        Workspace(tmp_path / "missing")


def test_paths_inside_resolve(ws: Workspace):
    assert ws.resolve("src/a.py") == ws.root / "src" / "a.py"
    assert ws.resolve(str(ws.root / "src" / "a.py")) == ws.root / "src" / "a.py"
    assert ws.resolve("src/../src/new.py") == ws.root / "src" / "new.py"
    assert ws.relative(ws.resolve("src/a.py")) == "src/a.py"
    assert ws.relative(ws.root) == "."


@pytest.mark.parametrize("path", ["../outside.txt", "src/../../outside.txt", "/etc/passwd", "~/.bashrc"])
def test_escapes_refused(ws: Workspace, path: str):
    with pytest.raises(ToolError, match="outside the workspace"):
        ws.resolve(path)


def test_symlink_to_etc_refused(ws: Workspace):
    (ws.root / "passwd").symlink_to("/etc/passwd")
    with pytest.raises(ToolError, match="symlink that leads outside"):
        ws.resolve("passwd")


def test_symlinked_parent_dir_refused(ws: Workspace):
    (ws.root / "etc").symlink_to("/etc", target_is_directory=True)
    with pytest.raises(ToolError, match="symlink that leads outside"):
        ws.resolve("etc/hostname")
    with pytest.raises(ToolError, match="symlink that leads outside"):
        ws.resolve_for_write("etc/new-file")


def test_symlink_inside_is_followed(ws: Workspace):
    (ws.root / "link.py").symlink_to(ws.root / "src" / "a.py")
    assert ws.resolve("link.py") == ws.root / "src" / "a.py"


def test_bad_paths_get_clear_errors(ws: Workspace):
    with pytest.raises(ToolError, match="empty"):
        ws.resolve("  ")
    with pytest.raises(ToolError, match="NUL"):
        ws.resolve("a\0b")


@pytest.mark.parametrize("path", [".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD", ".GIT/config"])
def test_git_dir_never_written(ws: Workspace, path: str):
    assert ws.resolve(path)  # reading is fine
    with pytest.raises(ToolError, match=r"\.git"):
        ws.resolve_for_write(path)


@pytest.mark.parametrize("path", [".clover/sessions/x.jsonl", ".clover/config.toml", "./.clover/../.clover/x",
                                  "src/../.clover/x", ".CLOVER/x", ".clover./x", ".clover", "sub/.Git/x",
                                  ".git\u200c/config", "a/b/.git./hooks/x"])
def test_clover_and_git_dirs_never_written(ws: Workspace, path: str):
    with pytest.raises(ToolError, match=r"\.clover|\.git") as caught:
        ws.resolve_for_write(path)
    assert "never write" in str(caught.value)


def test_clover_and_git_reached_through_symlinks_refused(ws: Workspace):
    (ws.root / ".clover" / "sessions").mkdir(parents=True)
    (ws.root / "logs").symlink_to(ws.root / ".clover" / "sessions", target_is_directory=True)
    (ws.root / "hooks").symlink_to(ws.root / ".git", target_is_directory=True)
    (ws.root / "dangling").symlink_to(ws.root / ".clover" / "new.toml")
    for path in ("logs/forged.jsonl", "hooks/pre-commit", "dangling", str(ws.root / "logs" / "x")):
        with pytest.raises(ToolError, match="never write"):
            ws.resolve_for_write(path)


def test_clover_below_the_root_is_an_ordinary_folder(ws: Workspace):
    assert ws.resolve_for_write("src/.clover/x") == ws.root / "src" / ".clover" / "x"
    assert ws.resolve_for_write(".cloverfile") == ws.root / ".cloverfile"


def test_root_itself_not_writable(ws: Workspace):
    with pytest.raises(ToolError, match="root itself"):
        ws.resolve_for_write(".")


def test_unread_existing_file_refused_new_file_allowed(ws: Workspace):
    with pytest.raises(ToolError, match="not read it yet"):
        ws.check_fresh(ws.resolve("src/a.py"))
    ws.check_fresh(ws.resolve("src/new.py"))


def test_stale_read_detected(ws: Workspace):
    path = ws.resolve("src/a.py")
    ws.note_read(path)
    ws.check_fresh(path)
    path.write_text("a = 2  # the user edited this\n")
    with pytest.raises(ToolError, match="changed on disk since you last read it"):
        ws.check_fresh(path)
    ws.note_read(path)
    ws.check_fresh(path)


def test_same_size_edit_is_stale_touch_is_not(ws: Workspace):
    path = ws.resolve("src/a.py")
    ws.note_read(path)
    st = path.stat()
    path.write_text("a = 9\n")  # same size; only the content differs
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    with pytest.raises(ToolError, match="changed on disk"):
        ws.check_fresh(path)
    ws.note_read(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000))  # touched, same bytes
    ws.check_fresh(path)


def test_own_write_counts_as_seen(ws: Workspace):
    path = ws.resolve("src/a.py")
    ws.note_read(path)
    ws.atomic_write(path, b"a = 3\n")
    ws.note_written(path)
    ws.check_fresh(path)


def test_atomic_write_keeps_mode_and_leaves_no_temp(ws: Workspace):
    path = ws.resolve("run.sh")
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    ws.atomic_write(path, b"#!/bin/sh\necho hi\n")
    assert path.read_bytes() == b"#!/bin/sh\necho hi\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o755
    assert sorted(p.name for p in ws.root.iterdir()) == [".git", "run.sh", "src"]


def test_atomic_write_new_file_gets_umask_mode_and_parents(ws: Workspace):
    path = ws.resolve_for_write("deep/er/new.txt")
    ws.atomic_write(path, b"x")
    mask = os.umask(0)
    os.umask(mask)
    assert path.read_bytes() == b"x"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~mask


def test_root_reached_through_a_symlink(tmp_path: Path, ws: Workspace):
    alias = tmp_path / "alias"
    alias.symlink_to(ws.root, target_is_directory=True)
    aliased = Workspace(alias)
    assert aliased.root == ws.root
    assert aliased.resolve(str(alias / "src" / "a.py")) == ws.root / "src" / "a.py"
    with pytest.raises(ToolError, match="outside the workspace"):
        aliased.resolve(str(tmp_path / "elsewhere.txt"))


def test_create_new_writes_only_a_new_plain_file(ws: Workspace, tmp_path: Path):
    assert ws.create_new("NEW.md", b"hi\n") == ws.root / "NEW.md"
    assert (ws.root / "NEW.md").read_bytes() == b"hi\n"
    with pytest.raises(FileExistsError):
        ws.create_new("NEW.md", b"again\n")
    for name, target in (("out.md", tmp_path / "planted"), ("in.md", ws.root / "src" / "b.py"),
                         ("hook.md", ws.root / ".git" / "hook"), ("a.md", ws.root / "src" / "a.py")):
        (ws.root / name).symlink_to(target)
        with pytest.raises(ToolError, match="is a symbolic link"):
            ws.create_new(name, b"x")
    assert not (tmp_path / "planted").exists() and not (ws.root / "src" / "b.py").exists()
    assert not (ws.root / ".git" / "hook").exists() and (ws.root / "src" / "a.py").read_text() == "a = 1\n"
    with pytest.raises(ToolError, match=r"never write inside a \.git folder"):
        ws.create_new(".git/config", b"x")
