"""Terminal-Bench / Harbor task folders, run locally where the task allows it.

    task.toml              [agent] timeout_sec, [verifier] timeout_sec, [metadata] category, ...
    instruction.md         the prompt
    environment/           Dockerfile (or docker-compose.yaml) and the files it copies in
    tests/test.sh          the verifier: writes a reward to /logs/verifier/reward.txt (or .json)
    solution/              the reference solution: never shown

Harbor builds the environment in Docker. Here a task runs without Docker when its environment
only copies files in (FROM, WORKDIR, COPY/ADD of local files, ENV, ...): the workspace, which
stands for the final WORKDIR, gets those files, read and written through taskfiles.py (a task
folder is untrusted input). A Dockerfile that RUNs anything, a compose file or a prebuilt image needs Docker:
such a task is reported as needing it (run it through Harbor with the adapter in
harbor_agent.py). The verifier runs on a copy of the workspace with its absolute paths
(/tests, /logs/verifier, the WORKDIR) rewritten to scratch folders; a reward of 1 passes.
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
import re
import shlex
import tomllib
from pathlib import Path, PurePath, PurePosixPath

from clover_code.eval.checks import CheckResult, CheckRunner
from clover_code.eval.taskfiles import Destination, copy_tree, copy_work, inside, read_plain, read_text, vet_tree
from clover_code.eval.tasks import NeedsDocker, Task, TaskError
from clover_code.jsonsafe import JSONObject
from clover_code.tools.workspace import reserved_path

LOCAL_INSTRUCTIONS = {"FROM", "WORKDIR", "COPY", "ADD", "ENV", "ARG", "LABEL", "USER", "CMD", "ENTRYPOINT",
                      "EXPOSE", "SHELL", "STOPSIGNAL", "HEALTHCHECK", "VOLUME", "ONBUILD"}
DEFAULT_WORKDIR = "/app"
BUILD_FILES = ("Dockerfile",)  # in environment/, never in the workspace


class HarborTask(Task):
    format = "harbor"

    def __init__(self, source: Path, family: str, instruction: str, workdir: str, copies: list[tuple[str, str]],
                 timeout: float | None, check_timeout: float | None):
        super().__init__(source, family)
        self.instruction, self.workdir, self.copies = instruction, workdir, copies
        self.timeout, self.check_timeout = timeout, check_timeout

    def prompt(self) -> str:
        return self.instruction

    def retry_prompt(self, failed: CheckResult) -> str:
        reward = f" (reward {failed.reward:g})" if failed.reward is not None else ""
        return (f"{failed.output}\n\n####\n\nThe task's tests did not pass{reward}; their output is above.\n"
                "Finish the task so that they pass.")

    def put_files(self, workspace: Path) -> None:
        env, dest = inside(self.source, "environment", "environment/"), Destination(workspace)
        for src, target in self.copies:
            source = inside(env, src, f"the Dockerfile's COPY source {src}")
            if source.is_dir():
                copy_tree(source, dest, PurePath(target), skip=BUILD_FILES)
            elif source.is_file():
                name = PurePath(target, source.name) if target == "" or target.endswith("/") else PurePath(target)
                dest.file(name, source)

    def check(self, workspace: Path, scratch: Path, runner: CheckRunner) -> CheckResult:
        work, tests, verifier = scratch / "work", scratch / "tests", scratch / "logs" / "verifier"
        copy_work(workspace, work, leave_out=lambda path: path in (PurePath(".clover"), PurePath(".git")))
        copy_tree(inside(self.source, "tests", "tests/"), Destination(tests))
        verifier.mkdir(parents=True)
        paths = {"/logs/verifier": str(verifier), "/tests": str(tests), self.workdir: str(work)}
        for root, _, files in os.walk(tests):
            for name in files:
                _rewrite(Path(root) / name, paths)
        if self.check_timeout:
            runner = dataclasses.replace(runner, timeout=self.check_timeout)
        result = runner.run(f"bash {shlex.quote(str(tests / 'test.sh'))}", work, writable=(scratch,),
                            names={str(work): self.workdir, str(tests): "/tests", str(verifier): "/logs/verifier"},
                            env={"TEST_DIR": str(tests)})
        reward = read_reward(scratch)
        if reward is None:
            note = "the verifier wrote no reward (/logs/verifier/reward.txt or reward.json)"
            return dataclasses.replace(result, passed=False, output=f"{result.output}\n({note})".strip())
        return dataclasses.replace(result, passed=reward >= 1.0, reward=reward)


def _rewrite(file: Path, paths: dict[str, str]) -> None:
    """Absolute container paths in a verifier file -> the scratch folders that stand for them."""
    if file.is_symlink() or not file.is_file():
        return
    try:
        text = file.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return
    for old, new in sorted(paths.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"(?<![\w./-]){re.escape(old)}(?=/|\b|$)", new.replace("\\", "\\\\"), text)
    file.write_text(text, encoding="utf-8")


def read_reward(scratch: Path) -> float | None:
    """The reward the verifier wrote under `scratch`; a link leading out counts as none (the
    verifier ran the model's code, which could point it at a host file)."""
    try:
        if (text := read_plain(scratch, "logs/verifier/reward.txt")) is not None:
            return float(text.strip())
        if (text := read_plain(scratch, "logs/verifier/reward.json")) is not None:
            data = json.loads(text)
            if isinstance(data, (int, float)):
                return float(data)
            if isinstance(data, dict):
                value = data.get("reward", next(iter(data.values()), None))
                return float(value) if isinstance(value, (int, float)) else None
    except (ValueError, OSError):
        return None
    return None


def load_harbor_task(folder: Path) -> HarborTask:
    instruction = (read_text(folder, "instruction.md", "instruction.md") or "").strip()
    if not instruction:
        raise TaskError("instruction.md is empty")
    toml = read_text(folder, "task.toml", "task.toml")
    if toml is None:
        raise TaskError("no task.toml (a Harbor task has task.toml, instruction.md and tests/test.sh)")
    try:
        config = tomllib.loads(toml)
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"task.toml is not valid TOML: {exc}") from None
    tests = inside(folder, "tests", "tests/")
    if not (tests / "test.sh").is_file():
        raise TaskError("no tests/test.sh (the verifier that writes the reward)")
    vet_tree(tests)
    environment = _section(config, "environment")
    if environment.get("docker_image"):
        raise NeedsDocker(f"runs in the image {environment['docker_image']}: needs Docker (run it with Harbor)")
    env = inside(folder, "environment", "environment/")
    if (env / "docker-compose.yaml").is_file() or (env / "docker-compose.yml").is_file():
        raise NeedsDocker("its environment is a docker-compose setup: needs Docker (run it with Harbor)")
    workdir, copies = _dockerfile(env)
    for src, target in copies:
        if (source := inside(env, src, f"the Dockerfile's COPY source {src}")).is_dir():
            vet_tree(source, PurePath(target), skip=BUILD_FILES)
    meta = _section(config, "metadata")
    family = str(meta.get("category") or "harbor")
    return HarborTask(folder, family, instruction, workdir, copies, _seconds(config, "agent"),
                      _seconds(config, "verifier"))


def _section(config: JSONObject, name: str) -> JSONObject:
    """A table of task.toml; {} when it is missing or not a table."""
    value = config.get(name)
    return value if isinstance(value, dict) else {}


def _seconds(config: JSONObject, section: str) -> float | None:
    value = _section(config, section).get("timeout_sec")
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def _dockerfile(env: Path) -> tuple[str, list[tuple[str, str]]]:
    """(WORKDIR, [(source under environment/, destination under the workspace)]); NeedsDocker
    when building it takes more than copying files into the final WORKDIR, which the workspace
    stands for; TaskError for a copy no build context allows or one into git metadata."""
    text = read_text(env, "Dockerfile", "environment/Dockerfile") if env.is_dir() else None
    if text is None:
        return DEFAULT_WORKDIR, []
    workdir, placed = DEFAULT_WORKDIR, []
    for line in _instructions(text):
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word not in LOCAL_INSTRUCTIONS:
            raise NeedsDocker(f"environment/Dockerfile runs `{line[:80]}` at build time: needs Docker "
                              "(run it with Harbor)")
        if word == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, rest.strip()))
        elif word in ("COPY", "ADD"):
            placed += _copy(line, rest, workdir)
    return workdir, [(src, _under(target, workdir, as_folder)) for src, target, as_folder in placed]


def _copy(line: str, rest: str, workdir: str) -> list[tuple[str, str, bool]]:
    """A COPY's (source, absolute destination with `..` folded, whether it names a folder)."""
    words = shlex.split(rest)
    args = [a for a in words if not a.startswith("--")]
    if len(args) < 2 or any("://" in a for a in args) or any(w.startswith("--from") for w in words):
        raise NeedsDocker(f"environment/Dockerfile: `{line[:80]}` fetches or copies from elsewhere: "
                          "needs Docker (run it with Harbor)")
    *sources, dest = args
    for src in sources:
        if PurePosixPath(src).is_absolute() or ".." in PurePosixPath(src).parts:
            raise TaskError(f"environment/Dockerfile: `{line[:80]}` copies {src}, outside environment/ "
                            "(a build copies only from its own folder)")
    target = posixpath.normpath(posixpath.join(workdir, dest))
    return [(src, target, dest.endswith("/") or len(sources) > 1) for src in sources]


def _under(target: str, workdir: str, as_folder: bool) -> str:
    """`target` relative to the WORKDIR ('' for itself, a '/' at the end for a folder)."""
    try:
        relative = PurePosixPath(target).relative_to(workdir)
    except ValueError:
        raise NeedsDocker(f"environment/Dockerfile copies into {target}, outside the WORKDIR "
                          f"{workdir}: needs Docker (run it with Harbor)") from None
    if reserved_path(Path(relative)) is not None:
        raise TaskError(f"environment/Dockerfile copies into {target}: a task never supplies git metadata "
                        "(a .git, in any spelling) or clover-code's own files (.clover/)")
    rel = "" if relative == PurePosixPath(".") else str(relative)
    return f"{rel}/" if rel and as_folder else rel


def _instructions(text: str) -> list[str]:
    """Dockerfile instructions, one per entry: comments dropped, continued lines joined."""
    out, current = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        out.append((current + line).strip())
        current = ""
    if current.strip():
        out.append(current.strip())
    return out
