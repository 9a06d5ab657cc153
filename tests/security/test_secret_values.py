"""Issue 41, item 7: secrets known by their value, not only by their name.

The 15 variables of the issue (DATABASE_URL with a password, MYSQL_PWD, CI_JOB_JWT...) and
the same class under names that say nothing are set on the host; a sandboxed `env` must not
show them, while names that only look like secrets (PWD, OLDPWD, GIT_AUTHOR_NAME) keep
working. `clover-code doctor` prints URLs with their credentials masked. Judged from outside:
the command's output, the doctor's stdout. (The session log and headless output:
test_log_secrets.py.)
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from clover_code.config import load_settings
from clover_code.sandbox.bwrap import bwrap_problem, command_env
from clover_code.sandbox.policy import SandboxPolicy, is_secret
from clover_code.tools import Registry, ToolContext
from clover_code.tools.shell import TOOLS
from clover_code.tools.workspace import Workspace
from clover_code.wiring.assemble import tool_context
from tests.support.host_secrets import HOST_SECRETS, NOT_SECRETS, PASSWORDS, SECRET_TEXTS

needs_sandbox = pytest.mark.skipif(bwrap_problem() is not None, reason=f"no sandbox: {bwrap_problem()}")


async def env_seen(root: Path, policy: SandboxPolicy) -> str:
    ctx = ToolContext(Workspace(root), sandbox=True, shell_timeout=30, policy=policy)
    result = await Registry(TOOLS).call("run_shell", {"command": "env"}, ctx)
    assert result.ok, result.output
    return result.output


@pytest.fixture
def host_env(monkeypatch):
    for name, value in {**HOST_SECRETS, **NOT_SECRETS}.items():
        monkeypatch.setenv(name, value)


@needs_sandbox
async def test_no_secret_value_reaches_a_sandboxed_command(tmp_path: Path, host_env):
    seen = await env_seen(tmp_path, SandboxPolicy())
    assert [s for s in SECRET_TEXTS if s in seen] == []
    for name, value in NOT_SECRETS.items():
        assert f"{name}={value}\n" in seen
    kept = await env_seen(tmp_path, SandboxPolicy(keep_env=("DATABASE_URL",)))  # the user's own choice
    assert f"DATABASE_URL={HOST_SECRETS['DATABASE_URL']}\n" in kept and "REDIS_URL" not in kept


@needs_sandbox
async def test_the_core_environment_passes_only_core_and_kept_variables(tmp_path: Path, host_env, monkeypatch):
    monkeypatch.setenv("MY_TOOL_HOME", "/opt/my-tool")
    monkeypatch.setenv("LC_MESSAGES", "C")
    policy = SandboxPolicy(inherit_env="core", keep_env=("PLAIN_SETTING", "NPM_TOKEN"))
    names = {line.split("=", 1)[0] for line in (await env_seen(tmp_path, policy)).splitlines() if "=" in line}
    assert {"PATH", "HOME", "LC_MESSAGES", "GIT_AUTHOR_NAME", "GIT_COMMITTER_EMAIL", "PLAIN_SETTING",
            "NPM_TOKEN"} <= names
    assert not names & {"MY_TOOL_HOME", "PAGE_URL", "REGISTRY", "DATABASE_URL", "SENTRY_DSN"}


def test_what_is_secret_by_name_and_by_value():
    for name, value in HOST_SECRETS.items():
        assert is_secret(name, value), name
    for name, value in {**NOT_SECRETS, "PWD": "/work/repo", "PASSWORD_RULES": ""}.items():
        assert is_secret(name, value) == (name == "PASSWORD_RULES"), name
    assert is_secret("NOTE", "ssh://deploytoken@git.example.com/r")  # scheme://token@ is a credential
    assert not is_secret("ORIGIN", "git@github.com:o/r.git")  # scp-style: a user name, no secret
    assert is_secret("HTTP_PROXY", "proxyuser:pw@proxy:3128")  # curl's scheme-less proxy form


def test_pwd_reaches_commands(monkeypatch):
    monkeypatch.setenv("PWD", "/work/repo")
    assert command_env(SandboxPolicy(), sandbox=True)["PWD"] == "/work/repo"


def test_a_project_cannot_widen_the_core_environment(git_repo: Path, tmp_path: Path, clean_env):
    user = tmp_path / "xdg" / "clover-code" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('inherit_env = "core"\n')
    (git_repo / ".clover").mkdir()
    (git_repo / ".clover" / "config.toml").write_text('inherit_env = "all"\n')
    settings = load_settings(git_repo, {"endpoint": "http://127.0.0.1:9/v1"})
    assert tool_context(settings, git_repo).policy.inherit_env == "core"
    assert "inherit_env" in settings.notices[0]


def test_a_bad_inherit_env_is_a_clear_error(git_repo: Path, tmp_path: Path, cli):
    user = tmp_path / "xdg" / "clover-code" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('inherit_env = "none"\n')
    proc = cli("--task", "hi", "--cwd", str(git_repo), env={"XDG_CONFIG_HOME": str(tmp_path / "xdg")})
    assert proc.returncode == 2 and "inherit_env = 'none' is not valid; it must be one of: all, core" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens: every connection is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_doctor_masks_the_credentials_in_every_url_it_prints(git_repo: Path, tmp_path: Path, cli, closed_port: int):
    proxy = f"http://proxyuser:{PASSWORDS[3]}@127.0.0.1:{closed_port}"
    env = {**HOST_SECRETS, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy,
           "CLOVER_ENDPOINT": f"http://clover:endpoint-pw-0p9o8i7u@127.0.0.1:{closed_port}/v1"}
    proc = cli("doctor", "--cwd", str(git_repo), env=env)
    report = proc.stdout + proc.stderr
    assert proc.returncode == 1 and "not reachable" in report  # the probe ran, through the proxy or not
    assert "endpoint-pw-0p9o8i7u" not in report and PASSWORDS[3] not in report
    assert f"clover:****@127.0.0.1:{closed_port}" in report and "proxy: HTTPS_PROXY=http://proxyuser:****@" in report
    assert bwrap_problem() is not None or "secret variables withheld" in report
