"""GitPython, with the sandboxed git (gitrun.py) as the only git it can start.

GitPython gives repositories, commits, trees and diffs as objects. Left to itself it would
start host git (the `git version` check at import, `Repo.init`, `clone_from`, the repositories
of submodules, which every Diff of a nested repository looks up) and run a repository's hooks
itself (`IndexFile.commit`); git on the host runs whatever the sandbox planted (gitrun.py
says why). So this module is the one place that imports GitPython, and it closes those doors
once, at import: the base command wrapper refuses to start anything, the hook runner refuses
to run, a repository has no submodules, and only `SandboxedGit`, whose every command is
`Git.run` (binds, read-only git dir, checks after the run), executes git. GitPython's own
reading of files (finding the git dir, its config, refs) runs no program.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from clover_code.errors import ToolError
from clover_code.sandbox.gitrun import Git, Repository

_NO_HOST_GIT = "/nonexistent/clover-code-runs-git-only-sandboxed"


@contextmanager
def _no_git_check() -> Iterator[None]:
    """GitPython's import-time check would run host git in our working directory: point it
    at no executable, quietly, for the import only (our commands never use that path)."""
    names = ("GIT_PYTHON_REFRESH", "GIT_PYTHON_GIT_EXECUTABLE")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.update(GIT_PYTHON_REFRESH="quiet", GIT_PYTHON_GIT_EXECUTABLE=_NO_HOST_GIT)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


with _no_git_check():
    import git
    import git.index.base
    import git.index.fun
    from git.db import GitCmdObjectDB
    from git.diff import Diff, Diffable, DiffIndex
    from git.exc import GitCommandError
    from git.util import IterableList

__all__ = ["Diff", "DiffIndex", "GitFailed", "HostGitClosed", "SandboxedGit", "SandboxedRepo", "diff_trees",
           "git"]  # git: the GitPython package, its doors to host git closed


class HostGitClosed(ToolError):
    """GitPython tried to start git, or a hook, outside the sandbox."""


class GitFailed(ToolError, GitCommandError):
    """A sandboxed git that failed: GitPython's error for its own code, ours for the user."""

    def __init__(self, args: list[str], code: int, err: str, out: str = ""):
        GitCommandError.__init__(self, args, code, err, out)
        self.message = f"git {args[1] if len(args) > 1 else ''} failed: {(err or out).strip()}"

    def __str__(self) -> str:
        return self.message


def _refuse_host_git(self: Any, command: Any, **_: Any) -> Any:
    raise HostGitClosed(f"GitPython may only run git through the sandbox; refused: {command!r}")


def _refuse_hook(name: str, *_: Any, **__: Any) -> None:
    raise HostGitClosed(f"GitPython may not run the {name} hook on the host; commits go through the sandboxed git")


git.Git.execute = _refuse_host_git  # type: ignore[assignment,method-assign]
git.Git.GIT_PYTHON_GIT_EXECUTABLE = "git"  # a name for the command lines; only SandboxedGit runs one
git.index.base.run_commit_hook = _refuse_hook  # type: ignore[attr-defined]
git.index.fun.run_commit_hook = _refuse_hook


class _Finished:
    """A git run already over, shaped as the process GitPython reads diffs from (`as_process`)."""

    def __init__(self, args: list[str], code: int, out: bytes, err: str):
        self.args, self.returncode = args, code
        self.stdout, self.stderr = io.BytesIO(out), io.BytesIO(err.encode())
        self._err = err

    def poll(self) -> int:
        return self.returncode

    def wait(self, stderr: bytes | str | None = b"") -> int:
        if self.returncode != 0:
            raise GitFailed(self.args, self.returncode, self._err)
        return self.returncode


class SandboxedGit(git.Git):
    """GitPython's command wrapper whose every git is `runner.run` in `where`'s repository:
    what may change is that repository's git dir and the work tree, nothing else. The runner
    decides git's environment (`env` is added to it); GitPython's own environment is not passed."""

    def __init__(self, runner: Git, where: Repository, *, env: dict[str, str] | None = None,
                 writable: tuple[Path, ...] | None = None, checkpoint_refs: bool = False,
                 options: tuple[str, ...] = ()):
        super().__init__(where.top)
        self._runner, self._where, self._extra_env, self._options = runner, where, env, options
        self._writable = where.writable() if writable is None else writable
        self._checkpoint_refs = checkpoint_refs

    def execute(self, command: Any, *, istream: Any = None, as_process: bool = False,  # type: ignore[override]
                with_extended_output: bool = False, with_exceptions: bool = True, stdout_as_string: bool = True,
                strip_newline_in_stdout: bool = True, **unsupported: Any) -> Any:
        if unsupported.get("output_stream") is not None:
            raise HostGitClosed("the sandboxed git does not stream into a file")
        shown = ["git", *(str(arg) for arg in command[1:])]  # command[0] is GitPython's label for git
        args = [*self._options, *shown[1:]]
        data = istream.read() if hasattr(istream, "read") else None
        done = self._runner.run(*args, writable=self._writable, visible=self._where.visible(),
                                env=self._extra_env, check=False, cwd=self._where.top,
                                input=data.decode() if isinstance(data, bytes) else data,
                                checkpoint_refs=self._checkpoint_refs)
        if as_process:
            return _Finished(shown, done.code, done.raw, done.err)
        if with_exceptions and done.code != 0:
            raise GitFailed(shown, done.code, done.err, done.out)
        out: str | bytes = done.raw.decode(errors="replace") if stdout_as_string else done.raw
        if strip_newline_in_stdout and out[-1:] in ("\n", b"\n"):
            out = out[:-1]
        return (done.code, out, done.err.rstrip("\n")) if with_extended_output else out

    def get_object_header(self, ref: str | bytes) -> tuple[str, str, int]:
        """One object's header, by one sandboxed `cat-file` (no long-lived git outside the runner)."""
        name = ref.decode() if isinstance(ref, bytes) else ref
        line = self.execute(["git", "cat-file", "--batch-check"], istream=io.StringIO(f"{name}\n"))
        return self._parse_object_header(line.encode())

    def get_object_data(self, ref: str | bytes) -> tuple[str, str, int, bytes]:
        name = ref.decode() if isinstance(ref, bytes) else ref
        raw = self.execute(["git", "cat-file", "--batch"], istream=io.StringIO(f"{name}\n"),
                           stdout_as_string=False, strip_newline_in_stdout=False)
        header, _, rest = raw.partition(b"\n")
        hexsha, kind, size = self._parse_object_header(header)
        return hexsha, kind, size, rest[:size]

    def stream_object_data(self, ref: str | bytes) -> tuple[str, str, int, Any]:
        hexsha, kind, size, data = self.get_object_data(ref)
        return hexsha, kind, size, io.BytesIO(data)


class _NoHostGit(git.Git):
    """What `Repo()` builds first: a wrapper that can start nothing (replaced at once)."""


class SandboxedRepo(git.Repo):
    """A repository whose git is the sandboxed one. Repo's own start-up only reads files
    (finding the git dir, its config); `init`, `clone_from` and submodules' repositories would
    start host git, so they are not offered."""

    GitCommandWrapperType = _NoHostGit

    def __init__(self, runner: Git, where: Repository, *, env: dict[str, str] | None = None,
                 writable: tuple[Path, ...] | None = None, checkpoint_refs: bool = False,
                 options: tuple[str, ...] = ()):
        super().__init__(where.git_dir if env and "GIT_DIR" in env else where.top)
        self.git = SandboxedGit(runner, where, env=env, writable=writable, checkpoint_refs=checkpoint_refs,
                                options=options)
        self.odb = GitCmdObjectDB(os.path.join(self.common_dir, "objects"), self.git)

    @classmethod
    def init(cls, *_: Any, **__: Any) -> SandboxedRepo:
        raise HostGitClosed("make repositories with the sandboxed git (`git init` through Git.run)")

    @classmethod
    def clone_from(cls, *_: Any, **__: Any) -> SandboxedRepo:
        raise HostGitClosed("clone_from would run host git")

    @property
    def submodules(self) -> IterableList[Any]:
        """None: clover-code never steps into a nested repository (its repository object would
        run host git, its settings programs); a diff shows one as the commit recorded."""
        return IterableList("name")


class _Named(Diffable):
    """A tree-ish by name (a commit's or a tree's id), to diff from without reading it first."""

    __slots__ = ("name", "repo")

    def __init__(self, repo: SandboxedRepo, name: str):
        self.repo, self.name = repo, name

    def __str__(self) -> str:
        return self.name


def diff_trees(repo: SandboxedRepo, old: str | None, new: str) -> DiffIndex[Diff]:
    """What differs from tree-ish `old` to `new` (all of `new` when `old` is None) as Diff
    objects: recursive, no renames (a rename is a deletion and an addition)."""
    if old is None:
        return _Named(repo, new).diff(git.NULL_TREE, no_renames=True)
    return _Named(repo, old).diff(new, no_renames=True)
