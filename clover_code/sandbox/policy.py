"""What the sandbox allows: the environment it passes on, what it hides, its resource limits.

Set only from the user's own config (never a project's .clover/config.toml); see
docs/security.md for why each default is what it is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from clover_code.credentials import has_url_credentials, looks_like_token

# Environment variables whose names contain one of these (case-insensitive) never reach a
# sandboxed command, unless the user's config keeps them by name (`keep_env`).
SECRET_NAME_PARTS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL")
# ...or one of these as a whole word between `_`s (AUTH: not GIT_AUTHOR_NAME; PWD: MYSQL_PWD).
SECRET_NAME_WORDS = ("AUTH", "PAT", "PASS", "PW", "PWD", "COOKIE", "SESSION", "JWT", "DSN", "WEBHOOK")
# ...except these whole names: the shell's current and previous folder.
NOT_SECRET_NAMES = ("PWD", "OLDPWD")

# With inherit_env = "core", commands get only these (and LC_*), plus what `keep_env` names:
# Codex CLI's `inherit = "core"`, and the git identity a CI workflow sets.
CORE_ENV = ("PATH", "HOME", "USER", "LOGNAME", "USERNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TZ", "TMPDIR",
            "PWD", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")
InheritEnv = Literal["all", "core"]

# Paths (under the home directory unless absolute) hidden inside the sandbox: an empty
# folder or file stands in for each one that exists.
DEFAULT_DENY_READ = (
    "~/.ssh", "~/.gnupg", "~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.docker",
    "~/.netrc", "~/.pgpass", "~/.npmrc", "~/.pypirc", "~/.git-credentials", "~/.config/gh",
    "~/.config/clover-code", "~/.local/share/keyrings", "~/.password-store",
)

DEFAULT_MAX_PROCESSES = 256
DEFAULT_MEMORY_MB = 2048  # per process (its data segment: heap and private mappings)


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a secret."""
    upper = name.upper()
    if upper in NOT_SECRET_NAMES:
        return False
    if any(part in upper for part in SECRET_NAME_PARTS):
        return True
    return any(word in SECRET_NAME_WORDS for word in re.split(r"[^A-Z0-9]+", upper))


def is_secret(name: str, value: str) -> bool:
    """Whether an environment variable holds a secret: by its name, or, whatever its name, by a
    value with credentials in a URL (`postgres://app:pw@db`) or of a well-known token shape."""
    return is_secret_name(name) or has_url_credentials(value) or looks_like_token(value)


@dataclass(frozen=True)
class SandboxPolicy:
    keep_env: tuple[str, ...] = ()  # variables the user passes on anyway, secret-looking or outside "core"
    inherit_env: InheritEnv = "all"  # "core": only CORE_ENV (and LC_*) besides keep_env
    deny_read: tuple[str, ...] = DEFAULT_DENY_READ
    max_processes: int = DEFAULT_MAX_PROCESSES  # in one command's sandbox, at once
    memory_mb: int = DEFAULT_MEMORY_MB


def passed_env(policy: SandboxPolicy, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables of `environ` a command gets: those the user keeps, and the rest that are
    not secrets (under inherit_env = "core", only the core ones)."""
    return {k: v for k, v in environ.items()
            if k in policy.keep_env or (_inherited(policy, k) and not is_secret(k, v))}


def withheld_secrets(policy: SandboxPolicy, environ: Mapping[str, str]) -> list[str]:
    """Names of the secrets in `environ` that commands do not get."""
    return sorted(k for k, v in environ.items() if k not in policy.keep_env and is_secret(k, v))


def _inherited(policy: SandboxPolicy, name: str) -> bool:
    return policy.inherit_env == "all" or name in CORE_ENV or name.startswith("LC_")
