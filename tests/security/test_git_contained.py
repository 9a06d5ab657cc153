"""Class 1 of issue 31: git never runs, on the host, a program the sandbox planted.

Each attack plants its payload through the real sandboxed shell (or, where the shell
cannot reach, as the repository's owner would have it), then drives the git tools and
checkpoints. The payload writes a marker file on the host; a control run of plain git on
the host shows the payload is live, and the marker must not appear through clover-code.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from clover_code.sandbox.bwrap import bwrap_problem
from clover_code.sandbox.gitrun import Git
from clover_code.tools import Registry, ToolContext, ToolError, ToolResult
from clover_code.tools.git import TOOLS as GIT_TOOLS
from clover_code.tools.shell import TOOLS as SHELL_TOOLS
from clover_code.tools.workspace import Workspace
from clover_code.tools.workspace.checkpoints import Checkpoints

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox: {bwrap_problem()}")
REGISTRY = Registry([*GIT_TOOLS, *SHELL_TOOLS])
IDENTITY = "git config user.email a@b.invalid && git config user.name attacker"


def context(root: Path, tmp_path: Path) -> ToolContext:
    """As clover_code/wiring/assemble.py builds it: one git runner for the session, shared with checkpoints."""
    git = Git(root, sandbox=True)
    git.repository()  # the repository the session starts in (None: a plain folder)
    return ToolContext(Workspace(root), sandbox=True, shell_timeout=30, git=git,
                       checkpoints=Checkpoints(root, cache_dir=tmp_path / "cache", git=git))


async def shell(ctx: ToolContext, command: str) -> str:
    result = await REGISTRY.call("run_shell", {"command": command}, ctx)
    assert result.ok, result.output
    return result.output


def host_git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "host-marker"


async def test_hook_and_filter_in_a_git_dir_the_shell_created(tmp_path: Path, marker: Path):
    ws = tmp_path / "plain"
    ws.mkdir()
    (ws / "notes.txt").write_text("a folder with no repository\n")
    ctx = context(ws, tmp_path)
    await shell(ctx, f"git init -q && {IDENTITY} && git config filter.x.clean 'touch {marker}; cat' && "
                     "echo '* filter=x' > .gitattributes && "
                     f"printf '#!/bin/sh\\ntouch {marker}\\nexit 0\\n' > .git/hooks/pre-commit && "
                     "chmod +x .git/hooks/pre-commit")
    for name, args in [("git_status", {}), ("git_diff", {}), ("git_commit", {"message": "x"})]:
        result = await REGISTRY.call(name, args, ctx)
        assert result.ok, result.output
    ctx.checkpoints.begin_turn()
    ctx.checkpoints.ensure()
    next_session = Checkpoints(ws, cache_dir=tmp_path / "cache")  # the next run finds the planted .git
    next_session.ensure()
    assert not marker.exists()
    (ws / "notes.txt").write_text("changed\n")
    host_git(ws, "add", "-A")  # control: the same repository, git on the host
    assert marker.exists()


def nested_repository(folder: Path, marker: Path, by_shell: bool = True) -> str:
    """Commands that make `folder` a nested repository whose own settings run the payload
    (a clean filter and core.fsmonitor), as the shell would make it."""
    return (f"mkdir -p {folder} && cd {folder} && git init -q && {IDENTITY} && echo a > a.txt && "
            f"git add a.txt && git commit -qm a && git config filter.x.clean 'touch {marker}; cat' && "
            f"git config core.fsmonitor 'touch {marker}; true' && echo '* filter=x' > .git/info/attributes")


def gitlinks(repo: Path, *what: str) -> list[str]:
    """The nested repositories recorded in the index (or, given `HEAD`, in that commit)."""
    args = ["ls-tree", "-r", what[0]] if what else ["ls-files", "--stage"]
    out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout
    return [line.split("\t")[1] for line in out.splitlines() if line.startswith("160000")]


def users_next_git(repo: Path) -> None:
    """What the user runs on the host after the session."""
    for args in (["status"], ["diff"], ["diff", "HEAD"], ["log", "-1", "--stat"]):
        host_git(repo, *args)


@pytest.mark.parametrize("paths", [None, ["sub"]], ids=["everything", "the folder"])
async def test_a_nested_repository_the_shell_made_is_never_committed(git_repo: Path, tmp_path: Path, marker: Path,
                                                                    paths: list[str] | None):
    ctx = context(git_repo, tmp_path)
    await shell(ctx, nested_repository(git_repo / "sub", marker) + f" && echo b > {git_repo}/b.txt")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=git_repo, capture_output=True, text=True).stdout
    refused = await REGISTRY.call("git_commit", {"message": "record sub", **({"paths": paths} if paths else {})}, ctx)
    assert not refused.ok and "sub/ is a git repository of its own" in refused.output, refused.output
    assert "nothing committed" in refused.output and "remove its `.git`" in refused.output
    others = await REGISTRY.call("git_commit", {"message": "the rest", "paths": ["b.txt"]}, ctx)
    assert others.ok, others.output  # the way round it the message names
    assert gitlinks(git_repo) == [] and gitlinks(git_repo, "HEAD") == []
    assert subprocess.run(["git", "rev-parse", "HEAD~1"], cwd=git_repo, capture_output=True, text=True).stdout == head
    users_next_git(git_repo)
    assert not marker.exists()
    host_git(git_repo, "add", "sub")  # control: had it been recorded, the user's git runs its settings
    host_git(git_repo, "status")
    assert marker.exists()


async def test_a_hook_that_records_a_nested_repository_has_its_commit_taken_back(git_repo: Path, tmp_path: Path,
                                                                                 marker: Path):
    owner_hooks(git_repo)
    ctx = context(git_repo, tmp_path)
    await shell(ctx, nested_repository(git_repo / "sub", marker) + f" && cd {git_repo} && "
                     "printf '#!/bin/sh\ngit add sub 2>/dev/null\ntrue\n' > .githooks/pre-commit")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=git_repo, capture_output=True, text=True).stdout
    (git_repo / "b.txt").write_text("b\n")
    result = await REGISTRY.call("git_commit", {"message": "b", "paths": ["b.txt"]}, ctx)
    assert not result.ok and "taken back" in result.output and "sub/" in result.output, result.output
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=git_repo, capture_output=True, text=True).stdout == head
    assert gitlinks(git_repo) == [] and gitlinks(git_repo, "HEAD") == []
    users_next_git(git_repo)
    assert not marker.exists()


async def test_clover_git_never_steps_into_a_nested_repository(git_repo: Path, tmp_path: Path):
    """The owner's own nested repository, recorded by the owner: clover-code's status and diff
    never run its settings, even where `.gitmodules` asks for it (git on the host does, as the
    owner set it up). The marker lies in the work tree, which the sandbox can write: it shows a
    run inside the sandbox too. (`git add`, in git_commit and snapshots, asks a populated nested
    repository whether it changed, as git has no switch against it: contained, as the test above
    shows.)"""
    marker = git_repo / "sub" / ".git" / "settings-ran"
    subprocess.run(["bash", "-c", nested_repository(git_repo / "sub", marker)], check=True, capture_output=True)
    host_git(git_repo, "add", "sub")
    (git_repo / ".gitmodules").write_text('[submodule "sub"]\n\tpath = sub\n\tignore = none\n')
    host_git(git_repo, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-qm", "owner's nested repository")
    marker.unlink(missing_ok=True)
    ctx = context(git_repo, tmp_path)
    for stamp in (946684800, 978307200):
        os.utime(git_repo / "sub" / "a.txt", (stamp, stamp))  # stat-dirty: git re-reads it through the filter
        for name, args in (("git_status", {}), ("git_diff", {}), ("git_diff", {"staged": True})):
            assert (await REGISTRY.call(name, args, ctx)).ok
    assert not marker.exists()
    host_git(git_repo, "status")  # control
    assert marker.exists()


def owner_hooks(repo: Path) -> None:
    """The owner keeps the hooks in the tree (core.hooksPath, as husky does)."""
    (repo / ".githooks").mkdir()
    (repo / ".githooks" / "pre-commit").write_text("#!/bin/sh\ntrue\n")
    (repo / ".githooks" / "pre-commit").chmod(0o755)
    host_git(repo, "config", "core.hooksPath", ".githooks")


def owner_filter(repo: Path) -> Path:
    """The owner's clean filter, a script kept in the tree; a tracked text file it applies to."""
    (repo / ".filters").mkdir()
    (repo / ".filters" / "clean.sh").write_text("cat\n")
    (repo / ".gitattributes").write_text("*.txt filter=tidy\n")
    (repo / "notes.txt").write_text("notes\n")
    host_git(repo, "config", "filter.tidy.clean", "sh .filters/clean.sh")
    host_git(repo, "add", "-A")
    host_git(repo, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-qm", "owner's filter")
    return repo / "notes.txt"


# What a program run by clover-code's git plants in the git dir for the user's next git: a
# commondir that sends git to a work-tree folder whose config sets core.fsmonitor, and the
# other files git reads as config or as where to look (each lands only where it can).
PLANT = """{
mkdir -p evil/objects evil/refs
printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = "touch MARKER; true"\\n' > evil/config
G=$(git rev-parse --absolute-git-dir); T=$(git rev-parse --show-toplevel)
echo "$T/evil" > "$G/commondir"
echo "$T/evil/objects" > "$G/objects/info/alternates"
mkdir -p "$G/modules/x" "$G/worktrees/x"; cp evil/config "$G/modules/x/config"; cp evil/config "$G/config.worktree"
printf '#!/bin/sh\\ntouch MARKER\\n' > "$G/hooks/post-checkout"; chmod +x "$G/hooks/post-checkout"
git config core.fsmonitor 'touch MARKER; true'
} >/dev/null 2>&1
cat
"""
PLANTED = ("commondir", "objects/info/alternates", "modules", "worktrees", "config.worktree", "hooks/post-checkout")


@pytest.mark.parametrize("vector", ["a hook git_commit runs", "a filter git_status runs", "a filter a checkpoint runs"])
async def test_nothing_run_by_git_plants_git_metadata(git_repo: Path, tmp_path: Path, marker: Path, vector: str):
    owner_hooks(git_repo)
    tracked = owner_filter(git_repo)
    ctx = context(git_repo, tmp_path)
    script = ".githooks/pre-commit" if "hook" in vector else ".filters/clean.sh"
    await shell(ctx, f"cat > {script} <<'EOF'\n#!/bin/sh\n{PLANT.replace('MARKER', str(marker))}EOF")
    if "git_commit" in vector:
        (git_repo / "b.txt").write_text("b\n")
        result = await REGISTRY.call("git_commit", {"message": "b"}, ctx)
    else:
        await shell(ctx, f"touch -d 2001-01-01 {tracked.name}")  # stat-dirty: git re-reads it through the filter
        if "git_status" in vector:
            result = await REGISTRY.call("git_status", {}, ctx)
        else:
            ctx.checkpoints.begin_turn()
            with pytest.raises(ToolError) as raised:
                ctx.checkpoints.ensure()
            result = ToolResult(False, str(raised.value))
    assert not result.ok and "changed what decides which programs git runs" in result.output, result.output
    assert "commondir" in result.output
    git_dir = git_repo / ".git"
    assert [name for name in PLANTED if (git_dir / name).exists()] == []
    # The owner's filter runs the tree's script on the host: the owner's to trust (docs/security.md),
    # as a tree-kept hook is. Judged here: what clover-code's git runs left in the git dir.
    (git_repo / ".filters" / "clean.sh").write_text("cat\n")
    users_next_git(git_repo)
    assert not marker.exists()
    (git_dir / "commondir").write_text(f"{git_repo / 'evil'}\n")  # control: the payload is live
    host_git(git_repo, "status")
    assert marker.exists()


@pytest.fixture
def outside_tmp() -> Iterator[Path]:
    """A folder the sandbox sees as it is (its /tmp is private): a linked worktree's git dir lives
    in the main one's, which must be visible."""
    folder = Path(tempfile.mkdtemp(prefix="clover-sec-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def test_a_linked_worktree_keeps_its_git_metadata(outside_tmp: Path, tmp_path: Path, marker: Path):
    """In a linked worktree git writes its own admin folder (.git/worktrees/<name>) and the
    common dir: its `commondir` and `gitdir` stay as they are, and nothing new lands beside them."""
    git_repo = outside_tmp / "repo"
    git_repo.mkdir()
    host_git(git_repo, "init", "-q")
    owner_hooks(git_repo)
    host_git(git_repo, "add", "-A")
    host_git(git_repo, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-qm", "owner's hooks")
    linked = outside_tmp / "linked"
    host_git(git_repo, "worktree", "add", "-q", str(linked))
    admin = git_repo / ".git" / "worktrees" / "linked"
    before = {name: (admin / name).read_text() for name in ("commondir", "gitdir")}
    ctx = context(linked, tmp_path)
    plant = PLANT.replace("MARKER", str(marker)).replace(
        'echo "$T/evil" > "$G/commondir"',
        'echo "$T/evil" > "$G/commondir"; echo "$T/evil" > "$G/gitdir"; C=$(git rev-parse --git-common-dir); '
        'echo "$T/evil" > "$C/commondir"; mkdir -p "$C/worktrees/planted"')
    await shell(ctx, f"cat > .githooks/pre-commit <<'EOF'\n#!/bin/sh\n{plant}EOF")
    (linked / "b.txt").write_text("b\n")
    result = await REGISTRY.call("git_commit", {"message": "b"}, ctx)
    assert not result.ok and "changed what decides which programs git runs" in result.output, result.output
    assert {name: (admin / name).read_text() for name in ("commondir", "gitdir")} == before
    assert not (git_repo / ".git" / "commondir").exists() and not (admin / "config.worktree").exists()
    users_next_git(linked)
    users_next_git(git_repo)
    assert not marker.exists()


async def test_hooks_in_the_work_tree_run_contained(git_repo: Path, tmp_path: Path, marker: Path):
    """The owner keeps hooks in the tree (core.hooksPath, as husky does): they still run on
    git_commit, inside the sandbox, even after the shell rewrote them."""
    (git_repo / ".githooks").mkdir()
    hook = git_repo / ".githooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho ran > hook-ran.txt\n")
    hook.chmod(0o755)
    host_git(git_repo, "config", "core.hooksPath", ".githooks")
    ctx = context(git_repo, tmp_path)
    (git_repo / "a.txt").write_text("a\n")
    first = await REGISTRY.call("git_commit", {"message": "with the owner's hook"}, ctx)
    assert first.ok and (git_repo / "hook-ran.txt").exists()  # the supported way still works

    await shell(ctx, f"printf '#!/bin/sh\\ntouch {marker}\\necho again > hook-ran.txt\\n"
                     "git config core.fsmonitor evil 2>/dev/null\\ntrue\\n' > .githooks/pre-commit")
    (git_repo / "b.txt").write_text("b\n")
    second = await REGISTRY.call("git_commit", {"message": "hook rewritten by the shell"}, ctx)
    assert second.ok, second.output
    assert (git_repo / "hook-ran.txt").read_text() == "again\n"  # it ran...
    assert not marker.exists()  # ...contained
    config = subprocess.run(["git", "config", "--get", "core.fsmonitor"], cwd=git_repo, capture_output=True)
    assert config.stdout == b""  # and could not plant a program for the owner's next git


async def test_shell_cannot_write_the_git_dir_or_settings(git_repo: Path, tmp_path: Path, marker: Path):
    ctx = context(git_repo, tmp_path)
    result = await REGISTRY.call("run_shell", {"command": f"git config core.fsmonitor 'touch {marker}'"}, ctx)
    assert (not result.ok and "Read-only" in result.output) or "could not lock" in result.output
    (git_repo / ".clover").mkdir()
    result = await REGISTRY.call("run_shell", {"command": "echo 'engine = \"scripted:x\"' > .clover/config.toml"},
                                 ctx)
    assert not result.ok and not (git_repo / ".clover" / "config.toml").exists()


async def test_git_file_pointing_outside_is_refused(tmp_path: Path):
    home = Path(tempfile.mkdtemp(prefix="clover-sec-", dir=Path.home()))  # outside the private /tmp
    other = home / "other"
    other.mkdir()
    host_git(other, "init", "-q")
    ws = tmp_path / "ws"
    ws.mkdir()
    ctx = context(ws, tmp_path)  # no repository at the start
    await shell(ctx, f"echo 'gitdir: {other / '.git'}' > .git")
    refused = await REGISTRY.call("git_status", {}, ctx)
    shutil.rmtree(home)
    assert not refused.ok and "appeared during this session" in refused.output


async def test_hooks_get_no_secrets(git_repo: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("DEPLOY_TOKEN", "tok-4242-very-secret")
    hook = git_repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\nenv > seen-env.txt\n")
    hook.chmod(0o755)
    ctx = context(git_repo, tmp_path)
    (git_repo / "a.txt").write_text("a\n")
    assert (await REGISTRY.call("git_commit", {"message": "x"}, ctx)).ok
    seen = (git_repo / "seen-env.txt").read_text()
    assert "PATH=" in seen and "tok-4242-very-secret" not in seen


# Every way a command could make the user's next `git status` step into a repository of its
# own where the index records a nested one (a gitlink): rewrite its `.git`, replace it, point a
# `.git` file elsewhere, move its folder (or the one above) aside and make a new one there.
ATTACK = """unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_PREFIX GIT_COMMON_DIR
P='touch MARKER; true'
S=SUB
top=$(pwd)
{
git -C "$S" config core.fsmonitor "$P"
printf '[core]\\n\\tfsmonitor = "touch MARKER; true"\\n' >> "$S/.git/config"
mkdir -p evil && git init -q evil/repo && git -C evil/repo config core.fsmonitor "$P"
printf 'gitdir: %s\\n' "$top/evil/repo/.git" > "$S/.git"
rm -rf "$S/.git"; git init -q "$S"; git -C "$S" config core.fsmonitor "$P"
mv "$S" "$S.old"; mkdir -p "$S"; git init -q "$S"; git -C "$S" config core.fsmonitor "$P"
mv "$(dirname "$S")" moved-aside; mkdir -p "$S"; git init -q "$S"; git -C "$S" config core.fsmonitor "$P"
} >/dev/null 2>&1
true
"""


def owners_nested_repository(repo: Path, layout: str, outside: Path) -> str:
    """The owner's nested repository, recorded in the index as a gitlink, as `layout` leaves
    its folder: a repository of its own (`.git` folder), a submodule (`.git` file into the
    owner's git dir), an empty folder (a clone without its submodules), or none (deleted)."""
    path = "sub" if layout == "a submodule" else "libs/sub"
    if layout == "a submodule":
        source = outside / "source"
        host_git(outside, "init", "-q", str(source))
        host_git(source, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-q", "--allow-empty", "-m", "s")
        host_git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), path)
    else:
        subprocess.run(["bash", "-c", f"mkdir -p {repo / path} && cd {repo / path} && git init -q && "
                        "echo a > a.txt && git add a.txt && git -c user.name=o -c user.email=o@o commit -qm a"],
                       check=True, capture_output=True)
        host_git(repo, "add", path)
    host_git(repo, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-qm", "owner's nested repository")
    assert gitlinks(repo) == [path]
    if layout in ("an empty gitlink folder", "a missing gitlink folder"):
        shutil.rmtree(repo / path)
        if layout == "an empty gitlink folder":
            (repo / path).mkdir()
    return path


LAYOUTS = ["a nested repository", "a submodule", "an empty gitlink folder", "a missing gitlink folder"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("vector", ["a shell command", "a hook git_commit runs"])
async def test_nothing_rewrites_a_nested_repository_the_index_records(git_repo: Path, tmp_path: Path, marker: Path,
                                                                     outside_tmp: Path, layout: str, vector: str):
    path = owners_nested_repository(git_repo, layout, outside_tmp)
    owner_hooks(git_repo)
    host_git(git_repo, "add", ".githooks")
    host_git(git_repo, "-c", "user.name=o", "-c", "user.email=o@o", "commit", "-qm", "owner's hooks")
    users_next_git(git_repo)
    assert not marker.exists()
    ctx = context(git_repo, tmp_path)
    attack = ATTACK.replace("MARKER", str(marker)).replace("SUB", path)
    if vector == "a shell command":
        result = await REGISTRY.call("run_shell", {"command": attack}, ctx)
    else:
        await shell(ctx, f"cat > .githooks/pre-commit <<'EOF'\n#!/bin/sh\n{attack}EOF")
        (git_repo / "b.txt").write_text("b\n")
        result = await REGISTRY.call("git_commit", {"message": "b", "paths": ["b.txt"]}, ctx)
    if layout == "a missing gitlink folder":  # nothing to bind: what a run made there is taken away
        assert not result.ok and f"removed {path}/.git" in result.output, result.output
    assert gitlinks(git_repo) == [path]
    users_next_git(git_repo)
    assert not marker.exists()

    # Control: the same, done on the host, runs the payload under the user's next git.
    (git_repo / ".githooks" / "pre-commit").write_text("#!/bin/sh\ntrue\n")
    shutil.rmtree(git_repo / "moved-aside", ignore_errors=True)
    subprocess.run(["bash", "-c", attack], cwd=git_repo, capture_output=True, check=False)
    host_git(git_repo, "status")
    assert marker.exists()
