"""Settings, layered: defaults < ~/.config/clover-code/config.toml < .clover/config.toml
< environment < command-line flags.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

APPROVAL_MODES = ("read-only", "ask", "auto-edit", "full-auto")

# Environment variables, by setting name. OPENAI_* are honoured for remote engines.
ENV_VARS = {
    "endpoint": ("CLOVER_ENDPOINT", "OPENAI_BASE_URL"),
    "api_key": ("CLOVER_API_KEY", "OPENAI_API_KEY"),
    "model": ("CLOVER_MODEL",),
    "approval": ("CLOVER_APPROVAL",),
}


# A cloned repository is not trusted: its .clover/config.toml may not loosen safety or send
# the API key elsewhere. These come only from the user's config, the environment or flags.
USER_ONLY = frozenset({"sandbox", "approval", "allow", "endpoint", "api_key"})


class ConfigError(Exception):
    """Bad settings from a file, the environment or flags; the message says which."""


@dataclass
class Settings:
    engine: str | None = None  # "embedded" | "remote" | "scripted:FILE"; None: resolve
    model: str | None = None  # checkpoint folder (embedded) or model name (remote)
    endpoint: str | None = None  # OpenAI-compatible base URL
    api_key: str | None = field(default=None, repr=False)
    approval: str = "ask"
    max_turns: int = 50
    max_tokens: int = 4096
    temperature: float = 0.0
    threshold: float | None = None
    block_size: int | None = None
    sandbox: bool = True
    shell_timeout: float = 120.0
    connect_timeout: float = 10.0
    idle_timeout: float = 120.0
    allow: list[str] = field(default_factory=list)  # e.g. "shell:pytest*", "edit:src/**"
    notices: list[str] = field(default_factory=list)  # settings ignored, for the UI to show once

    def engine_name(self) -> str:
        """Which engine runs: flags/config/env win; with none, the embedded default."""
        if self.engine:
            return self.engine
        return "remote" if self.endpoint else "embedded"


def user_config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "clover-code" / "config.toml"


def _read_toml(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def _apply(settings: Settings, values: dict[str, Any], source: str) -> None:
    names = {f.name: f for f in dataclasses.fields(Settings)}
    for key, value in values.items():
        key = key.replace("-", "_")
        if key not in names:
            raise ConfigError(f"{source}: unknown setting {key!r}")
        if value is not None:
            setattr(settings, key, value)


def load_settings(cwd: Path, flags: dict[str, Any] | None = None) -> Settings:
    settings = Settings()
    _apply(settings, _read_toml(user_config_path()), str(user_config_path()))
    project_path = cwd / ".clover" / "config.toml"
    project = _read_toml(project_path)
    ignored = sorted(k for k in project if k.replace("-", "_") in USER_ONLY)
    if ignored:
        settings.notices.append(f"{project_path}: ignored {', '.join(ignored)} (only your own "
                                f"config, the environment or flags may set these)")
    _apply(settings, {k: v for k, v in project.items() if k not in ignored}, str(project_path))
    for name, variables in ENV_VARS.items():
        for var in variables:
            if os.environ.get(var):
                setattr(settings, name, os.environ[var])
                break
    _apply(settings, flags or {}, "command line")
    if settings.approval not in APPROVAL_MODES:
        raise ConfigError(f"approval mode {settings.approval!r} is not one of {', '.join(APPROVAL_MODES)}")
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
