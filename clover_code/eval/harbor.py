"""Terminal-Bench / Harbor task folders, run locally where the task allows it.

    task.toml              [agent] timeout_sec, [verifier] timeout_sec, [metadata] category, ...
    instruction.md         the prompt
    environment/           Dockerfile (or docker-compose.yaml) and the files it copies in
    tests/test.sh          the verifier: writes a reward to /logs/verifier/reward.txt (or .json)
    solution/              the reference solution: never shown

Harbor builds the environment in Docker. Here a task runs without Docker when its environment
only copies files in (FROM, WORKDIR, COPY/ADD of local files, ENV, ...): the workspace gets
those files. A Dockerfile that RUNs anything, a compose file or a prebuilt image needs Docker:
such a task is reported as needing it (run it through Harbor with the adapter in
harbor_agent.py). The verifier runs on a copy of the workspace with its absolute paths
(/tests, /logs/verifier, the WORKDIR) rewritten to scratch folders; a reward of 1 passes.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import shutil
import tomllib
from pathlib import Path, PurePosixPath

from clover_code.eval.checks import CheckResult, CheckRunner
from clover_code.eval.tasks import NeedsDocker, Task, TaskError, copy_files, git_init
from clover_code.jsonsafe import JSONObject

LOCAL_INSTRUCTIONS = {"FROM", "WORKDIR", "COPY", "ADD", "ENV", "ARG", "LABEL", "USER", "CMD", "ENTRYPOINT",
                      "EXPOSE", "SHELL", "STOPSIGNAL", "HEALTHCHECK", "VOLUME", "ONBUILD"}
DEFAULT_WORKDIR = "/app"


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

    def prepare(self, workspace: Path) -> None:
        env = self.source / "environment"
        for src, dest in self.copies:
            source = env / src
            if source.is_dir():
                copy_files(source, workspace / dest, skip=("Dockerfile",))
            elif source.is_file():
                target = workspace / dest / source.name if dest == "" or dest.endswith("/") else workspace / dest
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
        git_init(workspace)

    def check(self, workspace: Path, scratch: Path, runner: CheckRunner) -> CheckResult:
        work, tests, verifier = scratch / "work", scratch / "tests", scratch / "logs" / "verifier"
        shutil.copytree(workspace, work, symlinks=True, ignore=shutil.ignore_patterns(".clover", ".git"))
        copy_files(self.source / "tests", tests)
        verifier.mkdir(parents=True)
        paths = {"/logs/verifier": str(verifier), "/tests": str(tests), self.workdir: str(work)}
        for file in tests.rglob("*"):
            _rewrite(file, paths)
        if self.check_timeout:
            runner = dataclasses.replace(runner, timeout=self.check_timeout)
        result = runner.run(f"bash {shlex.quote(str(tests / 'test.sh'))}", work, writable=(scratch,),
                            names={str(work): self.workdir, str(tests): "/tests", str(verifier): "/logs/verifier"},
                            env={"TEST_DIR": str(tests)})
        reward = read_reward(verifier)
        if reward is None:
            note = "the verifier wrote no reward (/logs/verifier/reward.txt or reward.json)"
            return dataclasses.replace(result, passed=False, output=f"{result.output}\n({note})".strip())
        return dataclasses.replace(result, passed=reward >= 1.0, reward=reward)


def _rewrite(file: Path, paths: dict[str, str]) -> None:
    """Absolute container paths in a verifier file -> the scratch folders that stand for them."""
    if not file.is_file():
        return
    try:
        text = file.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return
    for old, new in sorted(paths.items(), key=lambda kv: -len(kv[0])):
        text = re.sub(rf"(?<![\w./-]){re.escape(old)}(?=/|\b|$)", new.replace("\\", "\\\\"), text)
    file.write_text(text, encoding="utf-8")


def read_reward(verifier: Path) -> float | None:
    text_file, json_file = verifier / "reward.txt", verifier / "reward.json"
    try:
        if text_file.is_file():
            return float(text_file.read_text(encoding="utf-8").strip())
        if json_file.is_file():
            data = json.loads(json_file.read_text(encoding="utf-8"))
            if isinstance(data, (int, float)):
                return float(data)
            if isinstance(data, dict):
                value = data.get("reward", next(iter(data.values()), None))
                return float(value) if isinstance(value, (int, float)) else None
    except (ValueError, OSError):
        return None
    return None


def load_harbor_task(folder: Path) -> HarborTask:
    instruction = (folder / "instruction.md").read_text(encoding="utf-8").strip()
    if not instruction:
        raise TaskError("instruction.md is empty")
    try:
        config = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TaskError("no task.toml (a Harbor task has task.toml, instruction.md and tests/test.sh)") from None
    except tomllib.TOMLDecodeError as exc:
        raise TaskError(f"task.toml is not valid TOML: {exc}") from None
    if not (folder / "tests" / "test.sh").is_file():
        raise TaskError("no tests/test.sh (the verifier that writes the reward)")
    environment = _section(config, "environment")
    if environment.get("docker_image"):
        raise NeedsDocker(f"runs in the image {environment['docker_image']}: needs Docker (run it with Harbor)")
    env = folder / "environment"
    if (env / "docker-compose.yaml").is_file() or (env / "docker-compose.yml").is_file():
        raise NeedsDocker("its environment is a docker-compose setup: needs Docker (run it with Harbor)")
    workdir, copies = _dockerfile(env / "Dockerfile")
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


def _dockerfile(path: Path) -> tuple[str, list[tuple[str, str]]]:
    """(WORKDIR, [(source under environment/, destination under the workspace)]); NeedsDocker
    when building it takes more than copying files."""
    if not path.is_file():
        return DEFAULT_WORKDIR, []
    workdir, copies = DEFAULT_WORKDIR, []
    for line in _instructions(path.read_text(encoding="utf-8")):
        word, _, rest = line.partition(" ")
        word = word.upper()
        if word not in LOCAL_INSTRUCTIONS:
            raise NeedsDocker(f"environment/Dockerfile runs `{line[:80]}` at build time: needs Docker "
                              "(run it with Harbor)")
        if word == "WORKDIR":
            workdir = str(PurePosixPath(workdir) / rest.strip())
        elif word in ("COPY", "ADD"):
            args = [a for a in shlex.split(rest) if not a.startswith("--")]
            if len(args) < 2 or any("://" in a for a in args):
                raise NeedsDocker(f"environment/Dockerfile: `{line[:80]}` fetches or copies from elsewhere: "
                                  "needs Docker (run it with Harbor)")
            *sources, dest = args
            target = PurePosixPath(workdir) / dest
            try:
                inside = target.relative_to(workdir)
            except ValueError:
                raise NeedsDocker(f"environment/Dockerfile copies into {target}, outside the WORKDIR "
                                  f"{workdir}: needs Docker (run it with Harbor)") from None
            for src in sources:
                rel = str(inside) + ("/" if dest.endswith("/") or len(sources) > 1 else "")
                copies.append((src, "" if rel in (".", "./") else rel))
    return workdir, copies


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
