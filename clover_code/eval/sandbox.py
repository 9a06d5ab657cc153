"""sandbox/ tasks: `repo/` (the project as the model finds it) and `task.toml`:

    title = "..."            # optional
    family = "fix-bug"       # optional; groups tasks in the report (TPF per family)
    prompt = "..."           # what the model is asked
    check = "..."            # a shell command run in the repository afterwards; exit 0 = solved

The workspace is a fresh git repository of repo/ (one commit). The check runs on a copy of
it (history included), so whatever the check writes never reaches the model's next try.
"""

from __future__ import annotations

import tomllib
from pathlib import Path, PurePath

from clover_code.eval.checks import CheckResult, CheckRunner
from clover_code.eval.taskfiles import Destination, copy_tree, copy_work, inside, read_text, vet_tree
from clover_code.eval.tasks import Task, TaskError


class SandboxTask(Task):
    format = "sandbox"

    def __init__(self, source: Path, family: str, prompt: str, check: str, title: str | None):
        super().__init__(source, family)
        self._prompt, self.check_command, self.title = prompt, check, title

    def prompt(self) -> str:
        return self._prompt

    def retry_prompt(self, failed: CheckResult) -> str:
        return (f"{failed.output}\n\n####\n\nThe task is not done: its check failed (output above).\n"
                f"The check was: {self.check_command.strip()}\n"
                "Fix the work so that the check passes.")

    def put_files(self, workspace: Path) -> None:
        copy_tree(inside(self.source, "repo", "repo/"), Destination(workspace))

    def check(self, workspace: Path, scratch: Path, runner: CheckRunner) -> CheckResult:
        copy = scratch / self.source.name
        copy_work(workspace, copy, leave_out=lambda path: path == PurePath(".clover"))
        return runner.run(self.check_command, copy, names={str(copy): "."})


def load_sandbox_task(folder: Path) -> SandboxTask:
    try:
        data = tomllib.loads(read_text(folder, "task.toml", "task.toml") or "")
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"task.toml is not valid TOML: {exc}") from None
    missing = [key for key in ("prompt", "check") if not isinstance(data.get(key), str) or not data[key].strip()]
    if missing:
        raise TaskError(f"task.toml has no {' or '.join(missing)} (a sandbox task needs a prompt and a "
                        "check command)")
    repo = inside(folder, "repo", "repo/")
    if not repo.is_dir():
        raise TaskError("no repo/ folder (the project the model works on)")
    vet_tree(repo)
    family = given if isinstance(given := data.get("family"), str) else "sandbox"
    title = named if isinstance(named := data.get("title"), str) else None
    return SandboxTask(folder, family, data["prompt"].strip(), data["check"], title)
