"""What the user chose: the settings every mode runs with, as plain data.

Loaded in layers by clover_code.config (files, environment, flags); read by the wiring
that assembles engine, tools and agent, and by the UIs that show them. Importing this
costs nothing: no loader, no engine, no tool.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

from clover_code.errors import UserError
from clover_code.jsonsafe import JSONObject
from clover_code.sandbox.policy import DEFAULT_DENY_READ, DEFAULT_MAX_PROCESSES, DEFAULT_MEMORY_MB, InheritEnv

ApprovalMode = Literal["plan", "ask", "auto-edit", "full-auto"]
APPROVAL_MODES: tuple[ApprovalMode, ...] = get_args(ApprovalMode)
# Older names still accepted from config files, the environment, flags and /mode: `plan` was
# called `read-only` before it ended with a plan to approve.
MODE_ALIASES: dict[str, ApprovalMode] = {"read-only": "plan"}


def approval_mode(name: object) -> ApprovalMode | None:
    """The approval mode `name` means (an alias read as its mode); None when it names none."""
    if not isinstance(name, str):
        return None
    name = MODE_ALIASES.get(name, name)
    return next((mode for mode in APPROVAL_MODES if mode == name), None)
INHERIT_ENV: tuple[InheritEnv, ...] = get_args(InheritEnv)
# How a TUI nudges a user looking elsewhere (ui/tui/notifier.py): a desktop notification else the bell.
NotifyMode = Literal["auto", "bell", "off"]
NOTIFY_MODES: tuple[NotifyMode, ...] = get_args(NotifyMode)


class ConfigError(UserError):
    """Bad settings from a file, the environment or flags; the message says which."""


@dataclass
class Settings:
    engine: str | None = None  # "embedded" | "remote" | "scripted:FILE"; None: resolve
    model: str | None = None  # checkpoint folder (embedded) or model name (remote)
    endpoint: str | None = None  # OpenAI-compatible base URL
    api_key: str | None = field(default=None, repr=False)
    serve_api_key: str | None = field(default=None, repr=False)  # what `serve`'s clients must send
    approval: ApprovalMode = "ask"
    max_turns: int = 50
    max_tokens: int = 4096
    temperature: float = 0.0
    threshold: float | None = None
    # decoding policy NAME[:KNOB] (engine/policies.py); None: the checkpoint's own, else the threshold rule
    policy: str | None = None
    block_size: int | None = None
    # The embedded engine's memory for prefix states, in MiB (None: its defaults; 0: none kept).
    checkpoint_mb: float | None = None  # a hybrid's recurrent-state checkpoints (cut back to, not re-encoded)
    prefix_cache_mb: float | None = None  # other conversations' cached prefixes
    scaffold: bool = True  # tool calls decoded under the grammar of the request's tools (embedded engine)
    copy_drafting: bool = False  # n-gram drafts from the context, checked inside the passes (embedded engine)
    sandbox: bool = True
    shell_timeout: float = 120.0
    connect_timeout: float = 10.0
    idle_timeout: float = 120.0
    allow: list[str] = field(default_factory=list)  # e.g. "shell:pytest*", "edit:src/**"
    # The sandbox's policy (clover_code.tools.policy.SandboxPolicy); the user's config only.
    keep_env: list[str] = field(default_factory=list)  # variables passed on anyway (secret-looking, not core)
    inherit_env: InheritEnv = "all"  # "core": commands get only the core variables besides keep_env
    deny_read: list[str] = field(default_factory=lambda: list(DEFAULT_DENY_READ))
    max_processes: int = DEFAULT_MAX_PROCESSES
    memory_mb: int = DEFAULT_MEMORY_MB
    # What a million tokens cost, in (or out of) the model: /cost's estimate; None: no estimate.
    price_input_per_mtok: float | None = None
    price_output_per_mtok: float | None = None
    notify: NotifyMode = "auto"  # when an approval waits or a turn ends, unfocused; the user's config only
    # The user's own programs, from the user's config only (never a project's): MCP servers
    # ([mcp_servers.NAME], read by clover_code.tools.mcp.spec) and hooks ([[hooks.EVENT]],
    # clover_code.agent.hooks), as the TOML gives them; checked when loaded.
    mcp_servers: JSONObject = field(default_factory=dict)
    hooks: JSONObject = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)  # settings ignored, for the UI to show once

    def engine_name(self) -> str:
        """Which engine runs: flags/config/env win; with none, the embedded default."""
        if self.engine:
            return self.engine
        return "remote" if self.endpoint else "embedded"
