"""What the sandbox allows: the environment it passes on, what it hides, its resource limits.

Set only from the user's own config (never a project's .clover/config.toml); see
docs/security.md for why each default is what it is.
"""

from __future__ import annotations

from dataclasses import dataclass

# Environment variables whose names contain one of these (case-insensitive) never reach a
# sandboxed command, unless the user's config keeps them by name (`keep_env`).
SECRET_NAME_PARTS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL")
# ...or one of these as a whole `_`-separated word (AUTH: not GIT_AUTHOR_NAME).
SECRET_NAME_WORDS = ("AUTH", "PAT", "PASS", "PW", "COOKIE", "SESSION")

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
    if any(part in upper for part in SECRET_NAME_PARTS):
        return True
    return any(word in SECRET_NAME_WORDS for word in upper.split("_"))


@dataclass(frozen=True)
class SandboxPolicy:
    keep_env: tuple[str, ...] = ()  # secret-looking variables the user passes on anyway
    deny_read: tuple[str, ...] = DEFAULT_DENY_READ
    max_processes: int = DEFAULT_MAX_PROCESSES  # in one command's sandbox, at once
    memory_mb: int = DEFAULT_MEMORY_MB
