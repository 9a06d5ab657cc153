"""Issue 41, items 1-4: an eval task folder is untrusted input.

A downloaded Harbor task, Exercism exercise or sandbox task tries to write a host file, plant git
metadata, or read a host file through a link; the judge is outside: a marker that must never
appear, a fake key that must never reach a workspace, a prompt, a check's output or the results
folder, and the user's own host `git status` in the prepared workspace.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path, PurePath

import pytest

from clover_code.eval.discover import discover
from clover_code.eval.taskfiles import Destination
from clover_code.eval.tasks import Task, TaskError
from clover_code.sandbox.bwrap import bwrap_problem
from tests.support.evals import results, run_eval, workspace_files
from tests.support.replies import tool_call, write_replies

pytestmark = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox: {bwrap_problem()}")
KEY = "-----BEGIN OPENSSH PRIVATE KEY----- fake-host-key-41"


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """The host's side: a fake ssh key (`.ssh/id_ed25519`) and the folder markers would land in."""
    (tmp_path / "host" / ".ssh").mkdir(parents=True)
    (tmp_path / "host" / ".ssh" / "id_ed25519").write_text(KEY + "\n")
    return tmp_path / "host"


def write(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def harbor(folder: Path, dockerfile: str, files: dict[str, str] | None = None) -> Path:
    return write(folder, {"instruction.md": "Say hello.\n", "task.toml": "[metadata]\ncategory = \"x\"\n",
                          "tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n",
                          "environment/Dockerfile": dockerfile, **(files or {})})


def exercise(folder: Path, editor: list[str] | None = None, files: dict[str, str] | None = None) -> Path:
    config = {"files": {"solution": ["greet.py"], "test": ["greet_test.py"], "editor": editor or []}}
    return write(folder, {".meta/config.json": json.dumps(config), ".docs/instructions.md": "Greet.\n",
                          "greet.py": "def hello():\n    pass\n",
                          "greet_test.py": "from greet import hello\n\n\ndef test_hi():\n    assert hello() == 'hi'\n",
                          **(files or {})})


def sandbox_task(folder: Path, files: dict[str, str] | None = None) -> Path:
    return write(folder, {"task.toml": 'prompt = "p"\ncheck = "true"\n', "repo/a.py": "x = 1\n", **(files or {})})


def refused(folders: list[Path]) -> dict[str, str]:
    """Each folder's problem, by name; none of them may load as a task."""
    tasks, problems = discover([str(f) for f in folders])
    assert tasks == [], [t.id for t in tasks]
    reasons = {Path(p.path).name: p.reason for p in problems}
    assert set(reasons) == {f.name for f in folders}
    assert not any(KEY in why for why in reasons.values())
    return reasons


def prepared(task: Task, tmp_path: Path) -> Path:
    workspace = tmp_path / f"ws-{task.id}"
    workspace.mkdir()
    task.prepare(workspace)
    return workspace


def test_no_copy_destination_leaves_the_workspace(tmp_path: Path, host: Path):
    marker = host / "marker"
    tasks = tmp_path / "tasks"
    payload = {"environment/payload": "planted\n"}
    escapes = {
        "dotdot-absolute": f"FROM x\nCOPY payload /app/../../../..{marker}\n",
        "dotdot-relative": f"FROM x\nWORKDIR /app\nCOPY payload {'../' * 12}{str(marker).lstrip('/')}\n",
        "dotdot-inner": f"FROM x\nCOPY payload /app/sub/../../..{marker}\n",
        "workdir-left": "FROM x\nWORKDIR /app\nCOPY payload /app/\nWORKDIR /app/sub\n",
    }
    reasons = refused([harbor(tasks / name, docker, payload) for name, docker in escapes.items()])
    assert all("outside the WORKDIR" in why for why in reasons.values()), reasons
    assert not marker.exists()

    sources = {  # a build context has no way out: neither has a task here
        "absolute-source": f"FROM x\nCOPY {host}/.ssh/id_ed25519 /app/key\n",
        "dotdot-source": "FROM x\nCOPY ../../host/.ssh/id_ed25519 /app/key\n",
        "inner-dotdot-source": "FROM x\nCOPY sub/../../instruction.md /app/\n",
    }
    reasons = refused([harbor(tasks / name, docker) for name, docker in sources.items()])
    assert all("outside environment/" in why for why in reasons.values()), reasons
    (problem,) = discover([str(harbor(tasks / "stage", "FROM x\nCOPY --from=build /out /app/\n"))])[1]
    assert problem.kind == "needs-docker"


def test_a_write_through_a_link_in_the_destination_is_refused(tmp_path: Path, host: Path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "out").symlink_to(host)
    source = write(tmp_path, {"payload": "planted\n"}) / "payload"
    dest = Destination(workspace)
    for attempt in (lambda: dest.file(PurePath("out/marker"), source), lambda: dest.folder(PurePath("out/dir")),
                    lambda: dest.link(PurePath("escape"), str(host)), lambda: dest.file(PurePath("out"), source)):
        with pytest.raises(TaskError):
            attempt()
    assert sorted(p.name for p in host.iterdir()) == [".ssh"]
    assert not (workspace / "escape").exists() and (host / ".ssh" / "id_ed25519").read_text() == KEY + "\n"


FSMONITOR = "[core]\n\tfsmonitor = touch {marker}; echo\n"


def test_a_task_never_supplies_git_metadata(tmp_path: Path, host: Path):
    marker = host / "fsmonitor-ran"
    config = {"environment/gitconfig": FSMONITOR.format(marker=marker)}
    tasks = tmp_path / "tasks"
    into_git = {  # every spelling the file tools refuse
        "plain": "/app/.git/config", "case": "/app/.GIT/config", "nested": "/app/sub/.git/config",
        "trailing-dot": "/app/.git./config", "zero-width": "/app/.git\u200c/config",
        "folded": "/app/x/../.git/config", "relative": ".git/config", "clover": "/app/.clover/config.toml",
    }
    folders = [harbor(tasks / name, f"FROM x\nCOPY gitconfig {dest}\n", config) for name, dest in into_git.items()]
    folders += [exercise(tasks / f"editor-{i}", editor=[name], files={name: FSMONITOR.format(marker=marker)})
                for i, name in enumerate([".git/config", ".Git/config", "lib/.git/config", ".clover/config.toml"])]
    reasons = refused(folders)
    assert all("never supplies git metadata" in why for why in reasons.values()), reasons

    # Whole folders that hold git metadata load, and the workspace never gets it.
    extra = {"lib/.GIT/config": "x", ".clover/config.toml": "max_turns = 1\n", "lib/m.py": ""}
    kept = harbor(tasks / "copies-a-folder", "FROM x\nCOPY src/ /app/\n",
                  {f"environment/src/{k}": v for k, v in extra.items()})
    repo_git = sandbox_task(tasks / "repo-with-git", {f"repo/{k}": v for k, v in extra.items()})
    for repo in (repo_git / "repo", kept / "environment" / "src"):
        subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
        with open(repo / ".git" / "config", "a") as config_file:
            config_file.write(FSMONITOR.format(marker=marker))
    loaded, problems = discover([str(repo_git), str(kept)])
    assert not problems and len(loaded) == 2
    for task in loaded:
        workspace = prepared(task, tmp_path)
        assert workspace_files(workspace) == ["a.py", "lib/m.py"] if task.format == "sandbox" else ["lib/m.py"]
        assert not (workspace / "lib" / ".GIT").exists() and not (workspace / ".clover").exists()
        assert "fsmonitor" not in (workspace / ".git" / "config").read_text()
        subprocess.run(["git", "status"], cwd=workspace, capture_output=True, check=True)  # the user's own git
        log = subprocess.run(["git", "log", "--format=%an <%ae>|%s"], cwd=workspace, capture_output=True,
                             text=True, check=True).stdout
        assert log == "clover-eval <eval@clover-code.invalid>|task as given\n"  # the eval's identity reached git
    assert not marker.exists()
    subprocess.run(["git", "status"], cwd=tasks / "repo-with-git" / "repo", capture_output=True)
    assert marker.exists()  # control: the planted config was live, for git on the host


def test_no_task_file_is_read_through_a_link_out(tmp_path: Path, host: Path):
    key = host / ".ssh" / "id_ed25519"
    tasks = tmp_path / "tasks"
    tasks.mkdir()

    def linked(folder: Path, rel: str, target: Path | str) -> Path:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        if (folder / rel).is_dir():
            shutil.rmtree(folder / rel)
        (folder / rel).unlink(missing_ok=True)
        (folder / rel).symlink_to(target)
        return folder

    folders = [
        linked(write(tasks / "repo-is-a-link", {"task.toml": 'prompt = "p"\ncheck = "true"\n'}), "repo", host / ".ssh"),
        linked(sandbox_task(tasks / "link-in-repo"), "repo/notes.txt", key),
        linked(sandbox_task(tasks / "relative-link-up"), "repo/up", "../../../host/.ssh/id_ed25519"),
        linked(harbor(tasks / "copy-of-a-link", "FROM x\nCOPY key /app/key\n"), "environment/key", key),
        linked(harbor(tasks / "link-in-a-copied-folder", "FROM x\nCOPY src/ /app/\n",
                      {"environment/src/a.py": ""}), "environment/src/key", key),
        linked(harbor(tasks / "link-in-tests", "FROM x\n"), "tests/expected.txt", key),
        linked(harbor(tasks / "tests-is-a-link", "FROM x\n"), "tests", write(host / "t", {"test.sh": KEY})),
        linked(harbor(tasks / "instruction-link", "FROM x\n"), "instruction.md", key),
        linked(harbor(tasks / "dockerfile-link", "FROM x\n"), "environment/Dockerfile", key),
        linked(exercise(tasks / "docs-link"), ".docs/instructions.md", key),
        linked(exercise(tasks / "stub-link"), "greet.py", key),
        linked(exercise(tasks / "config-link"), ".meta/config.json", host / "config.json"),
    ]
    write(host, {"config.json": json.dumps({"files": {"solution": [str(key)], "test": ["t.py"]}})})
    fifo = sandbox_task(tasks / "fifo-in-repo")
    os.mkfifo(fifo / "repo" / "pipe")  # copying it would hang the run
    reasons = refused([*folders, fifo])
    for name in ("link-in-repo", "relative-link-up", "link-in-a-copied-folder", "link-in-tests"):
        assert "links must stay inside" in reasons[name], reasons[name]
    assert "not a plain file, folder or link" in reasons["fifo-in-repo"]

    # A suite's task that is a link to a folder elsewhere is reported, not followed.
    suite = tasks / "suite"
    sandbox_task(suite / "real")
    (suite / "elsewhere").symlink_to(sandbox_task(host / "project"))
    loaded, problems = discover([str(suite)])
    assert [t.id for t in loaded] == ["real"] and [Path(p.path).name for p in problems] == ["elsewhere"]

    # A link that stays inside the folder copied is copied as a link.
    inner = linked(sandbox_task(tasks / "inner-link", {"repo/docs/v1.md": "one\n"}), "repo/docs/latest.md", "v1.md")
    (task,), problems = discover([str(inner)])
    workspace = prepared(task, tmp_path)
    assert not problems and os.readlink(workspace / "docs" / "latest.md") == "v1.md"


def test_a_link_the_model_makes_never_brings_a_host_file_into_the_check(tmp_path: Path, host: Path):
    """The model replaces its stub with a link to the host's key: the check copies the link,
    not the key, and runs where the key is not there. Neither the check's output (shown to the
    model at its next try) nor anything in the results folder holds the key."""
    key = host / ".ssh" / "id_ed25519"
    tasks = tmp_path / "tasks"
    greet = exercise(tasks / "greet")
    escape = harbor(tasks / "escape", f"FROM x\nCOPY payload /app/../../../..{host}/marker\n",
                    {"environment/payload": "planted\n"})
    engine = write_replies(tmp_path / "engine.jsonl", [
        tool_call("run_shell", command=f"ln -sf {key} greet.py && ln -sf {key} notes.py && ls -l"),
        "Done.",
    ])
    out = tmp_path / "out"
    proc = run_eval(str(greet), str(escape), "--engine", f"s=scripted:{engine}", "--tries", "2",
                    "--out", str(out), tmp=tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr  # needing Docker is no error
    assert "escape: environment/Dockerfile copies into" in proc.stderr
    first, second = results(out)
    assert (first["status"], second["status"]) == ("failed", "failed"), (first, second)
    check = (out / "logs" / "s" / "greet" / "try1.check.txt").read_text()
    assert "No module named 'greet'" in check  # the link reached the check, dangling there
    for path in out.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
    assert not (host / "marker").exists()
