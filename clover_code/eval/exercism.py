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
import shlex
import sys
from pathlib import Path, PurePath

from clover_code.eval.checks import CheckResult, CheckRunner
from clover_code.eval.taskfiles import Destination, copy_work, inside, read_text
from clover_code.eval.tasks import ALWAYS_SKIPPED, Task, TaskError
from clover_code.jsonsafe import JSONObject
from clover_code.tools.workspace import reserved_path

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

    def put_files(self, workspace: Path) -> None:
        self._copy_in(workspace, [*self.solution, *self.editor])

    def check(self, workspace: Path, scratch: Path, runner: CheckRunner) -> CheckResult:
        folder = scratch / self.source.name
        folder.mkdir(parents=True)
        copy_work(workspace, folder, leave_out=self._not_work)
        self._copy_in(folder, [*self.tests, *self.editor])  # pristine: whatever the model wrote
        command = f"{shlex.quote(sys.executable)} -m pytest -q"
        return runner.run(command, folder, names={str(folder): self.source.name})

    def _copy_in(self, folder: Path, names: list[str]) -> None:
        dest = Destination(folder)
        for name in names:
            dest.file(PurePath(name), inside(self.source, name, f"{name} (named in .meta/config.json)"))

    def _not_work(self, path: PurePath) -> bool:
        """What of the workspace the check leaves out: git, clover-code's logs, caches, `.meta`
        (the model cannot plant a solution) and the files the exercise brings itself."""
        return (path.name in ALWAYS_SKIPPED or path.parts[0] in (".git", ".clover", ".meta")
                or path in {PurePath(name) for name in (*self.tests, *self.editor)})


def load_exercise(folder: Path) -> Exercise:
    config = read_text(folder, ".meta/config.json", ".meta/config.json")
    if config is None:
        raise TaskError(".meta/ has no readable config.json (it names the solution and test files)")
    try:
        files = json.loads(config).get("files")
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
        _vet_name(folder, name)
    parts = [read_text(folder, f".docs/{name}", f".docs/{name}") for name in DOCS]
    text = "\n\n".join(part.strip() for part in parts if part is not None)
    if not text:
        raise TaskError("no instructions: .docs/instructions.md is missing or empty")
    return Exercise(folder, solution, tests, editor, text)


def _vet_name(folder: Path, name: str) -> None:
    """A name of files.*: a plain file of the exercise, which a workspace may hold."""
    path = PurePath(name)
    if path.is_absolute() or ".." in path.parts or name.startswith(".meta"):
        raise TaskError(f".meta/config.json names {name!r}, outside the exercise's own files")
    if reserved_path(Path(name)) is not None:
        raise TaskError(f".meta/config.json names {name!r}: a task never supplies git metadata (a .git, in "
                        "any spelling) or clover-code's own files (.clover/)")
    if not inside(folder, name, f"{name} (named in .meta/config.json)").is_file():
        raise TaskError(f"{name} is listed in .meta/config.json but not in the folder")


def _names(files: JSONObject, key: str) -> list[str]:
    value = files.get(key) or []
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError(f".meta/config.json: files.{key} must be a list of file names")
    return value
