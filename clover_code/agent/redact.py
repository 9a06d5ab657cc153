"""Keeping known secrets out of what clover-code writes down (session logs, JSON output).

The secrets are values known at session start: the configured api_key and the values of
the environment variables the sandbox keeps from commands as secrets (by name or by value,
clover_code.sandbox.policy.is_secret), with, for a URL, its password on its own (a
command may print it apart from the URL). Each string about to be written has every
occurrence of one replaced with `[redacted]`, before it is serialized, so the JSON around
it stays valid. Credentials in any other URL (one read from a file, or built by the model)
are redacted as well: `postgres://app:[redacted]@db`. A secret the model spells out across
two streamed blocks is not caught: the sandbox keeping secrets from the model is the first
line; this is the second.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping

from clover_code.credentials import mask_url_credentials, url_credentials
from clover_code.jsonsafe import JSON
from clover_code.sandbox.policy import is_secret

REDACTED = "[redacted]"
MIN_ENV_SECRET = 8  # shorter values of secret variables ("true", "1") and passwords are not secret text
MIN_SECRET = 4  # an explicitly given secret (the api key) shorter than this would hit ordinary text


def environment_secrets(env: Mapping[str, str] | None = None) -> list[str]:
    """Values of secret environment variables, and the passwords in their URLs, long enough to be secrets."""
    env = os.environ if env is None else env
    found: list[str] = []
    for name, value in env.items():
        if is_secret(name, value):
            found += [value, *(part for c in url_credentials(value) for part in c.secrets())]
    return [secret for secret in found if len(secret) >= MIN_ENV_SECRET]


class Redactor:
    def __init__(self, secrets: Iterable[str | None] = ()):
        self._secrets: list[str] = []
        for secret in secrets:
            self.add(secret)

    @classmethod
    def for_session(cls, api_key: str | None = None, env: Mapping[str, str] | None = None) -> Redactor:
        return cls([api_key, *environment_secrets(env)])

    def add(self, secret: str | None) -> None:
        if not isinstance(secret, str) or len(secret.strip()) < MIN_SECRET:
            return
        # Also the form it takes inside JSON text (a tool call's `arguments` is a JSON string).
        for form in (secret, json.dumps(secret, ensure_ascii=False)[1:-1]):
            if form not in self._secrets:
                self._secrets.append(form)
        self._secrets.sort(key=len, reverse=True)  # a secret containing another goes first

    def __bool__(self) -> bool:
        """Whether any known secret is redacted (URL credentials are masked either way)."""
        return bool(self._secrets)

    def text(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return mask_url_credentials(text, REDACTED) if "@" in text else text

    def value(self, value: JSON) -> JSON:
        """`value` with every string in it redacted; dict keys (field names) and other values as they are."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value
