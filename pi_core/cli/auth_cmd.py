"""``pi auth``: log in to and out of providers, show and check credentials, print
them for other programs (pi 1.6.0's ``auth`` commands, plus ``status``).

Every failure a user can cause prints one line naming the provider and what to do,
exits with status 1 and writes nothing. The providers and login methods are pi's own
and those of the plugins that are not a project's (``register_providers``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
import time
from typing import Any, NoReturn

import typer

from ..ai import ModelRegistry
from ..ai.auth import (
    BEARER_ENV,
    ENV_API_KEYS,
    AuthFileError,
    CommandError,
    LoginRequiredError,
    env_api_key,
    env_bearer_token,
)
from ..ai.registry import ModelResolutionError
from .login_terminal import TerminalCallbacks

auth_app = typer.Typer(
    help="Log in to model providers, show and check their credentials, print them for other programs.",
    invoke_without_command=True,
    add_completion=False,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


@auth_app.callback()
def _auth_help(context: typer.Context) -> None:
    """Credentials are stored in auth.json in the agent directory (~/.pi/agent)."""
    if context.invoked_subcommand is None:
        print(context.get_help())
        raise typer.Exit(0)


DEFAULT_BEARER_MIN_EXPIRY_MS = 30 * 60_000
_DURATION = re.compile(r"^(\d+)(ms|s|m|h)$", re.IGNORECASE)


class AuthCommandError(Exception):
    """A one-line problem of an auth command (printed as ``pi: <message>``)."""


def fail(message: str, status: int = 1) -> NoReturn:
    print(f"pi: {message}", file=sys.stderr)
    raise typer.Exit(status)


def load_registry() -> ModelRegistry:
    """The model registry with the providers, APIs and login methods of pi and of the
    plugins that are not a project's own (no session is started)."""
    # the plugin host (about 0.1 s of imports) only in the commands that load plugins:
    # every subcommand's module is imported to build the one typer app of ``pi``
    from ..extensions import LoadOptions, PluginHost

    registry = ModelRegistry(builtins=False)
    host = PluginHost(LoadOptions(cwd=os.getcwd()))
    host.load_phase_one()
    for diagnostic in asyncio.run(host.run_registration("register_providers")):
        if diagnostic.level == "error":
            print(f"pi: {diagnostic.format()}", file=sys.stderr)
    for problem in registry.use_registrations(host.registry.provider_registrations()):
        print(f"pi: {problem}", file=sys.stderr)
    return registry


def known_provider(registry: ModelRegistry, provider: str) -> bool:
    return provider in registry.providers() or registry.login_method(provider) is not None


def _resolve_provider(registry: ModelRegistry, positional: str | None, provider: str | None, model: str | None) -> str:
    """The provider a print/check command is about: ``[provider]``, ``--provider`` or
    the provider of ``--model``."""
    if positional and provider and positional != provider:
        raise AuthCommandError(f'two providers given ("{positional}" and "{provider}"): give one')
    name = (positional or provider or "").strip() or None
    if model:
        try:
            selection = registry.resolve(model, provider=name)
        except ModelResolutionError as error:
            raise AuthCommandError(str(error)) from None
        return selection.model.provider
    if not name:
        raise AuthCommandError("name a provider: pi auth <command> <provider> (or --provider / --model)")
    if not known_provider(registry, name):
        raise AuthCommandError(f'unknown provider "{name}": see pi --list-models for the providers pi knows')
    return name


def _duration_ms(text: str) -> int:
    match = _DURATION.match(text.strip())
    if not match:
        raise AuthCommandError("--min-expiry must be a duration such as 30m or 1h")
    unit = match.group(2).lower()
    return int(match.group(1)) * {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000}[unit]


def _env_names(provider: str) -> str:
    names = [*ENV_API_KEYS.get(provider, ()), *([BEARER_ENV[provider]] if provider in BEARER_ENV else [])]
    return " or ".join(names)


def _no_credentials(registry: ModelRegistry, provider: str) -> str:
    problem = registry.auth.check()
    if problem:
        return f"{problem} (fix or delete it; it was not changed)"
    names = _env_names(provider)
    key = f"set {names} or " if names else ""
    return f'no credentials for provider "{provider}": {key}run `pi auth login {provider}`'


def _describe_expiry(expires: int) -> str:
    left = (expires - int(time.time() * 1000)) / 1000
    if left <= 0:
        return "expired"
    hours, rest = divmod(int(left), 3600)
    minutes = rest // 60
    return f"expires in {hours}h {minutes:02d}m" if hours else f"expires in {minutes}m"


# --------------------------------------------------------------------------- login / logout


@auth_app.command("login")
def login_command(
    provider: str = typer.Argument(
        ..., help="The provider to sign in to (e.g. anthropic, openai, github-copilot, xai, openrouter)."
    ),
    api_key: bool = typer.Option(False, "--api-key", help="Save an API key instead of signing in with an account."),
    no_browser: bool = typer.Option(
        False, "--no-browser", help="Do not open a browser; use another sign-in method (a device code, a pasted code)."
    ),
) -> None:
    """Sign in with an account in the browser (or save an API key), then exit."""
    if api_key and no_browser:
        fail("--no-browser only applies to account sign-in; omit it with --api-key")
    registry = load_registry()
    if not known_provider(registry, provider):
        logins = ", ".join(sorted(registry.login_methods()))
        fail(
            f'unknown provider "{provider}": account sign-in exists for {logins}; '
            "see pi --list-models for API-key providers"
        )
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        fail(f"`pi auth login {provider}` needs an interactive terminal (or set the provider's API key variable)")
    problem = registry.auth.check()
    if problem:
        fail(f"{problem} (fix or delete it; it was not changed)")
    account = registry.credentials.account_login(provider)
    key_login = registry.credentials.api_key_login(provider)
    name = _login_provider_name(registry, provider)
    # as pi 1.6.0: the account login unless --api-key; a provider without one has its API-key login
    if account is not None and not api_key:
        raise typer.Exit(_run_login(registry, provider, name, "oauth", browser=not no_browser))
    if key_login is not None:
        raise typer.Exit(_run_login(registry, provider, name, "api_key", browser=False))
    if account is not None:
        fail(f"{name} has no API key login: run `pi auth login {provider}` without --api-key")
    fail(f"{name} is configured outside pi (it takes no key)")


def _login_provider_name(registry: ModelRegistry, provider: str) -> str:
    if provider in registry.providers():
        return registry.provider_name(provider)
    method = registry.login_method(provider)  # a login of a provider without models (typesafe)
    return method.name.removesuffix(" API key") if method is not None else provider


def _run_login(registry: ModelRegistry, provider: str, name: str, kind: str, *, browser: bool) -> int:
    """Run the login of ``kind`` (``"oauth"``: an account, ``"api_key"``) on the
    terminal; the exit status."""
    callbacks = TerminalCallbacks(provider, browser=browser, ask=kind == "api_key")

    async def run() -> int:
        loop = asyncio.get_running_loop()
        with _interrupts_abort(loop, callbacks):
            task = asyncio.ensure_future(registry.login(provider, callbacks, kind))
            aborted = asyncio.ensure_future(callbacks.signal.wait())
            await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
            aborted.cancel()
            if not task.done():
                task.cancel()
                print("pi: login cancelled.", file=sys.stderr)
                return 1
        try:
            task.result()
        except (asyncio.CancelledError, EOFError):
            print("pi: login cancelled.", file=sys.stderr)
            return 1
        except Exception as error:
            detail = str(error) or type(error).__name__
            if "Login cancelled" in detail:
                print("pi: login cancelled.", file=sys.stderr)
            else:
                print(f"pi: failed to log in to {name}: {detail}", file=sys.stderr)
            return 1
        done = f"Logged in to {name}" if kind == "oauth" else f"Saved API key for {name}"
        callbacks.write(f"{done}. Credentials saved to {registry.auth.path}")
        return 0

    return asyncio.run(run())


class _interrupts_abort:
    """Ctrl+C aborts the login (its signal) instead of raising in the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, callbacks: TerminalCallbacks) -> None:
        self.loop, self.callbacks = loop, callbacks

    def __enter__(self) -> None:
        try:
            self.loop.add_signal_handler(signal.SIGINT, self.callbacks.controller.abort, "Login cancelled")
        except (NotImplementedError, RuntimeError):
            pass

    def __exit__(self, *exc: object) -> None:
        try:
            self.loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):
            pass


@auth_app.command("logout")
def logout_command(
    provider: str = typer.Argument(..., help="The provider whose stored credentials to remove."),
) -> None:
    """Remove the stored credentials; environment variables and models.json stay."""
    registry = load_registry()
    problem = registry.auth.check()
    if problem:
        fail(f"{problem} (fix or delete it; it was not changed)")
    stored = registry.auth.credential(provider)
    if stored is None and not known_provider(registry, provider):
        names = ", ".join(sorted(registry.auth.credentials())) or "none"
        fail(f'unknown provider "{provider}" (stored credentials: {names})')
    name = registry.provider_name(provider)
    if stored is None:
        print(f"No stored credentials for {name}. Environment variables and models.json config are unchanged.")
        return
    try:
        registry.auth.remove(provider)
    except AuthFileError as error:
        fail(str(error))
    if stored.get("type") == "oauth":
        print(f"Logged out of {name}.")
    else:
        print(f"Removed stored API key for {name}. Environment variables and models.json config are unchanged.")


# --------------------------------------------------------------------------- status / check


def _status_rows(registry: ModelRegistry, only: str | None) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    stored = registry.auth.credentials()
    for provider, entry in stored.items():
        if only and provider != only:
            continue
        row: dict[str, Any] = {"provider": provider, "type": entry.get("type"), "source": str(registry.auth.path)}
        if entry.get("type") == "oauth":
            method = registry.credentials.account_login(provider)
            row["login"] = method.name if method else None
            if isinstance(entry.get("expires"), int | float):
                row["expires"] = int(entry["expires"])
        elif entry.get("type") == "api_key":
            method = registry.login_method(provider)
            if method is not None and method.kind == "api_key":
                row["login"] = method.name  # a registered API-key login (a server URL and key)
        rows.append(row)
    for provider in registry.providers():
        if provider in stored or (only and provider != only):
            continue
        env = registry.auth.env(provider)
        if env_api_key(provider, env) or env_bearer_token(provider):
            rows.append({"provider": provider, "type": "api_key", "source": f"environment ({_env_names(provider)})"})
    return rows


@auth_app.command("status")
def status_command(
    provider: str | None = typer.Argument(None, help="Only this provider."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
) -> None:
    """Show the credentials pi has: stored logins and keys, and keys in the environment."""
    registry = load_registry()
    problem = registry.auth.check()
    if problem:
        fail(f"{problem} (fix or delete it; it was not changed)")
    if provider and not known_provider(registry, provider) and registry.auth.credential(provider) is None:
        fail(f'unknown provider "{provider}": see pi --list-models for the providers pi knows')
    rows = _status_rows(registry, provider)
    if as_json:
        print(json.dumps(rows, indent=2))
        return
    if not rows:
        if provider:
            print(f"No credentials for {provider}. Run `pi auth login {provider}`.")
        else:
            print("No credentials. Run `pi auth login <provider>` or set a provider's API key variable.")
        return
    width = max(len(row["provider"]) for row in rows)
    for row in rows:
        if row["type"] == "oauth":
            method = row.get("login") or "login (no login method installed)"
            expiry = f", {_describe_expiry(row['expires'])}" if "expires" in row else ""
            detail = f"{method}{expiry}"
        elif row.get("login"):
            detail = f"{row['login']} from {row['source']}"
        else:
            detail = f"API key from {row['source']}"
        print(f"{row['provider']:<{width}}  {detail}")


@auth_app.command("check")
def check_command(
    provider_arg: str | None = typer.Argument(None, metavar="[PROVIDER]", help="The provider to check."),
    provider: str | None = typer.Option(None, "--provider", help="The provider to check."),
    model: str | None = typer.Option(None, "--model", help="Check the provider of this model."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    credentials: bool = typer.Option(False, "--credentials", help="Print the credential when ready."),
    no_refresh: bool = typer.Option(False, "--no-refresh", help="Do not refresh an expired login."),
) -> None:
    """Print ready, not_ready or invalid; exit with 0, 1 or 2."""
    registry = load_registry()
    try:
        name = _resolve_provider(registry, provider_arg, provider, model)
    except AuthCommandError as error:
        if "unknown provider" in str(error):
            name = (provider_arg or provider or "").strip()
            _check_result({"status": "not_ready", "provider": name, "reason": "provider_not_found"}, as_json, None)
        fail(str(error), 2)
    result: dict[str, Any]
    secret: str | None = None
    if registry.auth.check():
        result = {"status": "invalid", "provider": name, "reason": "invalid_state"}
    elif not registry.has_auth(name):
        result = {"status": "not_ready", "provider": name, "reason": "credentials_not_configured"}
    else:
        oauth = registry.auth.has_oauth(name)
        result = {"status": "ready", "provider": name, "authType": "oauth" if oauth else "api_key"}
        try:
            if oauth:
                login = asyncio.run(registry.oauth_credentials(name, refresh=not no_refresh))
                method = registry.credentials.account_login(name)
                secret = method.api_key(login) if method is not None and method.api_key else login.access
            elif credentials:
                secret = _api_key_of(registry, name)
        except (LoginRequiredError, AuthCommandError):
            result = {"status": "invalid", "provider": name, "reason": "invalid_state"}
        if credentials and result["status"] == "ready" and not secret:
            result = {"status": "not_ready", "provider": name, "reason": "credential_not_available"}
    _check_result(result, as_json, secret if credentials else None)


def _check_result(result: dict[str, Any], as_json: bool, secret: str | None) -> NoReturn:
    if as_json:
        print(json.dumps({**result, **({"credentials": secret} if secret else {})}, separators=(",", ":")))
    else:
        print(secret or result["status"])
    raise typer.Exit({"ready": 0, "not_ready": 1}.get(result["status"], 2))


# --------------------------------------------------------------------------- printing


def _api_key_of(registry: ModelRegistry, provider: str) -> str | None:
    try:
        key = registry.api_key(provider)
    except CommandError as error:
        raise AuthCommandError(f'the apiKey command of provider "{provider}" failed: {error}') from None
    return key or env_bearer_token(provider)


@auth_app.command("print-api-key")
def print_api_key_command(
    provider_arg: str | None = typer.Argument(None, metavar="[PROVIDER]", help="The provider."),
    provider: str | None = typer.Option(None, "--provider", help="The provider."),
    model: str | None = typer.Option(None, "--model", help="The provider of this model."),
) -> None:
    """Print the resolved API key."""
    registry = load_registry()
    try:
        name = _resolve_provider(registry, provider_arg, provider, model)
        if registry.auth.has_oauth(name):
            raise AuthCommandError(
                f'provider "{name}" is signed in with OAuth, not an API key: use `pi auth print-bearer-token {name}`'
            )
        key = _api_key_of(registry, name)
    except AuthCommandError as error:
        fail(str(error))
    if not key:
        fail(_no_credentials(registry, name))
    print(key)


@auth_app.command("print-bearer-token")
def print_bearer_token_command(
    provider_arg: str | None = typer.Argument(None, metavar="[PROVIDER]", help="The provider."),
    provider: str | None = typer.Option(None, "--provider", help="The provider."),
    model: str | None = typer.Option(None, "--model", help="The provider of this model."),
    min_expiry: str | None = typer.Option(
        None, "--min-expiry", help="Minimum remaining lifetime of the token, e.g. 30m or 1h (default 30m)."
    ),
) -> None:
    """Print a resolved OAuth bearer token (refreshed when it expires too soon)."""
    registry = load_registry()
    try:
        name = _resolve_provider(registry, provider_arg, provider, model)
        minimum = _duration_ms(min_expiry) if min_expiry else DEFAULT_BEARER_MIN_EXPIRY_MS
    except AuthCommandError as error:
        fail(str(error))
    if not registry.auth.has_oauth(name):
        problem = registry.auth.check()
        if problem:
            fail(f"{problem} (fix or delete it; it was not changed)")
        fail(f'provider "{name}" is not signed in with OAuth: run `pi auth login {name}`')
    try:
        login = asyncio.run(registry.oauth_credentials(name, min_validity_ms=minimum))
    except LoginRequiredError as error:
        fail(str(error))
    method = registry.credentials.account_login(name)
    print(method.api_key(login) if method is not None and method.api_key else login.access)
