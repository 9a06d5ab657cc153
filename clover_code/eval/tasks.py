"""What every task format shares: the Task interface, problems found in task folders, and the
fresh git repository a workspace starts as. discover.py finds tasks; taskfiles.py reads and
copies a task's files, as the untrusted input they are."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clover_code.errors import ToolError, UserError
from clover_code.eval.checks import CheckResult, CheckRunner
from clover_code.sandbox.gitpython import SandboxedGit
from clover_code.sandbox.gitrun import Git, Repository

Format = Literal["sandbox", "exercism", "harbor"]
# What a try's workspace never gets from a task's files, whatever the format (besides what no
# write may create: taskfiles.py leaves out a `.git` in every spelling and a top `.clover/`).
ALWAYS_SKIPPED = ("__pycache__", ".pytest_cache", ".git")
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "clover-eval", "GIT_AUTHOR_EMAIL": "eval@clover-code.invalid",
                "GIT_COMMITTER_NAME": "clover-eval", "GIT_COMMITTER_EMAIL": "eval@clover-code.invalid"}


class TaskError(UserError):
    """A task folder that cannot be run as it is; the message says what is wrong."""


ProblemKind = Literal["malformed", "needs-docker"]


@dataclass(frozen=True)
class Problem:
    """A folder named on the command line that gives no runnable task."""

    path: str
    reason: str
    kind: ProblemKind = "malformed"


class Task:
    """One task. Subclasses say what the model sees, what it is asked and how it is checked."""

    format: Format
    timeout: float | None = None  # the task's own time limit for the agent, when it states one

    def __init__(self, source: Path, family: str):
        self.source = source
        self.id = source.name
        self.family = family

    def prompt(self) -> str:
        raise NotImplementedError

    def retry_prompt(self, failed: CheckResult) -> str:
        raise NotImplementedError

    def prepare(self, workspace: Path, *, sandbox: bool = True) -> None:
        """Put what the model may see into the empty folder `workspace`: the task's files, in a
        fresh repository of one commit made by the sandboxed git (`sandbox` off: git runs bare)."""
        self.put_files(workspace)
        git_init(workspace, sandbox=sandbox)

    def put_files(self, workspace: Path) -> None:
        """The task's files into the empty folder `workspace` (through taskfiles.py)."""
        raise NotImplementedError

    def check(self, workspace: Path, scratch: Path, runner: CheckRunner) -> CheckResult:
        """Whether the work in `workspace` solves the task; `scratch` is an empty folder of its own."""
        raise NotImplementedError


class NeedsDocker(TaskError):
    """A task whose environment only Docker can build."""


# ---------------------------------------------------------------- workspace helpers

def git_init(repo: Path, *, sandbox: bool = True) -> None:
    """Make `repo` a git repository whose one commit holds its files (the agent's git tools,
    undo checkpoints and a task's `git diff` against the start all need one). The sandboxed
    runner makes it (GitPython's commands, the runner its git): the files are the task's, and
    git runs what a work tree's attributes name. The identity goes as `-c` options: the runner
    passes no GIT_* variable through."""
    repo = repo.resolve()
    git = SandboxedGit(Git(repo, sandbox=sandbox), Repository(repo, repo / ".git", repo / ".git"), writable=(repo,))
    try:
        git.init("-q", "-b", "main")
        git.add("-A")
        git(c=[f"user.name={GIT_IDENTITY['GIT_AUTHOR_NAME']}", f"user.email={GIT_IDENTITY['GIT_AUTHOR_EMAIL']}"]
            ).commit("-q", "--no-verify", "--allow-empty", "-m", "task as given")
    except ToolError as exc:
        raise TaskError(f"cannot make the workspace's repository: {exc}") from None
