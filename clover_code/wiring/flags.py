"""Command-line flags become settings: one function for every mode.

argparse checks types; the ranges, the engine's name and the workspace folder are checked
here, so every mode refuses the same mistakes with the same words (ConfigError: exit 2).
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from clover_code.config import ENV_VARS, load_settings
from clover_code.engine.policies import PolicyError, parse_policy
from clover_code.jsonsafe import JSONObject
from clover_code.settings import ConfigError, Settings

Mode = Literal["tui", "headless", "generate", "doctor", "serve"]
ENGINES_HELP = "embedded, remote or scripted:FILE"
# Flag (argparse dest) -> the setting it sets; each mode's parser has some of them.
FLAG_SETTINGS = ("engine", "model", "endpoint", "approval", "max_turns", "max_tokens", "temperature",
                 "threshold", "policy", "block_size", "scaffold")
RANGES: tuple[tuple[str, Callable[[float], bool], str], ...] = (
    ("max_turns", lambda v: v >= 1, "at least 1"),
    ("max_tokens", lambda v: v >= 1, "at least 1"),
    ("block_size", lambda v: v >= 1, "at least 1"),
    ("threshold", lambda v: 0 < v <= 1, "in (0, 1]"),
    ("temperature", lambda v: v >= 0, "a finite number, 0 or more"),
)


def settings_for(mode: Mode, args: argparse.Namespace) -> tuple[Path, Settings]:
    """The workspace and the settings a mode runs with; ConfigError names what is wrong."""
    check_ranges(args)
    cwd = workspace(getattr(args, "cwd", None))
    settings = load_settings(cwd, flag_values(mode, args), demo_default=mode != "serve")
    # doctor reports a bad engine as a finding, not a usage error; serve always runs the embedded one
    if mode not in ("doctor", "serve"):
        check_engine(settings.engine_name())
    return cwd, settings


def flag_values(mode: Mode, args: argparse.Namespace) -> JSONObject:
    """What the flags set (None: not given, lower layers decide).

    Headless defaults to full-auto (no one is there to answer) unless a flag or the
    environment names a mode; the config files' approval is the TUI's."""
    values = {name: getattr(args, name, None) for name in FLAG_SETTINGS}
    if getattr(args, "no_sandbox", False):
        values["sandbox"] = False
    approval_env = any(os.environ.get(var) for var in ENV_VARS["approval"])
    if mode == "headless" and values["approval"] is None and not approval_env:
        values["approval"] = "full-auto"
    return values


def check_ranges(args: argparse.Namespace) -> None:
    """Ranges argparse cannot check; the engine would report them later, less clearly."""
    for name, ok, rule in RANGES:
        value = getattr(args, name, None)
        if value is not None and not (math.isfinite(value) and ok(value)):  # argparse's float() reads inf and nan
            raise ConfigError(f"--{name.replace('_', '-')} {value}: must be {rule}")
    policy = getattr(args, "policy", None)
    if policy is not None:
        try:
            parse_policy(policy)
        except PolicyError as e:
            raise ConfigError(f"--policy: {e}") from None


def check_engine(name: str) -> None:
    """An engine name that cannot work is a usage error, found before anything loads."""
    if name in ("embedded", "remote"):
        return
    kind, _, path = name.partition(":")
    if kind != "scripted":
        raise ConfigError(f"unknown engine {name!r}: choose {ENGINES_HELP}")
    if not path:
        raise ConfigError("the scripted engine needs a file of replies: --engine scripted:FILE")
    file = Path(path).expanduser()
    if not file.is_file() or not os.access(file, os.R_OK):
        why = "not a readable file" if file.exists() else "no such file"
        raise ConfigError(f"--engine {name}: {why}")


def workspace(cwd: str | None) -> Path:
    path = Path(cwd or ".").expanduser()
    if not path.is_dir():
        raise ConfigError(f"--cwd {cwd}: " + ("not a directory" if path.exists() else "no such directory"))
    return path.resolve()
