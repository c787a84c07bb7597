"""The environment filter removes credentials carried in URLs, whatever the variable's
name: ``DATABASE_URL=postgres://user:pw@db/x`` and the like."""

from __future__ import annotations

import time

import pytest
from sandbox_testkit import Machine, machine, need_some_sandbox  # noqa: F401

from pi_core.testing import ECHO, PiHarness, call
from pi_sandbox import SandboxPlugin
from pi_sandbox.settings import Policy, filter_env, url_credentials

CREDENTIALS = [
    "postgres://user:pw@db/x",
    "postgresql://user:p%40ss@db:5432/x?sslmode=require",
    "postgres://user:p@ss@db/x",  # an unencoded @ in the password: the last @ ends it
    "mysql://root:@localhost/x?x=1",  # an empty password, but a user name, as a token
    "https://key@o1.ingest.sentry.io/1",  # a DSN: the key is the user name
    "https://ghp_abc123@github.com/org/repo.git",
    "https://x-access-token:ghs_abc@github.com/org/repo.git",
    "https://__token__:pypi-abc@upload.pypi.org/legacy/",
    "redis://:pw@host:6379/0",
    "rediss://default:pw@host",
    "amqp://guest:guest@localhost:5672//",
    "mongodb+srv://u:p@cluster0.example.mongodb.net/?retryWrites=true",
    "http://user:pw@proxy:8080",
    "socks5h://user:pw@proxy:1080",
    "ftp://anonymous@ftp.example.org/pub",  # a user name alone counts, except for ssh
    "ssh://user:pw@host/x",  # ssh with a password
    "git+ssh://git:pw@github.com/x/y",
    "https://pypi.org/simple https://user:tok@private.example.org/simple",  # anywhere in the value
    "https://pypi.org/simple,https://user:tok@private.example.org/simple",
    "-Dproxy=http://u:p@proxy:3128 -Xmx1g",
    '{"url": "https://u:p@db.example.org/x"}',
    "[https://u:p@h]",
    "HTTPS://U:P@H",
    "https://u:p@[::1]:8080/x",
    "https://u:p@h",  # nothing after the host
    "jdbc:postgresql://u:p@db/x",
]

NO_CREDENTIALS = [
    "",
    "https://example.org",
    "https://example.org/path?q=1#frag",
    "http://proxy:8080",
    "http://[::1]:8080/x",
    "/usr/local/bin:/usr/bin:/bin",
    "/home/me",
    "en_US.UTF-8",
    "me@example.org",  # an e-mail address is no URL
    "Jane Doe <jane@example.org>",
    "mailto:me@example.org",
    "git@github.com:x/y.git",  # scp-like git remote: no ://
    "ssh://git@github.com/x/y.git",  # ssh: the user name is no secret
    "git+ssh://git@github.com/x/y.git",
    "sftp://me@host/path",
    "https://example.org/@scope/package",  # @ in the path
    "https://example.org/?by=me@example.org",  # @ in the query
    "https://example.org#me@example.org",  # @ in the fragment
    'https://example.org","email":"me@example.org"}',  # JSON: the quote ends the authority
    "https://@example.org",  # an empty user information
    "https://:@example.org",
    "://user:pw@host",  # no scheme, no URL
    "file:///home/me@work/x",
    "localhost,127.0.0.1,.example.org",
    "user:pw@host",  # no ://
    "a" * 100_000 + "://",
]


@pytest.mark.parametrize("value", CREDENTIALS)
def test_urls_with_credentials_are_recognised(value: str) -> None:
    assert url_credentials(value)


@pytest.mark.parametrize("value", NO_CREDENTIALS)
def test_values_without_credentials_are_not(value: str) -> None:
    assert not url_credentials(value)


def test_the_check_is_linear_in_the_value() -> None:
    for value in ("a://" * 100_000, "a" * 400_000 + "://", "s://" + "a" * 400_000, "x://a:" * 60_000 + "@"):
        started = time.thread_time()
        url_credentials(value)
        assert time.thread_time() - started < 1.0, value[:20]


def test_the_filter_removes_variables_with_credentials_unless_allowed() -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/me",
        "LANG": "en_US.UTF-8",
        "EMAIL": "me@example.org",
        "GIT_REMOTE": "git@github.com:x/y.git",
        "PIP_INDEX_URL": "https://pypi.org/simple",
        "DATABASE_URL": "postgres://user:pw@db/x",
        "SENTRY_DSN": "https://key@o1.ingest.sentry.io/1",
        "REDIS_URL": "redis://:pw@host",
        "HTTPS_PROXY": "http://user:pw@proxy:8080",
        "https_proxy": "http://user:pw@proxy:8080",
        "PI_EXTRA": "https://u:p@h",
    }
    kept = filter_env(env, Policy())
    assert sorted(kept) == ["EMAIL", "GIT_REMOTE", "HOME", "LANG", "PATH", "PIP_INDEX_URL"]
    assert kept == {name: env[name] for name in kept}
    allowed = filter_env(env, Policy(env_allow=("DATABASE_URL", "https_*")))  # names: case-insensitive
    assert sorted(set(allowed) - set(kept)) == ["DATABASE_URL", "HTTPS_PROXY", "https_proxy"]
    assert allowed["DATABASE_URL"] == env["DATABASE_URL"]
    # strict: the allowlist of names, and then the same rule for the values
    assert sorted(filter_env(env, Policy(env_minimal=True))) == ["HOME", "LANG", "PATH"]
    assert sorted(filter_env(env, Policy(env_minimal=True, env_allow=("PI_EXTRA", "REDIS_URL")))) == [
        "HOME",
        "LANG",
        "PATH",
        "PI_EXTRA",
        "REDIS_URL",
    ]


def test_a_sandboxed_command_never_sees_a_database_password(
    pi: PiHarness, machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    need_some_sandbox()
    monkeypatch.setenv("DATABASE_URL", "postgres://user:hunter2@db/x")
    monkeypatch.setenv("SENTRY_DSN", "https://abc123@o1.ingest.sentry.io/1")
    monkeypatch.setenv("PUBLIC_URL", "https://example.org")
    pi.use(SandboxPlugin).configure(sandbox={"env": {"allow": ["SENTRY_DSN"]}})
    pi.script(call("bash", command="echo db=${DATABASE_URL:-none} dsn=$SENTRY_DSN public=$PUBLIC_URL"), ECHO)
    result = pi.prompt("env").tool_results[0]
    assert result.text.strip() == "db=none dsn=https://abc123@o1.ingest.sentry.io/1 public=https://example.org"
