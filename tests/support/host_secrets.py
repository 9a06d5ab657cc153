"""Secrets a CI runner's environment holds, as issue 41 tried them, and names that only look
like secrets. Shared by the sandbox test (test_secret_values.py) and the log test
(test_log_secrets.py)."""

from __future__ import annotations

# The 15 variables issue 41 set on the host. The first 9 reached commands and logs while
# secrets were judged by name alone.
ISSUE_41 = {
    "DATABASE_URL": "postgres://app:db-pw-7f3k9q2z@db.internal:5432/prod",
    "REDIS_URL": "redis://:redis-pw-4x8m2v6n@cache.internal:6379/0",
    "PIP_INDEX_URL": "https://__token__:pip-pw-9c2b4d1e@pypi.internal/simple",
    "HTTPS_PROXY": "http://proxyuser:proxy-pw-5h7j3k1l@proxy.internal:3128",
    "MYSQL_PWD": "mysql-pw-2w6e8r4t",
    "GPG_PASSPHRASE": "gpg phrase 3t5y7u9i",
    "CI_JOB_JWT": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJqb2JfNDIifQ.c2lnbmF0dXJlLTEyMzQ1Njc4",
    "SLACK_WEBHOOK_URL": "https://hooks.slack.com/services/T0000/B0000/slackhook6g8h0j2k",
    "SENTRY_DSN": "https://sentrykey0123456789abcdef@o1.ingest.sentry.io/42",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-8u6y4t2r0e",
    "GITHUB_TOKEN": "ghs_githubtoken0123456789abcdefABCD",
    "NPM_TOKEN": "npm-token-1a3s5d7f9g",
    "PGPASSWORD": "pg-password-2z4x6c8v",
    "ANTHROPIC_API_KEY": "sk-ant-anthropickey0123456789",
    "DOCKER_AUTH_CONFIG": "docker-auth-5b7n9m1q3w",
}
# The same class under names that say nothing: found by the value's form alone.
BY_VALUE = {
    "UPSTREAM_REMOTE": "https://x-access-token:upstream-pw-6r8t0y2u@github.com/o/r.git",
    "BROKER": "amqp://guest:broker-pw-1q2w3e4r@mq.internal:5672/",
    "NOTIFY": "xoxb-1234567890-notifytoken0987",
}
HOST_SECRETS = {**ISSUE_41, **BY_VALUE}
# What a URL's password looks like on its own (a command can print it apart from the URL).
PASSWORDS = ("db-pw-7f3k9q2z", "redis-pw-4x8m2v6n", "pip-pw-9c2b4d1e", "proxy-pw-5h7j3k1l", "upstream-pw-6r8t0y2u",
             "broker-pw-1q2w3e4r")
SECRET_TEXTS = (*HOST_SECRETS.values(), *PASSWORDS)

# Names that look like secrets but are not: they keep reaching commands.
NOT_SECRETS = {
    "GIT_AUTHOR_NAME": "Ada Lovelace",
    "GIT_COMMITTER_EMAIL": "ada@example.com",
    "OLDPWD": "/usr/share",  # bash keeps an inherited OLDPWD only if it is a folder
    "PAGE_URL": "https://example.com/docs/page",
    "REGISTRY": "https://registry.npmjs.org/@scope/pkg",
    "PLAIN_SETTING": "plain-visible-value-123",
}
