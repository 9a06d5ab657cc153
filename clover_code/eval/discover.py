"""Task folders -> tasks, the format found per folder; what cannot run is reported, not raised.

A folder is
    an Exercism exercise    when it has .meta/ (config.json names solution and test files);
    a Harbor task           when it has instruction.md (and task.toml, tests/test.sh);
    a sandbox task          when it has task.toml (prompt, check) and repo/;
    a suite                 when it has none of these but sub-folders that do (sandbox/,
                            polyglot-python/): each of those is a task (a link to a folder
                            elsewhere is reported, not followed: the suite is untrusted input).
"""

from __future__ import annotations

from pathlib import Path

from clover_code.eval.exercism import load_exercise
from clover_code.eval.harbor import load_harbor_task
from clover_code.eval.sandbox import load_sandbox_task
from clover_code.eval.tasks import Format, NeedsDocker, Problem, ProblemKind, Task, TaskError

LOADERS = {"sandbox": load_sandbox_task, "exercism": load_exercise, "harbor": load_harbor_task}


def discover(paths: list[str]) -> tuple[list[Task], list[Problem]]:
    """The tasks under `paths` (each a task folder or a suite of them), and the folders that are not."""
    tasks: list[Task] = []
    problems: list[Problem] = []
    for raw in paths:
        folder = Path(raw).expanduser()
        if not folder.is_dir():
            problems.append(Problem(raw, "no such folder" if not folder.exists() else "not a folder"))
            continue
        found = [(folder, fmt)] if (fmt := detect(folder)) else \
            [(child, f) for child in _children(folder) if (f := detect(child))]
        linked = [path for path, _ in found if path != folder and path.is_symlink()]
        problems += [Problem(str(path), f"a link (to {path.resolve()}): a suite's tasks are folders of its own")
                     for path in linked]
        found = [(path, fmt) for path, fmt in found if path not in linked]
        if not found and not linked:
            problems.append(Problem(raw, "not a task folder: no task.toml, instruction.md or .meta/ here "
                                         "or in its sub-folders"))
        for path, fmt in found:
            try:
                tasks.append(LOADERS[fmt](path.resolve()))
            except TaskError as exc:
                kind: ProblemKind = "needs-docker" if isinstance(exc, NeedsDocker) else "malformed"
                problems.append(Problem(str(path), str(exc), kind))
    return _unique_ids(tasks), problems


def detect(folder: Path) -> Format | None:
    if (folder / ".meta").is_dir():
        return "exercism"
    if (folder / "instruction.md").is_file():
        return "harbor"
    if (folder / "task.toml").is_file():
        return "sandbox"
    return None


def _children(folder: Path) -> list[Path]:
    try:
        return sorted(c for c in folder.iterdir() if c.is_dir() and not c.name.startswith((".", "_")))
    except OSError:
        return []


def _unique_ids(tasks: list[Task]) -> list[Task]:
    """Folder names, or parent/name where two tasks share one; a task named twice runs once."""
    seen: set[Path] = set()
    kept = []
    for task in tasks:
        if task.source not in seen:
            seen.add(task.source)
            kept.append(task)
    counts: dict[str, int] = {}
    for task in kept:
        counts[task.id] = counts.get(task.id, 0) + 1
    for task in kept:
        if counts[task.id] > 1:
            task.id = f"{task.source.parent.name}/{task.source.name}"
    return kept
