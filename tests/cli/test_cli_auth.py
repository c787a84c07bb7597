"""``pi auth …`` as a real subprocess: the subcommands (never a prompt to the model),
logins in a pseudo-terminal against a local authorization server, refresh, and the
one-line errors that write nothing."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import configure_local_endpoint, run_pi, text_reply

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ai"))
from interactive_pty import PI, TIMEOUT, clean_env, loose, pty_or_skip
from oauth_server import OAuthServer
from wire_server import WireServer, anthropic_message, anthropic_stream, use_server


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def oauth() -> Iterator[OAuthServer]:
    server = OAuthServer()
    try:
        yield server
    finally:
        server.close()


def oauth_env(server: OAuthServer) -> dict[str, str]:
    return {
        "PI_OAUTH_ANTHROPIC_AUTHORIZE_URL": f"{server.url}/oauth/authorize",
        "PI_OAUTH_ANTHROPIC_TOKEN_URL": f"{server.url}/v1/oauth/token",
        "PI_OAUTH_ANTHROPIC_CALLBACK_PORT": "0",
        "ANTHROPIC_API_KEY": "",
        "ANTHROPIC_OAUTH_TOKEN": "",
        "ANTHROPIC_AUTH_TOKEN": "",
    }


def now_ms() -> int:
    return int(time.time() * 1000)


def store(agent_dir: Path, data: dict[str, object]) -> Path:
    path = agent_dir / "auth.json"
    path.write_text(json.dumps(data, indent=2))
    return path


def one_line_error(result: object) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]  # type: ignore[attr-defined]
    assert len(lines) == 1, result.stderr  # type: ignore[attr-defined]
    return lines[0]


# --------------------------------------------------------------------------- subcommands, not prompts


def test_auth_and_config_are_subcommands_not_prompts(project: Path, wire: WireServer) -> None:
    ref = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("I am the model"))
    assert ref
    for args in (["auth"], ["auth", "status"], ["auth", "--help"]):
        result = run_pi(*args, cwd=project)
        assert result.returncode == 0 and "I am the model" not in result.stdout
    result = run_pi("auth", cwd=project)
    assert result.returncode == 0 and "login" in result.stdout and "print-bearer-token" in result.stdout
    bogus = run_pi("auth", "frobnicate", cwd=project)
    assert bogus.returncode != 0 and "I am the model" not in bogus.stdout
    config = run_pi("config", "--help", cwd=project)
    assert config.returncode == 0 and "--local" in config.stdout
    assert wire.requests == []  # nothing reached the model
    assert not list(Path(os.environ["PI_CODING_AGENT_DIR"]).glob("sessions/**/*.jsonl"))


# --------------------------------------------------------------------------- status, check, print


def test_status_check_and_print_with_a_file_in_pi_160_format(agent_dir: Path, project: Path) -> None:
    store(
        agent_dir,
        {
            "anthropic": {
                "type": "oauth",
                "refresh": "rt",
                "access": "sk-ant-oat01-valid",
                "expires": now_ms() + 3600_000,
            },
            "openai": {"type": "api_key", "key": "sk-openai"},
        },
    )
    status = run_pi("auth", "status", cwd=project, env={"GEMINI_API_KEY": "g-key"})
    assert status.returncode == 0, status.stderr
    assert "anthropic" in status.stdout and "Anthropic (Claude Pro/Max), expires in" in status.stdout
    assert "google" in status.stdout and "GEMINI_API_KEY" in status.stdout
    rows = json.loads(run_pi("auth", "status", "--json", cwd=project).stdout)
    assert {r["provider"]: r["type"] for r in rows} == {"anthropic": "oauth", "openai": "api_key"}

    check = run_pi("auth", "check", "--provider", "anthropic", "--json", cwd=project)
    assert check.returncode == 0 and json.loads(check.stdout) == {
        "status": "ready",
        "provider": "anthropic",
        "authType": "oauth",
    }
    assert run_pi("auth", "check", "openai", cwd=project).stdout.strip() == "ready"
    missing = run_pi("auth", "check", "--provider", "groq", "--json", cwd=project, env={"GROQ_API_KEY": ""})
    assert missing.returncode == 1 and json.loads(missing.stdout)["reason"] == "credentials_not_configured"
    unknown = run_pi("auth", "check", "--provider", "nope", "--json", cwd=project)
    assert unknown.returncode == 1 and json.loads(unknown.stdout)["reason"] == "provider_not_found"
    creds = run_pi("auth", "check", "--provider", "openai", "--credentials", cwd=project)
    assert creds.stdout.strip() == "sk-openai"

    assert run_pi("auth", "print-api-key", "openai", cwd=project).stdout.strip() == "sk-openai"
    assert run_pi("auth", "print-api-key", "--provider", "openai", cwd=project).stdout.strip() == "sk-openai"
    assert (
        run_pi(
            "auth", "print-bearer-token", "--provider", "anthropic", "--min-expiry", "10m", cwd=project
        ).stdout.strip()
        == "sk-ant-oat01-valid"
    )
    wrong = run_pi("auth", "print-api-key", "anthropic", cwd=project)
    assert wrong.returncode == 1 and "print-bearer-token anthropic" in one_line_error(wrong)
    not_oauth = run_pi("auth", "print-bearer-token", "openai", cwd=project)
    assert not_oauth.returncode == 1 and "`pi auth login openai`" in one_line_error(not_oauth)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["print-api-key", "nope"], 'unknown provider "nope"'),
        (["print-api-key", "groq"], "`pi auth login groq`"),
        (["print-api-key"], "name a provider"),
        (["print-bearer-token", "anthropic", "--min-expiry", "soon"], "--min-expiry"),
        (["login", "nope"], 'unknown provider "nope"'),
        (["login", "anthropic"], "interactive terminal"),
        (["login", "anthropic", "--api-key", "--no-browser"], "--no-browser"),
        (["logout", "nope"], 'unknown provider "nope"'),
        (["status", "nope"], 'unknown provider "nope"'),
    ],
)
def test_bad_input_is_one_line_exit_1_nothing_written(
    args: list[str], expected: str, agent_dir: Path, project: Path
) -> None:
    result = run_pi("auth", *args, cwd=project, env={"GROQ_API_KEY": ""})
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert expected in one_line_error(result)
    assert not (agent_dir / "auth.json").exists()


def test_logout_removes_only_that_provider_and_is_repeatable(agent_dir: Path, project: Path) -> None:
    path = store(
        agent_dir,
        {
            "anthropic": {"type": "oauth", "refresh": "rt", "access": "sk-ant-oat01-x", "expires": now_ms() + 3600_000},
            "openai": {"type": "api_key", "key": "sk-openai"},
        },
    )
    first = run_pi("auth", "logout", "anthropic", cwd=project)
    assert first.returncode == 0 and "Logged out of Anthropic" in first.stdout
    assert json.loads(path.read_text()) == {"openai": {"type": "api_key", "key": "sk-openai"}}
    again = run_pi("auth", "logout", "anthropic", cwd=project)
    assert again.returncode == 0 and "No stored credentials" in again.stdout
    assert (path.stat().st_mode & 0o777) == 0o600


def test_broken_auth_json_is_reported_and_left_alone(agent_dir: Path, project: Path) -> None:
    text = '{\n  "openai": {"type": "api_key", "key": "sk-1"},\n}\n'
    path = agent_dir / "auth.json"
    path.write_text(text)
    for args in (["logout", "openai"], ["status"], ["print-api-key", "openai"]):
        result = run_pi("auth", *args, cwd=project, env={"OPENAI_API_KEY": ""})
        assert result.returncode == 1
        assert str(path) in result.stderr and "line 3" in result.stderr
    assert path.read_text() == text


# --------------------------------------------------------------------------- refresh through the CLI


def test_print_bearer_token_refreshes_an_expired_login(agent_dir: Path, project: Path, oauth: OAuthServer) -> None:
    oauth.refresh_tokens.add("rt-old")
    path = store(
        agent_dir,
        {"anthropic": {"type": "oauth", "refresh": "rt-old", "access": "sk-ant-oat01-old", "expires": now_ms() - 1000}},
    )
    result = run_pi("auth", "print-bearer-token", "anthropic", cwd=project, env=oauth_env(oauth))
    assert result.returncode == 0, result.stderr
    stored = json.loads(path.read_text())["anthropic"]
    assert result.stdout.strip() == stored["access"] != "sk-ant-oat01-old" and oauth.refreshes == 1


def test_expired_login_that_cannot_be_refreshed(
    agent_dir: Path, project: Path, oauth: OAuthServer, wire: WireServer
) -> None:
    oauth.refuse_refresh = True
    path = store(
        agent_dir,
        {"anthropic": {"type": "oauth", "refresh": "rt-old", "access": "sk-ant-oat01-old", "expires": now_ms() - 1000}},
    )
    (agent_dir / "models.json").write_text(
        json.dumps({"providers": {"anthropic": {"baseUrl": wire.url, "models": [{"id": "claude-test"}]}}})
    )
    before = path.read_bytes()
    printed = run_pi("auth", "print-bearer-token", "anthropic", cwd=project, env=oauth_env(oauth))
    assert printed.returncode == 1 and "`pi auth login anthropic`" in one_line_error(printed)
    check = run_pi("auth", "check", "anthropic", cwd=project, env=oauth_env(oauth))
    assert check.returncode == 2 and check.stdout.strip() == "invalid"
    prompt = run_pi("-p", "hi", "--model", "anthropic/claude-test", cwd=project, env=oauth_env(oauth))
    assert prompt.returncode == 1
    assert "`pi auth login anthropic`" in prompt.stderr + prompt.stdout
    assert wire.requests == [] and path.read_bytes() == before


def test_claude_subscription_answers_pi_p(agent_dir: Path, project: Path, oauth: OAuthServer, wire: WireServer) -> None:
    """Only a Claude subscription (an expired login refreshes on the way): pi -p hi answers."""
    oauth.refresh_tokens.add("rt-old")
    store(
        agent_dir,
        {"anthropic": {"type": "oauth", "refresh": "rt-old", "access": "sk-ant-oat01-old", "expires": now_ms() - 1000}},
    )
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "anthropic": {
                        "baseUrl": wire.url,
                        "models": [{"id": "claude-test", "contextWindow": 200000, "maxTokens": 8192}],
                    }
                }
            }
        )
    )
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "Hello from Claude"}])))
    result = run_pi("-p", "hi", "--model", "anthropic/claude-test", cwd=project, env=oauth_env(oauth))
    assert result.returncode == 0, result.stderr
    assert "Hello from Claude" in result.stdout
    request = wire.requests[0]
    stored = json.loads((agent_dir / "auth.json").read_text())["anthropic"]
    assert request.headers["authorization"] == f"Bearer {stored['access']}"
    assert "claude-code-20250219" in request.headers["anthropic-beta"]
    assert request.body["system"][0]["text"].startswith("You are Claude Code")


# --------------------------------------------------------------------------- logins in a terminal


def spawn(args: list[str], cwd: Path, env: dict[str, str]) -> object:
    pexpect = pty_or_skip()
    return pexpect.spawn(
        PI[0],
        [*PI[1:], *args],
        cwd=str(cwd),
        env=clean_env(**{"PI_EXTENSIONS": "", **env}),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 200),
    )


def test_login_anthropic_with_a_pasted_code(agent_dir: Path, project: Path, oauth: OAuthServer) -> None:
    """``--no-browser``: the copy-code method; the user signs in elsewhere and pastes code#state."""
    import re
    import urllib.error
    import urllib.request
    from urllib.parse import parse_qs, urlsplit

    child = spawn(["auth", "login", "anthropic", "--no-browser"], project, oauth_env(oauth))
    child.expect(r"Open this URL to sign in:\s+(\S+)")  # type: ignore[attr-defined]
    url = child.match.group(1)  # type: ignore[attr-defined]
    assert url.startswith(f"{oauth.url}/oauth/authorize?")
    child.expect(loose("Paste the code"))  # type: ignore[attr-defined]

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: object, **kwargs: object) -> None:
            return None

    try:
        urllib.request.build_opener(NoRedirect).open(url)
        raise AssertionError("expected a redirect")
    except urllib.error.HTTPError as redirect:
        location = redirect.headers["Location"]
    query = parse_qs(urlsplit(location).query)
    child.sendline(f"{query['code'][0]}#{query['state'][0]}")  # type: ignore[attr-defined]
    child.expect(r"Logged in to Anthropic\. Credentials saved to (\S+)")  # type: ignore[attr-defined]
    child.expect(pty_or_skip().EOF)  # type: ignore[attr-defined]
    child.close()  # type: ignore[attr-defined]
    assert child.exitstatus == 0  # type: ignore[attr-defined]
    path = agent_dir / "auth.json"
    entry = json.loads(path.read_text())["anthropic"]
    assert entry["type"] == "oauth" and entry["access"].startswith("sk-ant-oat01-") and entry["refresh"]
    assert (path.stat().st_mode & 0o777) == 0o600
    assert re.sub(r"\s", "", oauth.token_requests[0]["redirect_uri"]).startswith("https://platform.claude.com")


def test_login_anthropic_in_the_browser(agent_dir: Path, project: Path, oauth: OAuthServer, tmp_path: Path) -> None:
    """The browser (``$BROWSER``, here a script that follows the redirects) reaches pi's
    callback server while the pasted-code prompt waits: the callback wins."""
    browser = tmp_path / "browser.py"
    browser.write_text("import sys, urllib.request\nurllib.request.urlopen(sys.argv[1]).read()\n")
    env = {**oauth_env(oauth), "BROWSER": f"{sys.executable} {browser} %s"}
    child = spawn(["auth", "login", "anthropic"], project, env)
    child.expect(r"Logged in to Anthropic")  # type: ignore[attr-defined]
    child.expect(pty_or_skip().EOF)  # type: ignore[attr-defined]
    child.close()  # type: ignore[attr-defined]
    assert child.exitstatus == 0  # type: ignore[attr-defined]
    assert json.loads((agent_dir / "auth.json").read_text())["anthropic"]["type"] == "oauth"
    assert oauth.authorize_requests[0]["redirect_uri"].startswith("http://localhost:")


def test_login_with_an_api_key(agent_dir: Path, project: Path) -> None:
    child = spawn(["auth", "login", "openai", "--api-key"], project, {})
    child.expect(loose("Enter OpenAI API key"))  # type: ignore[attr-defined]
    child.sendline("sk-typed-secret")  # type: ignore[attr-defined]
    child.expect(r"Saved API key for OpenAI")  # type: ignore[attr-defined]
    output = child.before  # type: ignore[attr-defined]
    child.expect(pty_or_skip().EOF)  # type: ignore[attr-defined]
    child.close()  # type: ignore[attr-defined]
    assert child.exitstatus == 0  # type: ignore[attr-defined]
    assert "sk-typed-secret" not in output  # not echoed
    assert json.loads((agent_dir / "auth.json").read_text()) == {
        "openai": {"type": "api_key", "key": "sk-typed-secret"}
    }


def test_login_failure_writes_nothing(agent_dir: Path, project: Path, oauth: OAuthServer) -> None:
    child = spawn(["auth", "login", "anthropic", "--no-browser"], project, oauth_env(oauth))
    child.expect(loose("Paste the code"))  # type: ignore[attr-defined]
    child.sendline("bogus-code#wrong-state")  # type: ignore[attr-defined]
    child.expect(r"pi: failed to log in to Anthropic: .*state mismatch")  # type: ignore[attr-defined]
    child.expect(pty_or_skip().EOF)  # type: ignore[attr-defined]
    child.close()  # type: ignore[attr-defined]
    assert child.exitstatus == 1  # type: ignore[attr-defined]
    assert not (agent_dir / "auth.json").exists()


def test_plugin_sso_login_method(agent_dir: Path, project: Path) -> None:
    """An organisation's plugin registers its own provider and login method."""
    plugin = agent_dir / "extensions" / "acme_sso.py"
    plugin.parent.mkdir(parents=True)
    plugin.write_text(
        "from pi_hookspecs import LoginMethod, OAuthCredentials, hookimpl\n"
        "async def login(callbacks):\n"
        "    callbacks.open_url('https://sso.acme.example/device', 'Sign in with your badge')\n"
        "    code = await callbacks.prompt('Badge code')\n"
        "    return OAuthCredentials(access='acme-' + code, refresh='r', expires=4102444800000, tenant='eu')\n"
        "def refresh(credentials):\n"
        "    return credentials\n"
        "@hookimpl\n"
        "def register_providers(register):\n"
        "    register({'name': 'acme', 'baseUrl': 'http://127.0.0.1:9/v1', 'api': 'openai-completions',\n"
        "              'models': [{'id': 'acme-1'}]})\n"
        "    register(LoginMethod(provider='acme', name='ACME SSO', login=login, refresh=refresh))\n"
    )
    child = spawn(["auth", "login", "acme", "--no-browser"], project, {"PI_EXTENSIONS": "acme_sso"})
    child.expect(loose("Sign in with your badge"))  # type: ignore[attr-defined]
    child.expect(loose("Badge code"))  # type: ignore[attr-defined]
    child.sendline("1234")  # type: ignore[attr-defined]
    child.expect(r"Logged in to acme")  # type: ignore[attr-defined]
    child.expect(pty_or_skip().EOF)  # type: ignore[attr-defined]
    child.close()  # type: ignore[attr-defined]
    assert child.exitstatus == 0  # type: ignore[attr-defined]
    entry = json.loads((agent_dir / "auth.json").read_text())["acme"]
    assert entry == {"type": "oauth", "access": "acme-1234", "refresh": "r", "expires": 4102444800000, "tenant": "eu"}
    token = run_pi("auth", "print-bearer-token", "acme", cwd=project, env={"PI_EXTENSIONS": "acme_sso"})
    assert token.stdout.strip() == "acme-1234", token.stderr


# --------------------------------------------------------------------------- /login and /logout


def test_slash_login_and_logout_in_interactive_mode(agent_dir: Path, project: Path, oauth: OAuthServer) -> None:
    from interactive_pty import Pi

    pi = Pi(cwd=project, env=clean_env(**oauth_env(oauth)))
    try:
        pi.expect("offline-demo")
        pi.expect("› ")
        pi.line("/login openai")
        pi.expect("Select authentication method for OpenAI")  # pi 1.6.0: an account or a key
        pi.send("2")  # Sign in with an API key
        pi.expect("Enter OpenAI API key")
        pi.line("sk-from-the-dialog")
        pi.expect("Saved API key for OpenAI")
        assert json.loads((agent_dir / "auth.json").read_text()) == {
            "openai": {"type": "api_key", "key": "sk-from-the-dialog"}
        }
        assert "sk-from-the-dialog" not in pi.screen_text()

        pi.line("/login anthropic")
        pi.expect("Select authentication method for Anthropic")
        pi.send("1")  # Sign in with an account
        pi.expect("Select Anthropic login method")
        pi.send("2")  # copy code (headless)
        url = pi.expect_re(r"Open this URL to sign in: \S+")
        authorize = url.split(": ", 1)[1]
        import urllib.error
        import urllib.request
        from urllib.parse import parse_qs, urlsplit

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *args: object, **kwargs: object) -> None:
                return None

        try:
            urllib.request.build_opener(NoRedirect).open(authorize)
            raise AssertionError("expected a redirect")
        except urllib.error.HTTPError as redirect:
            query = parse_qs(urlsplit(redirect.headers["Location"]).query)
        pi.expect("Paste the code")
        pi.line(f"{query['code'][0]}#{query['state'][0]}")
        pi.expect("Logged in to Anthropic")
        assert json.loads((agent_dir / "auth.json").read_text())["anthropic"]["type"] == "oauth"

        pi.line("/logout openai")
        pi.expect("Removed the stored API key of OpenAI")
        assert set(json.loads((agent_dir / "auth.json").read_text())) == {"anthropic"}
        pi.line("/quit")
        assert pi.wait_exit() == 0
    finally:
        pi.close()


def test_missing_key_names_the_login_command(agent_dir: Path, project: Path, wire: WireServer) -> None:
    (agent_dir / "models.json").write_text(
        json.dumps({"providers": {"anthropic": {"baseUrl": wire.url, "models": [{"id": "claude-test"}]}}})
    )
    result = run_pi(
        "-p",
        "hi",
        "--model",
        "anthropic/claude-test",
        cwd=project,
        env={"ANTHROPIC_API_KEY": "", "ANTHROPIC_OAUTH_TOKEN": "", "ANTHROPIC_AUTH_TOKEN": ""},
    )
    assert result.returncode == 1
    assert "`pi auth login anthropic`" in one_line_error(result)
    assert wire.requests == [] and not (agent_dir / "auth.json").exists()
