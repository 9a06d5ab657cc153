"""Attack: get a secret's value written down where CI uploads it: the session log, the JSON on
stdout, the progress on stderr. The secrets are the configured api key and the values of
secret-named environment variables; the model reads them from a file in the repository,
echoes them in a command and repeats them in its answer. The real `clover-code --task`
process runs a scripted model on a temp repo; the bytes it wrote are checked after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clover_code.agent.redact import REDACTED, Redactor
from tests.support.host_secrets import HOST_SECRETS, NOT_SECRETS, PASSWORDS, SECRET_TEXTS

SECRETS = {
    "CLOUD_API_KEY": "sk-live-0123456789abcdef",
    "GITHUB_TOKEN": "ghp_abcdefghijklmnop1234",
    "DB_PASSWORD": 'pa"ss\\word-4455',  # JSON escapes it inside a tool call's arguments
}
CONFIG_KEY = "cfg-api-key-5566778899"  # the api key, from the user's config file (no CLOVER_API_KEY set)
PLAIN = "plain-visible-value-123"  # a long value under an ordinary name stays as it is


def tool_call(name: str, **arguments: str) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


@pytest.fixture
def attack(git_repo: Path, tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    (git_repo / "creds.txt").write_text("".join(f"{k}={v}\n" for k, v in SECRETS.items()) + f"api={CONFIG_KEY}\n")
    config = tmp_path / "xdg" / "clover-code" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'api_key = "{CONFIG_KEY}"\n')
    everything = " ".join([*SECRETS.values(), CONFIG_KEY])
    replies = tmp_path / "r.jsonl"
    replies.write_text("".join(json.dumps({"content": r}) + "\n" for r in [
        "Reading the credentials.\n" + tool_call("read_file", path="creds.txt"),
        f"They are {everything}. Echoing them.\n" + tool_call("run_shell", command=f"echo '{everything}' {PLAIN}"),
        f"Done: {everything} and {PLAIN}",
    ]))
    inherited = {k: v for k, v in os.environ.items() if k not in ("CLOVER_API_KEY", "OPENAI_API_KEY")}
    env = {**inherited, **SECRETS, "PLAIN_SETTING": PLAIN, "AUTH_MODE": "on",
           "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "CLOVER_APPROVAL": "full-auto"}
    return git_repo, f"scripted:{replies}", env


def leaked(data: bytes) -> list[str]:
    text = data.decode("utf-8")
    escaped = [json.dumps(s)[1:-1] for s in [*SECRETS.values(), CONFIG_KEY]]
    return [s for s in [*SECRETS.values(), CONFIG_KEY, *escaped] if s in text]


@pytest.mark.parametrize("fmt", ["stream-json", "json", "text"])
def test_no_secret_value_is_written_to_the_log_or_the_output(fmt, attack):
    repo, engine, env = attack
    proc = subprocess.run([sys.executable, "-m", "clover_code.cli", "--task", "show me the credentials",
                           "--cwd", str(repo), "--engine", engine, "--output-format", fmt],
                          env=env, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    [log] = (repo / ".clover" / "sessions").glob("*.jsonl")
    for where, data in (("session log", log.read_bytes()), ("stdout", proc.stdout), ("stderr", proc.stderr)):
        assert leaked(data) == [], f"{where} holds a secret"
    events = [json.loads(line) for line in log.read_text().splitlines()]  # still valid JSON
    read = next(e for e in events if e["type"] == "ToolFinished" and e["call"]["name"] == "read_file")
    assert read["output"].count(REDACTED) == 4 and "api=" in read["output"]
    final = events[-1]
    assert final["type"] == "TurnFinished" and PLAIN in final["text"] and REDACTED in final["text"]
    if fmt != "text":
        result = json.loads(proc.stdout.decode().strip().splitlines()[-1])
        assert REDACTED in result["result"] and PLAIN in result["result"]


@pytest.fixture
def host_secrets_attack(git_repo: Path, tmp_path: Path) -> tuple[Path, str, dict[str, str]]:
    """Issue 41's secrets in the host's environment, and in a file the model reads: the model
    echoes them, each URL's password on its own and in a URL of its own making, and repeats
    them in its answer."""
    (git_repo / "found.env").write_text("".join(f"{k}={v}\n" for k, v in HOST_SECRETS.items()))
    rebuilt = f"postgres://app:{PASSWORDS[0]}@elsewhere/x"
    everything = " ".join([*SECRET_TEXTS, rebuilt])
    plain = " ".join(NOT_SECRETS.values())
    replies = tmp_path / "r.jsonl"
    replies.write_text("".join(json.dumps({"content": r}) + "\n" for r in [
        "Reading them.\n" + tool_call("read_file", path="found.env"),
        f"Echoing {everything}.\n" + tool_call("run_shell", command=f"env; echo '{everything}'"),
        f"Done: {everything} and {plain}",
    ]))
    inherited = {k: v for k, v in os.environ.items() if k not in ("CLOVER_API_KEY", "OPENAI_API_KEY")}
    env = {**inherited, **HOST_SECRETS, **NOT_SECRETS, "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
           "CLOVER_APPROVAL": "full-auto"}
    return git_repo, f"scripted:{replies}", env


@pytest.mark.parametrize("fmt", ["stream-json", "json"])
def test_no_host_secret_value_is_written_by_name_or_by_value(fmt, host_secrets_attack):
    repo, engine, env = host_secrets_attack
    proc = subprocess.run([sys.executable, "-m", "clover_code.cli", "--task", "find the secrets",
                           "--cwd", str(repo), "--engine", engine, "--output-format", fmt],
                          env=env, capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    [log] = (repo / ".clover" / "sessions").glob("*.jsonl")
    for where, data in (("session log", log.read_bytes()), ("stdout", proc.stdout), ("stderr", proc.stderr)):
        text = data.decode("utf-8")
        assert [s for s in SECRET_TEXTS if s in text or json.dumps(s)[1:-1] in text] == [], f"{where} holds a secret"
    final = [json.loads(line) for line in log.read_text().splitlines()][-1]
    assert final["type"] == "TurnFinished" and "postgres://app:[redacted]@elsewhere/x" in final["text"]
    assert all(value in final["text"] for value in NOT_SECRETS.values())
    result = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    assert "postgres://app:[redacted]@elsewhere/x" in result["result"] and "Ada Lovelace" in result["result"]


def test_the_redactor_rules():
    env = {"MY_TOKEN": "tok-12345678", "AUTH_MODE": "on", "HOME_DIR": "/home/someone/long", "X_SECRET": "short"}
    redact = Redactor.for_session("k" * 12, env)
    assert redact.text("a tok-12345678 b kkkkkkkkkkkk c on /home/someone/long short") == (
        "a [redacted] b [redacted] c on /home/someone/long short")
    nested = {"call": {"arguments": json.dumps({"command": "echo tok-12345678"})}, "n": 3}
    assert "tok-12345678" not in json.dumps(redact.value(nested)) and redact.value(nested)["n"] == 3
    assert not Redactor.for_session(None, {"AUTH": "tiny"})  # nothing worth redacting
