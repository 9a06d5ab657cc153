"""What every task format shares: the Task interface, problems found in task folders, and
the workspace helpers (writable copies, a fresh git repository). discover.py finds tasks."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from clover_code.eval.checks import CheckResult, CheckRunner

Format = Literal["sandbox", "exercism", "harbor"]
# What a try's workspace never gets from a task's files, whatever the format.
ALWAYS_SKIPPED = ("__pycache__", ".pytest_cache", ".git")
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "clover-eval", "GIT_AUTHOR_EMAIL": "eval@clover-code.invalid",
                "GIT_COMMITTER_NAME": "clover-eval", "GIT_COMMITTER_EMAIL": "eval@clover-code.invalid"}


class TaskError(Exception):
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

    def prepare(self, workspace: Path) -> None:
        """Put what the model may see into the empty folder `workspace`."""
        raise NotImplementedError

    def check(self, workspace: Path, scratch: Path, runner: CheckRunner) -> CheckResult:
        """Whether the work in `workspace` solves the task; `scratch` is an empty folder of its own."""
        raise NotImplementedError


class NeedsDocker(TaskError):
    """A task whose environment only Docker can build."""


# ---------------------------------------------------------------- workspace helpers

def copy_files(source: Path, dest: Path, names: list[str] | None = None, skip: tuple[str, ...] = ()) -> None:
    """Copy `names` (relative paths; None: everything) from `source` into `dest`, writable
    whatever the source's modes (shared task folders are often read-only)."""
    ignore = shutil.ignore_patterns(*ALWAYS_SKIPPED, *skip)
    if names is None:
        shutil.copytree(source, dest, ignore=ignore, dirs_exist_ok=True, copy_function=shutil.copyfile)
    else:
        for name in names:
            src, dst = source / name, dest / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, ignore=ignore, dirs_exist_ok=True, copy_function=shutil.copyfile)
            else:
                shutil.copyfile(src, dst)
    _make_writable(dest)


def _make_writable(folder: Path) -> None:
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = Path(root) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR | (stat.S_IXUSR if path.is_dir() else 0))


def git_init(repo: Path) -> None:
    """Make `repo` a git repository whose one commit holds its files (the agent's git tools,
    undo checkpoints and a task's `git diff` against the start all need one)."""
    env = {**os.environ, **GIT_IDENTITY}
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                ["git", "commit", "-q", "--no-verify", "--allow-empty", "-m", "task as given"]):
        subprocess.run(cmd, cwd=repo, check=True, env=env, capture_output=True)


def workspace_files(workspace: Path) -> list[str]:
    """The files of a workspace that are the model's work (not .git, .clover or caches)."""
    found = []
    for root, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if d not in (".git", ".clover", *ALWAYS_SKIPPED)]
        found += [str((Path(root) / f).relative_to(workspace)) for f in files]
    return sorted(found)
