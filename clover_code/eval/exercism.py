"""Exercism exercises, run the way Aider's polyglot benchmark runs them.

An exercise folder holds the stub(s) to complete, the tests, `.docs/` (the instructions) and
`.meta/config.json`, whose `files.solution` names the stubs and `files.test` the tests;
`.meta/` also holds the reference solution.

- The prompt: `.docs/introduction.md`, `instructions.md` and `instructions.append.md` (those
  present, in that order), then a short note naming the files to change.
- The workspace holds only the stubs (and `files.editor` helpers, when listed). The tests,
  `.docs/`, `.meta/` and anything else never enter it.
- The check: a scratch folder with the workspace's files and the pristine tests copied in,
  then `python -m pytest` there (the same interpreter as clover-code). The workspace itself
  never receives the tests, so a second try does not see them either.
- A second try gets the cleaned test output, as Aider does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from clover_code.eval.checks import CheckResult, CheckRunner
from clover_code.eval.tasks import Task, TaskError, copy_files, git_init, workspace_files
from clover_code.jsonsafe import JSONObject

DOCS = ("introduction.md", "instructions.md", "instructions.append.md")


class Exercise(Task):
    format = "exercism"

    def __init__(self, source: Path, solution: list[str], tests: list[str], editor: list[str], instructions: str):
        super().__init__(source, "exercism")
        self.solution, self.tests, self.editor = solution, tests, editor
        self.instructions = instructions

    @property
    def file_list(self) -> str:
        return " ".join(self.solution)

    def prompt(self) -> str:
        return (f"{self.instructions}\n\n####\n\nFollow the instructions above by changing these files: "
                f"{self.file_list}\n"
                "Keep the names of the functions and classes already there: other code, such as the "
                "tests, uses them.\nUse only the Python standard library; install no packages.")

    def retry_prompt(self, failed: CheckResult) -> str:
        return (f"{failed.output}\n\n####\n\nThose are the test results. The tests are correct and "
                f"stay as they are.\nFix the code in {self.file_list} so that they pass.")

    def prepare(self, workspace: Path) -> None:
        copy_files(self.source, workspace, [*self.solution, *self.editor])
        git_init(workspace)

    def check(self, workspace: Path, scratch: Path, runner: CheckRunner) -> CheckResult:
        folder = scratch / self.source.name
        folder.mkdir(parents=True)
        copy_files(workspace, folder, [f for f in workspace_files(workspace)
                                       if f not in self.tests and not f.startswith(".meta")])
        copy_files(self.source, folder, [*self.tests, *self.editor])  # pristine: whatever the model wrote
        command = f"{_quote(sys.executable)} -m pytest -q"
        return runner.run(command, folder, names={str(folder): self.source.name})


def _quote(path: str) -> str:
    import shlex

    return shlex.quote(path)


def load_exercise(folder: Path) -> Exercise:
    config = folder / ".meta" / "config.json"
    try:
        files = json.loads(config.read_text(encoding="utf-8")).get("files")
    except OSError:
        raise TaskError(".meta/ has no readable config.json (it names the solution and test files)") from None
    except (ValueError, AttributeError):
        raise TaskError(".meta/config.json is not a JSON object") from None
    if not isinstance(files, dict):
        raise TaskError(".meta/config.json has no \"files\" object")
    solution, tests = _names(files, "solution"), _names(files, "test")
    editor = _names(files, "editor")
    if not solution or not tests:
        raise TaskError(".meta/config.json must name files.solution and files.test")
    if not all(name.endswith(".py") for name in (*solution, *tests)):
        raise TaskError("not a Python exercise: only Python ones are checked here (pytest); run the other "
                        "languages through Harbor's polyglot dataset")
    for name in (*solution, *tests, *editor):
        if Path(name).is_absolute() or ".." in Path(name).parts or name.startswith(".meta"):
            raise TaskError(f".meta/config.json names {name!r}, outside the exercise's own files")
        if not (folder / name).is_file():
            raise TaskError(f"{name} is listed in .meta/config.json but not in the folder")
    parts = [(folder / ".docs" / name) for name in DOCS]
    text = "\n\n".join(p.read_text(encoding="utf-8").strip() for p in parts if p.is_file())
    if not text:
        raise TaskError("no instructions: .docs/instructions.md is missing or empty")
    return Exercise(folder, solution, tests, editor, text)


def _names(files: JSONObject, key: str) -> list[str]:
    value = files.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(f".meta/config.json: files.{key} must be a list of file names")
    return value
