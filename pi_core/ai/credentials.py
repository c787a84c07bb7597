"""Credentials of the model registry's providers: API keys, ``auth.json``, stored
logins (OAuth) and their refresh, and the credential sources plugins register.

A request's key, first found wins: the request's own ``api_key`` (``--api-key``), a
stored login (through its login method), ``auth.json``, the provider's ``apiKey``,
then the provider's environment variables; a provider's credential source may then
lend the request its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from pi_hookspecs import (
    ApiKeyCredentials,
    CredentialRequest,
    CredentialSource,
    LoginCallbacks,
    LoginError,
    LoginMethod,
    Model,
    OAuthCredentials,
    RequestCredentials,
    StreamOptions,
)

from .._async import maybe_await
from .auth import (
    AuthFileError,
    AuthStore,
    CommandError,
    LoginRequiredError,
    env_api_key,
    env_bearer_token,
    refresh_margin,
    resolve_config_value,
)
from .oauth.api_key import plain_api_key_login

REFRESH_TIMEOUT = 30.0
"""Seconds a login method's refresh may take (it runs under the lock of auth.json)."""

Login = tuple[str | None, dict[str, str], str | None]
"""``(key, headers, base URL)`` a request sends with a provider's login (key ``None``:
the provider's usual key)."""

NO_API_KEY_LOGIN = frozenset({"openai-codex", "faux"})
"""Providers that take no API key (a subscription login only; the offline demo)."""

API_KEY_LOGIN_NAMES = {
    "anthropic": "Anthropic API key",
    "github-copilot": "GitHub Copilot token",
    "kimi-coding": "Kimi API key",
    "meta": "Meta Model API key",
    "radius": "Radius API key",
    "typesafe": "TypeSafe API key",
}
"""The names pi 1.6.0 gives API-key logins that are not "<provider name> API key"."""


class ProviderAuth(Protocol):
    """What the credentials need of a provider of the registry."""

    api_key: str | None
    headers: dict[str, str]
    auth_header: bool
    needs_auth: bool


class Credentials:
    """The registry's credentials: ``auth`` (``auth.json``), the login methods and the
    credential sources, by provider. ``provider(name)`` is the registry's provider of
    that name (its ``apiKey``, headers and whether it needs a credential at all)."""

    def __init__(
        self,
        auth: AuthStore,
        provider: Callable[[str], ProviderAuth | None],
        login_methods: Iterable[tuple[str, LoginMethod]] = (),
    ) -> None:
        self.auth = auth
        self._provider = provider
        self._sources: dict[str, tuple[str, CredentialSource]] = {}
        self._logins: dict[str, tuple[str, LoginMethod]] = {}
        """Account (OAuth) logins by provider."""
        self._key_logins: dict[str, tuple[str, LoginMethod]] = {}
        """API-key logins registered by provider (the others have :func:`plain_api_key_login`)."""
        for _name, method in login_methods:
            self.add_login_method(method, "builtin")

    # ------------------------------------------------------------------ registration

    def add_source(self, definition: CredentialSource, source: str = "plugin") -> None:
        self._sources[definition.provider] = (source, definition)

    def add_login_method(self, method: LoginMethod, source: str = "plugin") -> None:
        table = self._key_logins if getattr(method, "kind", "oauth") == "api_key" else self._logins
        table[method.provider] = (source, method)

    def clear(self) -> None:
        """Forget every login method and credential source."""
        self._sources, self._logins, self._key_logins = {}, {}, {}

    def remove(self, source: str) -> None:
        """Forget the login methods and credential sources ``source`` registered."""
        self._sources = {name: entry for name, entry in self._sources.items() if entry[0] != source}
        self._logins = {name: entry for name, entry in self._logins.items() if entry[0] != source}
        self._key_logins = {name: entry for name, entry in self._key_logins.items() if entry[0] != source}

    def login_method(self, provider: str) -> LoginMethod | None:
        """The registered login of ``provider``: its account login, else a registered
        API-key login (a server URL and key, a key of another name)."""
        return self.account_login(provider) or self._registered_key_login(provider)

    def account_login(self, provider: str) -> LoginMethod | None:
        """The account (OAuth) login of ``provider``."""
        entry = self._logins.get(provider)
        return entry[1] if entry is not None else None

    def _registered_key_login(self, provider: str) -> LoginMethod | None:
        entry = self._key_logins.get(provider)
        return entry[1] if entry is not None else None

    def api_key_login(self, provider: str) -> LoginMethod | None:
        """The API-key login of ``provider``: a registered one, else the plain one of a
        provider of the registry that takes a key (``None``: it takes none)."""
        registered = self._registered_key_login(provider)
        if registered is not None:
            return registered
        state = self._provider(provider)
        if state is None or provider in NO_API_KEY_LOGIN:
            return None
        display = getattr(state, "display_name", None) or provider
        return plain_api_key_login(provider, API_KEY_LOGIN_NAMES.get(provider) or f"{display} API key")

    def login_methods(self) -> dict[str, LoginMethod]:
        """The registered login of each provider (see :meth:`login_method`)."""
        methods = {name: entry[1] for name, entry in self._key_logins.items()}
        methods.update({name: entry[1] for name, entry in self._logins.items()})
        return dict(sorted(methods.items()))

    # ------------------------------------------------------------------ queries

    def has_auth(self, provider: str) -> bool:
        """Whether a credential is configured for ``provider`` (without running
        ``!command`` values: configured is enough)."""
        state = self._provider(provider)
        if state is not None and not state.needs_auth:
            return True
        if self.auth.has_oauth(provider) and self.account_login(provider) is not None:
            return True  # a stored login (without its login method, the other sources count)
        if self.auth.has(provider) or (state is not None and state.api_key):
            return True
        stored = self.auth.credential(provider)
        if stored is not None and stored.get("type") == "api_key" and provider in self._key_logins:
            return True  # a registered API-key login stored what its provider needs (a URL)
        if state is not None and any(k.lower() in ("authorization", "x-api-key") for k in state.headers):
            return True
        lender = self._sources.get(provider)
        if lender is not None:
            available = lender[1].available
            if available is None or available(self.auth.env(provider)):
                return True
        return bool(env_api_key(provider, self.auth.env(provider)) or env_bearer_token(provider))

    def logged_in(self, provider: str) -> bool:
        """``provider`` has a stored login and a login method to use it."""
        return self.auth.has_oauth(provider) and self.account_login(provider) is not None

    def api_key(self, provider: str) -> str | None:
        """The provider's key: ``auth.json``, then its ``apiKey``, then its environment
        variables. Runs ``!command`` values; raises :class:`CommandError` when the
        provider's ``apiKey`` command fails."""
        key = self.auth.api_key(provider)
        if key:
            return key
        state = self._provider(provider)
        env = self.auth.env(provider)
        if state is not None and state.api_key:
            key = resolve_config_value(state.api_key, env)
            if key:
                return key
        return env_api_key(provider, env)

    # ------------------------------------------------------------------ logins

    async def oauth_credentials(
        self, provider: str, *, refresh: bool = True, min_validity_ms: int | None = None
    ) -> OAuthCredentials:
        """The stored login of ``provider``, refreshed through its login method when it
        expires within :data:`~pi_hookspecs.REFRESH_MARGIN_MS` (or ``min_validity_ms``).

        The refresh runs under the lock of ``auth.json`` and re-reads the file there: when
        another process refreshed meanwhile its tokens are used, and the new tokens are
        stored before the lock is released (a cancelled caller does not cancel them).
        Raises :class:`LoginRequiredError` (one line naming the provider and
        ``pi auth login <provider>``) when there is no usable login.
        """
        method = self.account_login(provider)
        stored = self.auth.oauth(provider)
        if stored is None:
            raise LoginRequiredError(provider, "has no stored login")
        if method is None:
            raise LoginRequiredError(provider, "has a stored login but no login method (is its plugin installed?)")
        margin = refresh_margin(min_validity_ms)
        if not refresh or not stored.expires_within(margin):
            return stored
        entry = await asyncio.shield(asyncio.ensure_future(self._refresh_locked(provider, method, margin)))
        credentials = OAuthCredentials.model_validate(entry)
        if min_validity_ms is not None and credentials.expires_within(margin):
            raise LoginRequiredError(provider, "login was refreshed but its token still expires too soon")
        return credentials

    async def login(
        self, provider: str, callbacks: LoginCallbacks, kind: str | None = None
    ) -> OAuthCredentials | ApiKeyCredentials:
        """Run ``provider``'s login method of ``kind`` (``"oauth"`` or ``"api_key"``)
        with ``callbacks`` and store the credentials it returns in ``auth.json`` (under
        the lock). Without ``kind``: the account login, or the API-key login of a
        provider without one; when the provider has both, ``callbacks.select`` asks
        which (as pi 1.6.0's ``/login`` does). Raises :class:`LoginRequiredError` when
        the provider has no such login; the method's own errors propagate."""
        account = self.account_login(provider)
        if kind is None:
            key_login = self.api_key_login(provider)
            if account is not None and key_login is not None:
                display = getattr(self._provider(provider), "display_name", None) or provider
                choice = await callbacks.select(
                    f"Select authentication method for {display}:",
                    [("oauth", account.label or "Sign in with an account"), ("api_key", "Sign in with an API key")],
                )
                kind = "api_key" if choice == "api_key" else "oauth"
            else:
                kind = "oauth" if account is not None else "api_key"
        if kind == "api_key":
            method = self.api_key_login(provider)
            if method is None:
                raise LoginRequiredError(provider, "has no API key login")
            keyed = await maybe_await(method.login(callbacks))
            if isinstance(keyed, str):
                keyed = ApiKeyCredentials(key=keyed)
            elif not isinstance(keyed, ApiKeyCredentials):
                keyed = ApiKeyCredentials.model_validate(keyed)
            await self._store(provider, keyed.to_json())
            return keyed
        if account is None:
            raise LoginRequiredError(provider, "has no account sign-in")
        credentials = await maybe_await(account.login(callbacks))
        if not isinstance(credentials, OAuthCredentials):
            credentials = OAuthCredentials.model_validate(credentials)
        await self._store(provider, credentials.to_json())
        return credentials

    async def _store(self, provider: str, entry: dict[str, Any]) -> None:

        async def store(_current: dict[str, Any] | None) -> dict[str, Any]:
            return entry

        await self.auth.modify_async(provider, store)

    async def _refresh_locked(self, provider: str, method: LoginMethod, margin: int) -> dict[str, Any]:
        async def update(current: dict[str, Any] | None) -> dict[str, Any] | None:
            if current is None or current.get("type") != "oauth":
                raise LoginRequiredError(provider, "was logged out")
            try:
                credentials = OAuthCredentials.model_validate(current)
            except ValueError:
                raise LoginRequiredError(provider, "has an invalid login in auth.json") from None
            if not credentials.expires_within(margin):
                return None  # another process refreshed it meanwhile
            try:
                if method.refresh is None:
                    raise LoginError("the login method cannot refresh")
                refreshed = await asyncio.wait_for(maybe_await(method.refresh(credentials)), REFRESH_TIMEOUT)
                if not isinstance(refreshed, OAuthCredentials):
                    refreshed = OAuthCredentials.model_validate(refreshed)
            except Exception as error:
                detail = str(error) or type(error).__name__
                raise LoginRequiredError(provider, f"login has expired and could not be refreshed ({detail})") from None
            return refreshed.to_json()

        try:
            entry = await self.auth.modify_async(provider, update)
        except AuthFileError as error:
            raise LoginRequiredError(provider, f"login cannot be refreshed: {error}") from None
        if entry is None:
            raise LoginRequiredError(provider, "was logged out")
        return entry

    async def _login_auth(self, model: Model) -> Login:
        """``(key, headers, base URL)`` a request sends with the provider's login."""
        credentials = await self.oauth_credentials(model.provider)
        method = self.account_login(model.provider)
        assert method is not None
        try:
            key = method.api_key(credentials) if method.api_key else credentials.access
            headers = dict(method.headers(credentials, model) or {}) if method.headers else {}
            base_url = method.base_url(credentials, model) if method.base_url else None
        except Exception as error:
            raise LoginRequiredError(model.provider, f"login cannot be used ({error})") from None
        return str(key), {str(k): str(v) for k, v in headers.items()}, base_url

    def _key_login_auth(self, model: Model) -> Login | None:
        """``(key, headers, base URL)`` of a stored API-key login whose registered
        method derives them (a server URL kept in its ``env``); ``None`` otherwise."""
        method = self._registered_key_login(model.provider)
        entry = self.auth.credential(model.provider)
        if method is None or entry is None or entry.get("type") != "api_key":
            return None
        if not (method.api_key or method.headers or method.base_url):
            return None
        try:
            credentials = ApiKeyCredentials.model_validate(entry)
        except ValueError:
            return None
        try:
            key = method.api_key(credentials) if method.api_key else None
            headers = dict(method.headers(credentials, model) or {}) if method.headers else {}
            base_url = method.base_url(credentials, model) if method.base_url else None
        except Exception as error:
            raise LoginRequiredError(model.provider, f"login cannot be used ({error})") from None
        return (str(key) if key else None), {str(k): str(v) for k, v in headers.items()}, base_url

    # ------------------------------------------------------------------ requests

    async def prepare(
        self, model: Model, options: StreamOptions, state: ProviderAuth | None
    ) -> tuple[Model, StreamOptions]:
        """``model`` and ``options`` of a request with its credentials and headers
        resolved (``!command`` values run off the event loop)."""
        login = None
        if not options.api_key and self.auth.has_oauth(model.provider) and self.account_login(model.provider):
            login = await self._login_auth(model)
        elif not options.api_key:
            login = self._key_login_auth(model)
        stored = (self.auth.credential(model.provider) or {}).get("key")
        values = [
            options.api_key or "",
            *(model.headers or {}).values(),
            (state.api_key if state else None) or "",
            stored if isinstance(stored, str) else "",
        ]
        if any(value.startswith("!") for value in values):
            prepared = await asyncio.to_thread(self._prepare_sync, model, options, state, login)
        else:
            prepared = self._prepare_sync(model, options, state, login)
        lender = self._sources.get(model.provider)
        return prepared if lender is None else await self._borrow(lender[1], *prepared)

    async def _borrow(
        self, lender: CredentialSource, model: Model, options: StreamOptions
    ) -> tuple[Model, StreamOptions]:
        """Apply what the provider's credential source lends this request."""
        request = CredentialRequest(
            provider=model.provider, model=model, api_key=options.api_key, env=self.auth.env(model.provider)
        )
        lent = await maybe_await(lender.resolve(request))
        if lent is None:
            return model, options
        if not isinstance(lent, RequestCredentials):
            lent = RequestCredentials.model_validate(lent)
        update: dict[str, Any] = {}
        if lent.api_key:
            update["api_key"] = lent.api_key
        if lent.headers:
            update["headers"] = {**options.headers, **lent.headers}
        if lent.extra:
            update["extra"] = {**options.extra, **lent.extra}
        return model, options.model_copy(update=update) if update else options

    def _prepare_sync(
        self, model: Model, options: StreamOptions, state: ProviderAuth | None, login: Login | None = None
    ) -> tuple[Model, StreamOptions]:
        env = self.auth.env(model.provider)
        headers: dict[str, str] = {}
        for name, value in (model.headers or {}).items():
            try:
                resolved = resolve_config_value(value, env)
            except CommandError as error:
                raise RuntimeError(f"The {name} header command of provider {model.provider} failed: {error}") from None
            if resolved:
                headers[name] = resolved
        update: dict[str, Any] = {}
        extra = dict(options.extra)
        key = options.api_key
        model_update: dict[str, Any] = {}
        if login is not None and not key:
            key = login[0] or ""
            headers.update(login[1])
            if login[2]:
                model_update["base_url"] = login[2]
        if not key:
            try:
                key = self.api_key(model.provider)
            except CommandError as error:
                raise RuntimeError(f"The apiKey command of provider {model.provider} failed: {error}") from None
            if not key:
                bearer = env_bearer_token(model.provider)
                if bearer:
                    key = bearer
                    extra["auth_header"] = True
        if state is not None and state.auth_header:
            extra["auth_header"] = True
            if key and model.api != "anthropic-messages":
                headers.setdefault("Authorization", f"Bearer {key}")
        if key:
            update["api_key"] = key
        if extra != options.extra:
            update["extra"] = extra
        request_options = options.model_copy(update=update) if update else options
        request_model = model.model_copy(update={**model_update, "headers": headers or None})
        return request_model, request_options


__all__ = ["API_KEY_LOGIN_NAMES", "REFRESH_TIMEOUT", "Credentials", "ProviderAuth", "plain_api_key_login"]
