"""Settings, layered: defaults < ~/.config/clover-code/config.toml < .clover/config.toml
< environment < command-line flags. The one home of the environment variables' names.

A repository's `.clover/config.toml` is written by whoever wrote the repository (a pull
request, say), not by the user: it may set only the keys in PROJECT_KEYS.
"""

from __future__ import annotations

import math
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

from clover_code.agent.hooks import parse_hooks
from clover_code.engine.policies import NAMES_HELP, PolicyError, parse_policy
from clover_code.jsonsafe import JSON, JSONObject
from clover_code.sandbox.own_dirs import config_dir
from clover_code.settings import APPROVAL_MODES, INHERIT_ENV, NOTIFY_MODES, ConfigError, Settings, approval_mode
from clover_code.tools.mcp.spec import parse_servers

__all__ = ["ENV_VARS", "PROJECT_KEYS", "ConfigError", "Settings", "env_setting", "load_settings", "project_config_path",
           "user_config_path"]

# Environment variables, by setting name. OPENAI_* are honoured for remote engines.
ENV_VARS = {
    "endpoint": ("CLOVER_ENDPOINT", "OPENAI_BASE_URL"),
    "api_key": ("CLOVER_API_KEY", "OPENAI_API_KEY"),
    # The key `clover-code serve` requires of its clients: never the one above, which this user
    # sends to other servers (a user who exports it for their client would serve behind it unawares).
    "serve_api_key": ("CLOVER_SERVE_API_KEY",),
    "model": ("CLOVER_MODEL",),
    "approval": ("CLOVER_APPROVAL",),
}

# What a project's .clover/config.toml may set: budgets of one run, nothing else, and only to
# tighten them (a value at most the user's own or the default: `shell_timeout = inf` would run
# commands unbounded). Which engine, model, endpoint and key run, and what the engine decodes
# with (threshold, policy, block_size, timeouts), are the user's choice; so are approval, allow rules
# and every sandbox setting; so are MCP servers and hooks, programs that run as the user outside
# the sandbox. Anything else in a project file is ignored, with a notice.
PROJECT_KEYS = frozenset({"max_turns", "max_tokens", "temperature", "shell_timeout"})


# -- checking values ---------------------------------------------------------------------

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _is_int(value: JSON) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: JSON) -> bool:
    """A finite number: TOML and argparse both read `inf` and `nan`."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_policy(value: JSON) -> bool:
    try:
        return isinstance(value, str) and bool(parse_policy(value))
    except PolicyError:
        return False


def _text_list(value: JSON) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) and v.strip() and "\0" not in v for v in value)


# Per key: whether a value is acceptable, and what an acceptable one looks like.
_CHECKS: dict[str, tuple[Callable[[JSON], bool], str]] = {
    "engine": (lambda v: isinstance(v, str) and bool(v), "a name: embedded, remote or scripted:FILE"),
    "model": (lambda v: isinstance(v, str), "a string"),
    "endpoint": (lambda v: isinstance(v, str), "a URL string"),
    "api_key": (lambda v: isinstance(v, str), "a string"),
    "serve_api_key": (lambda v: isinstance(v, str), "a string"),
    "approval": (lambda v: approval_mode(v) is not None,
                 "an approval mode: " + ", ".join(APPROVAL_MODES) + " (read-only: the old name of plan)"),
    "max_turns": (lambda v: _is_int(v) and v >= 1, "a whole number, 1 or more"),
    "max_tokens": (lambda v: _is_int(v) and v >= 1, "a whole number, 1 or more"),
    "temperature": (lambda v: _is_number(v) and v >= 0, "a number, 0 or more"),
    "threshold": (lambda v: _is_number(v) and 0 < v <= 1, "a number above 0, at most 1"),
    "policy": (_is_policy, f"a decoding policy: {NAMES_HELP} (see the README)"),
    "block_size": (lambda v: _is_int(v) and v >= 1, "a whole number, 1 or more"),
    "checkpoint_mb": (lambda v: _is_number(v) and v >= 0, "a number of megabytes, 0 or more"),
    "prefix_cache_mb": (lambda v: _is_number(v) and v >= 0, "a number of megabytes, 0 or more"),
    "scaffold": (lambda v: isinstance(v, bool), "true or false"),
    "copy_drafting": (lambda v: isinstance(v, bool), "true or false"),
    "sandbox": (lambda v: isinstance(v, bool), "true or false"),
    "shell_timeout": (lambda v: _is_number(v) and v > 0, "a number of seconds above 0"),
    "connect_timeout": (lambda v: _is_number(v) and v > 0, "a number of seconds above 0"),
    "idle_timeout": (lambda v: _is_number(v) and v > 0, "a number of seconds above 0"),
    "allow": (lambda v: _text_list(v) and all(":" in r for r in v), 'a list of "KIND:PATTERN" strings'),
    "keep_env": (lambda v: _text_list(v) and all(_ENV_NAME.match(n) for n in v),
                 "a list of environment variable names"),
    "inherit_env": (lambda v: v in INHERIT_ENV, "one of: " + ", ".join(INHERIT_ENV)),
    "deny_read": (_text_list, 'a list of paths ("~/..." or absolute)'),
    "max_processes": (lambda v: _is_int(v) and v >= 1, "a whole number of processes, 1 or more"),
    "memory_mb": (lambda v: _is_int(v) and v >= 1, "a whole number of megabytes, 1 or more"),
    "price_input_per_mtok": (lambda v: _is_number(v) and v >= 0, "a price per million tokens, 0 or more"),
    "price_output_per_mtok": (lambda v: _is_number(v) and v >= 0, "a price per million tokens, 0 or more"),
    "notify": (lambda v: v in NOTIFY_MODES, "one of: " + ", ".join(NOTIFY_MODES)),
}

# Keys holding tables, checked by the parser that reads them (its message says what is wrong).
_TABLES: dict[str, Callable[[JSON], object]] = {"mcp_servers": parse_servers, "hooks": parse_hooks}


def _problem(key: str, value: JSON) -> str | None:
    """What is wrong with `value` for `key`, or None."""
    if key in _TABLES:
        try:
            _TABLES[key](value)
        except ValueError as exc:
            return str(exc)
        return None
    accepts, wanted = _CHECKS[key]
    if accepts(value):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"it must be finite, {wanted}"
    return f"it must be {wanted}"


def _shown(key: str, value: JSON) -> str:
    if key in _TABLES:  # the parser's message names the part; the rest may hold headers with tokens
        return "[...]"
    return "(hidden)" if key.endswith("api_key") else repr(value)  # a key of the wrong type is still a key


def _check(key: str, value: JSON, source: str) -> None:
    problem = _problem(key, value)
    if problem is not None:
        raise ConfigError(f"{source}: {key} = {_shown(key, value)} is not valid; {problem}")


# -- reading layers ------------------------------------------------------------------------


def user_config_path() -> Path:
    return config_dir() / "config.toml"


def project_config_path(cwd: Path) -> Path:
    return Path(cwd) / ".clover" / "config.toml"


def _read_toml(path: Path) -> JSONObject:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _normal_keys(values: JSONObject) -> JSONObject:
    """`max-turns` and `max_turns` are the same key."""
    return {key.replace("-", "_"): value for key, value in values.items()}


def _apply(settings: Settings, values: JSONObject, source: str) -> None:
    """Set each given (not None) value, after checking its name and type."""
    for key, value in values.items():
        if key not in _CHECKS and key not in _TABLES:
            raise ConfigError(f"{source}: unknown setting {key!r}")
        if value is not None:
            _check(key, value, source)
            setattr(settings, key, approval_mode(value) if key == "approval" else value)


def _project_values(path: Path, settings: Settings) -> JSONObject:
    """The project file's allowed keys with values that tighten `settings` (the user's own
    config over the defaults); the rest are named in a notice and dropped."""
    values = _normal_keys(_read_toml(path))
    ignored = sorted(k for k in values if k not in PROJECT_KEYS)
    if ignored:
        settings.notices.append(
            f"{path}: ignored {', '.join(map(_shown_key, ignored))}: a project's config may set only "
            f"{', '.join(sorted(PROJECT_KEYS))}; set the others in your own config "
            f"({user_config_path()}), the environment or flags")
    loose = {k: why for k in sorted(PROJECT_KEYS & values.keys()) if (why := _loosens(k, values[k], settings))}
    if loose:
        settings.notices.append(
            f"{path}: ignored {'; '.join(f'{k} = {values[k]!r} ({why})' for k, why in loose.items())}: "
            f"a project's config may only lower these limits; raise them in your own config "
            f"({user_config_path()}) or with flags")
    return {k: v for k, v in values.items() if k in PROJECT_KEYS and k not in loose}


def _loosens(key: str, value: JSON, settings: Settings) -> str | None:
    """Why a project's `value` for `key` is refused: not a valid finite number, or above what the
    user's config (or the default) allows; None when it tightens the limit or keeps it."""
    problem = _problem(key, value)
    if problem is not None:
        return problem.replace("it must be", "must be")
    current = getattr(settings, key)
    assert isinstance(value, (int, float)) and isinstance(current, (int, float))  # every PROJECT_KEYS check wants one
    return f"more than {current:g}" if value > current else None


def _shown_key(key: str) -> str:
    """A key as a notice shows it: a quoted TOML key may hold terminal escapes."""
    return key if re.fullmatch(r"[A-Za-z0-9_]+", key) else ascii(key)


def env_setting(name: str) -> str | None:
    """The value the environment gives setting `name` (its first variable that is set)."""
    return next((os.environ[var] for var in ENV_VARS.get(name, ()) if os.environ.get(var)), None)


def _env_values() -> JSONObject:
    return {name: value for name in ENV_VARS if (value := env_setting(name)) is not None}


def _apply_over_files(settings: Settings, values: JSONObject, source: str) -> None:
    """The environment and flags beat every file: an endpoint named here means that endpoint
    is used, whatever engine a file named (unless this same layer names the engine too)."""
    values = {k: v for k, v in values.items() if v is not None}
    if values.get("endpoint") and "engine" not in values:
        settings.engine = None
    _apply(settings, values, source)


def load_settings(cwd: Path, flags: JSONObject | None = None, *, demo_default: bool = True) -> Settings:
    """The settings from every layer; `demo_default=False` leaves an unnamed model unnamed
    (a served model is always chosen, never the toy default)."""
    settings = Settings()
    user_path = user_config_path()
    _apply(settings, _normal_keys(_read_toml(user_path)), str(user_path))
    project_path = project_config_path(cwd)
    _apply(settings, _project_values(project_path, settings), str(project_path))
    _apply_over_files(settings, _env_values(), "environment")
    _apply_over_files(settings, _normal_keys(flags or {}), "command line")
    if demo_default:
        use_demo_model(settings)
    return settings


def use_demo_model(settings: Settings) -> None:
    """With no model or endpoint named anywhere, the embedded engine runs the shipped demo
    checkpoint, and the UIs say so (once, as a notice)."""
    from clover_code.models import DEMO_NAME, DEMO_NOTICE, demo_model

    if settings.engine_name() != "embedded" or settings.model:
        return
    folder = demo_model()
    if folder is not None:
        settings.model = str(folder)
        settings.notices.append(DEMO_NOTICE.format(name=DEMO_NAME))
