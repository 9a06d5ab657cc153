"""Credentials recognised by their form, whatever variable or setting holds them.

A variable's name is not enough to know a secret: `DATABASE_URL=postgres://app:hunter22@db/x`
carries a password under an ordinary name. Two forms are recognised here:

- user info in a URL: `scheme://user:password@host`, `scheme://token@host`, and a proxy's
  scheme-less `user:password@host:port`;
- well-known token shapes (JWTs, private key blocks, the prefixes GitHub, GitLab, Slack, AWS,
  npm, PyPI and OpenAI-style keys carry), a net under the name and URL rules.

`mask_url_credentials` is the one way to show a URL (doctor, engine messages, logs): the
user name stays, a password or token becomes `****` (`[redacted]` in logs). Shared by the sandbox's environment policy,
the log redactor, the engine and doctor, like `clover_code.jsonsafe`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

MASK = "****"
# A user name alone is a token (Sentry's DSN key, `https://ghp_...@github.com`) rather than a
# name ("git", "postgres") when it is at least this long: only then is it secret text on its own.
MIN_TOKEN = 16

# User info runs from `scheme://` (or, for `user:pass@host` forms, from the start of a token)
# to the last `@` before the path: an unencoded `@` in a password stays inside it. Anything
# that is not a path, a space or a quote may be in it, so a sloppy URL errs towards secret.
_USERINFO = re.compile(
    r"(?P<lead>[A-Za-z][A-Za-z0-9+.-]*://|(?:^|(?<=[\s=]))(?=[^\s/\"'<>@:=]+:))"
    r"(?P<userinfo>[^\s/\"'<>]*)@(?=[^\s@/\"'<>])")

_TOKEN_SHAPES = re.compile("|".join([
    r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",  # a JWT (header.payload.signature)
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
    r"\b(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,}",
    r"\bglpat-[A-Za-z0-9_-]{20,}",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\bpypi-AgE[A-Za-z0-9_-]{16,}",
    r"\bsk-[A-Za-z0-9_-]{20,}",
]))


@dataclass(frozen=True)
class UrlCredentials:
    user: str
    password: str | None  # None: no `:` in the user info (a token as user name, or just a name)

    def secrets(self) -> list[str]:
        """What is secret on its own, as written and percent-decoded: the password, else a
        user name long enough to be a token."""
        secret = self.password if self.password else (self.user if len(self.user) >= MIN_TOKEN else "")
        return list(dict.fromkeys(s for s in (secret, unquote(secret)) if s))


def url_credentials(text: str) -> list[UrlCredentials]:
    """The user info of every URL in `text` that has one."""
    found = []
    for match in _USERINFO.finditer(text):
        user, colon, password = match["userinfo"].partition(":")
        found.append(UrlCredentials(user, password if colon else None))
    return found


def has_url_credentials(text: str) -> bool:
    return _USERINFO.search(text) is not None


def mask_url_credentials(text: str, mask: str = MASK) -> str:
    """`text` with each URL's password (or its lone user name, a token) shown as `mask`."""
    def masked(match: re.Match[str]) -> str:
        user, colon, _ = match["userinfo"].partition(":")
        return f"{match['lead']}{user}:{mask}@" if colon else f"{match['lead']}{mask}@"

    return _USERINFO.sub(masked, text)


def looks_like_token(text: str) -> bool:
    """Whether `text` holds a credential of a well-known shape."""
    return _TOKEN_SHAPES.search(text) is not None
