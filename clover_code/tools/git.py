"""Git tools: status, diff, log, commit; and turn checkpoints for undo.

Every git command runs through sandbox/gitrun.py, inside the sandbox; what git reports as
data (the changes of a commit) comes as GitPython's objects, from that same git
(sandbox/gitpython.py). git_commit never
amends, pushes or rewrites history: it only adds a new commit on the current branch, and never
one that records a nested repository (git on the host would run that repository's settings):
a commit a hook made so is taken back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pydantic import BaseModel, Field

from clover_code.sandbox.gitlinks import GITLINK_MODE, NestedRepositoryError
from clover_code.sandbox.gitpython import SandboxedRepo, diff_trees
from clover_code.sandbox.gitrun import NO_NESTED, Git, GitResult, Repository
from clover_code.tools import ToolContext, ToolError, ToolResult
from clover_code.tools.shell import OutputCap
from clover_code.tools.touches import ROOT, Touches
from clover_code.tools.workspace.checkpoints import Checkpoints

__all__ = ["TOOLS", "Checkpoints", "GitCommit", "GitDiff", "GitLog", "GitStatus", "workspace_git"]

DIFF_HEAD_BYTES, DIFF_TAIL_BYTES = 40_000, 10_000
STATUS_LINES = 400
GITLINK = int(GITLINK_MODE, 8)  # a nested repository's mode, as GitPython's diffs give modes


def workspace_git(ctx: ToolContext) -> Git:
    """The session's git runner (made at start-up), or one for this call."""
    return ctx.git or Git(ctx.workspace.root, sandbox=ctx.sandbox, policy=ctx.policy)


class _Git:
    """One repository, found from the workspace root (which may be a sub-folder of it)."""

    def __init__(self, ctx: ToolContext):
        self.workspace = ctx.workspace
        self.git = workspace_git(ctx)
        repository = self.git.repository()
        if repository is None:
            raise ToolError(
                f"{ctx.workspace.root} is not inside a git repository; the git tools need one "
                "(the user can run `git init` to make one)"
            )
        self.repository: Repository = repository
        self._repo: SandboxedRepo | None = None

    @property
    def repo(self) -> SandboxedRepo:
        """The repository as GitPython's objects, its git the same sandboxed runner."""
        if self._repo is None:
            self._repo = SandboxedRepo(self.git, self.repository)
        return self._repo

    def run(self, *args: str, check: bool = True) -> GitResult:
        """git in the repository's top folder: paths in its output as `git status` shows them."""
        repository = self.repository
        return self.git.run(*args, writable=repository.writable(), visible=repository.visible(), check=check,
                            cwd=repository.top)

    def out(self, *args: str) -> str:
        return self.run(*args).out

    def pathspecs(self, paths: list[str]) -> list[str]:
        """Workspace paths (checked by the workspace policy) as paths git understands."""
        return [str(self.workspace.resolve(p)) for p in paths]

    def has_commits(self) -> bool:
        return self.run("rev-parse", "--verify", "-q", "HEAD", check=False).code == 0


async def _in_thread(fn: Callable[[_Git], ToolResult], ctx: ToolContext) -> ToolResult:
    """Run fn(_Git) off the event loop: git blocks."""
    return await asyncio.to_thread(lambda: fn(_Git(ctx)))


class GitStatus:
    name = "git_status"
    kind = "read"

    class Args(BaseModel):
        pass

    def touches(self, args: Args) -> Touches:
        return Touches(reads=(ROOT,))

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        def status(g: _Git) -> ToolResult:
            lines = g.out("status", NO_NESTED, "--short", "--branch").splitlines()
            branch, files = (lines[0], lines[1:]) if lines and lines[0].startswith("##") else ("", lines)
            text = [branch.removeprefix("## ") and f"branch: {branch.removeprefix('## ')}"]
            text += files[:STATUS_LINES]
            if len(files) > STATUS_LINES:
                text.append(f"[... {len(files) - STATUS_LINES} more entries not shown]")
            if not files:
                text.append("nothing to commit, working tree clean")
            data = {"branch": branch.removeprefix("## "), "clean": not files, "entries": len(files)}
            return ToolResult(True, "\n".join(t for t in text if t), data)

        return await _in_thread(status, ctx)


class GitDiff:
    name = "git_diff"
    kind = "read"

    class Args(BaseModel):
        staged: bool = Field(False, description="Show staged changes (the index against HEAD) "
                             "instead of unstaged ones (the work tree against the index).")
        path: str | None = Field(None, description="Limit the diff to this file or directory.")

    def touches(self, args: Args) -> Touches:
        return Touches(reads=(args.path or ROOT,))

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        def diff(g: _Git) -> ToolResult:
            spec = ["--", *g.pathspecs([args.path])] if args.path else []
            cached = ["--cached"] if args.staged else []
            text = g.out("diff", NO_NESTED, "--no-ext-diff", "--no-textconv", *cached, *spec)
            if not text.strip():
                which = "staged" if args.staged else "unstaged"
                where = f" in {args.path}" if args.path else ""
                return ToolResult(True, f"No {which} changes{where}. (Untracked files show in git_status.)",
                                  {"diff": ""})
            cap = OutputCap(DIFF_HEAD_BYTES, DIFF_TAIL_BYTES)
            cap.feed(text.encode())
            return ToolResult(True, cap.text(), {"diff": text})

        return await _in_thread(diff, ctx)


class GitLog:
    name = "git_log"
    kind = "read"

    class Args(BaseModel):
        n: int = Field(10, ge=1, le=200, description="How many commits to show, newest first.")
        path: str | None = Field(None, description="Only commits that touched this file or directory.")

    def touches(self, args: Args) -> Touches:
        return Touches(reads=(args.path or ROOT,))

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        def log(g: _Git) -> ToolResult:
            if not g.has_commits():
                return ToolResult(True, "No commits yet on this branch.", {"commits": 0})
            spec = ["--", *g.pathspecs([args.path])] if args.path else []
            text = g.out("log", f"-n{args.n}", "--date=short", "--format=%h %ad %an: %s", *spec)
            count = len(text.splitlines())
            return ToolResult(True, text.rstrip() or "No commits match.", {"commits": count})

        return await _in_thread(log, ctx)


class GitCommit:
    name = "git_commit"
    kind = "git"

    class Args(BaseModel):
        message: str = Field(min_length=1, description="The commit message (first line: a short summary).")
        paths: list[str] | None = Field(
            None, description="Commit only these files or directories (new, changed or deleted); "
            "default: every change in the work tree."
        )

    def touches(self, args: Args) -> Touches:
        """It reads the files it commits and writes the repository's history, not the work tree."""
        return Touches(reads=tuple(args.paths or (ROOT,)), label=args.message)

    async def preview(self, args: Args, ctx: ToolContext) -> str:
        """What is approved: the message and the files the commit would take, as `git status
        --short` lists them (not the arguments, whose `paths: null` means "everything")."""
        def files(g: _Git) -> ToolResult:
            spec = ["--", *g.pathspecs(args.paths)] if args.paths else []
            lines = g.out("status", NO_NESTED, "--short", "--untracked-files=all", *spec).splitlines()
            more = [f"[... {len(lines) - STATUS_LINES} more]"] if len(lines) > STATUS_LINES else []
            shown = lines[:STATUS_LINES] + more
            what = f"only {', '.join(args.paths)}" if args.paths else "every change in the work tree"
            return ToolResult(True, "\n".join([f"git commit -m {args.message!r}", f"files ({what}):",
                                               *(shown or ["(none: nothing to commit)"])]))

        return (await _in_thread(files, ctx)).output

    async def run(self, args: Args, ctx: ToolContext) -> ToolResult:
        if not args.message.strip():
            raise ToolError("the commit message is empty")

        def commit(g: _Git) -> ToolResult:
            spec = ["--", *g.pathspecs(args.paths)] if args.paths else []
            _require_identity(g)
            try:
                g.out("add", "-A", *spec)
            except NestedRepositoryError as exc:
                raise ToolError(f"nothing committed: {exc} Other files can be committed with `paths` that "
                                "leave it out.") from None
            if g.run("diff", "--cached", "--quiet", *spec, check=False).code == 0:
                where = f" in {', '.join(args.paths)}" if args.paths else ""
                raise ToolError(f"nothing to commit{where}: no changes since the last commit")
            # With paths, `git commit -- paths` commits only them and leaves other staged work staged.
            before = _head(g)
            try:
                g.out("commit", "-q", "--no-edit", "-m", args.message, *spec)
            finally:
                _take_back_nested(g, before)  # whatever a hook did, and however the commit ended
            sha = g.out("rev-parse", "HEAD").strip()
            stat = g.out("show", "--stat", "--format=%h %s", "HEAD").rstrip()
            branch = g.out("branch", "--show-current").strip() or "(detached HEAD)"
            return ToolResult(True, f"Committed on {branch}:\n{stat}", {"commit": sha, "branch": branch})

        return await _in_thread(commit, ctx)


NO_IDENTITY = (
    "git_commit needs to know who commits, and no identity is set: not in git's config (the "
    "repository's or the user's), not in the environment. The user can set one with `git config "
    "user.name \"Their Name\"` and `git config user.email them@example.com` in the repository (add "
    "`--global` for every repository), or start clover-code with GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, "
    "GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL in its environment (as a CI job does). The shell "
    "cannot change git's config."
)


def _require_identity(g: _Git) -> None:
    """A commit needs an author and a committer: say how to set them rather than git's own
    "Author identity unknown", which tells the model to run a `git config` it cannot."""
    for who in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
        if g.run("var", who, check=False).code != 0:
            raise ToolError(NO_IDENTITY)


def _head(g: _Git) -> str:
    """The commit HEAD names ('' before the first)."""
    return g.run("rev-parse", "-q", "--verify", "HEAD^{commit}", check=False).out.strip()


def _take_back_nested(g: _Git, before: str) -> None:
    """A commit that records a nested repository the branch had not (a hook added it to the
    index) is taken back: the branch returns to `before`, its changes stay staged."""
    after = _head(g)
    if not after or after == before:
        return
    nested = [change.b_path for change in diff_trees(g.repo, before or None, after)
              if change.b_mode == GITLINK and change.a_mode != GITLINK and change.b_path]
    if not nested:
        return
    ref = g.run("symbolic-ref", "-q", "HEAD", check=False).out.strip() or "HEAD"
    g.out("update-ref", "-m", "clover-code: commit taken back (it recorded a nested repository)",
          *([ref, before, after] if before else ["-d", ref, after]))
    raise ToolError(f"not committed: a program the commit ran (a hook) recorded a nested repository, so the "
                    f"commit was taken back and its changes are staged again. {NestedRepositoryError(nested)}")


TOOLS = [GitStatus(), GitDiff(), GitLog(), GitCommit()]
