"""Logins: how the users of a provider sign in (a subscription's OAuth, a device code,
an organisation's own single sign-on).

A plugin registers a :class:`LoginMethod` through ``register_providers``, next to the
provider it signs in to::

    from pi_hookspecs import LoginMethod, OAuthCredentials, hookimpl

    async def login(callbacks):
        callbacks.open_url("https://sso.example.com/device", "Sign in with your badge")
        code = await callbacks.prompt("Paste the code the page shows")
        tokens = await exchange(code)                   # the plugin's own HTTP calls
        return OAuthCredentials(access=tokens["access_token"], refresh=tokens["refresh_token"],
                                expires=tokens["expires_at_ms"])

    async def refresh(credentials):
        ...                                             # a new OAuthCredentials

    @hookimpl
    def register_providers(register):
        register({"name": "acme", "baseUrl": "https://llm.acme.example/v1", "api": "openai-completions",
                  "models": [...]})
        register(LoginMethod(provider="acme", name="ACME SSO", login=login, refresh=refresh))

``pi auth login acme`` and ``/login acme`` then run ``login`` with callbacks that talk
to the user, and store what it returns in ``auth.json`` as
``{"type": "oauth", "access": ..., "refresh": ..., "expires": ...}`` (plus any other
fields the credentials carry). Before each request to the provider's models pi reads
the stored credentials; when they expire within :data:`REFRESH_MARGIN_MS` it calls
``refresh`` while holding the lock of ``auth.json`` (another pi process that wants to
refresh the same login waits and then uses the new tokens) and stores the result.
The request is then sent with ``api_key(credentials)`` (the access token by default)
and, when given, the extra ``headers`` and the ``base_url`` the login calls for.

A login of ``kind="api_key"`` asks for a key (and whatever else the provider needs,
e.g. a server's URL) instead of signing in with an account: its ``login`` returns
:class:`ApiKeyCredentials`, stored as pi 1.6.0 stores keys,
``{"type": "api_key", "key": ..., "env": {...}}``, and it needs no ``refresh``::

    async def login(callbacks):
        url = await callbacks.prompt("Gateway URL", placeholder="https://llm.acme.example")
        key = await callbacks.prompt("API key", secret=True)
        return ApiKeyCredentials(key=key, env={"ACME_URL": url})

    register(LoginMethod(provider="acme", name="ACME API key", kind="api_key", login=login,
                         base_url=lambda credentials, model: credentials.env["ACME_URL"]))

A provider may have one login of each kind; ``pi auth login <provider>`` runs the
account login (``--api-key``: the API-key one), ``/login`` asks which when both exist.
Every provider of the registry that takes a key has a plain API-key login without
registering one (it asks for the key).
"""

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import Field, field_validator, model_validator

from ._base import PiModel
from .llm import Model
from .signals import AbortSignal

REFRESH_MARGIN_MS = 5 * 60 * 1000
"""Credentials expiring within this many milliseconds are refreshed before a request
(as pi 1.6.0 does)."""


class OAuthCredentials(PiModel):
    """An OAuth login as ``auth.json`` stores it.

    ``access`` is the token requests are sent with, ``refresh`` the token that gets a
    new one, ``expires`` the access token's expiry in Unix milliseconds. Fields of a
    login's own (``accountId``, ``enterpriseUrl`` …) are kept as they are: read them
    with ``credentials.model_extra`` or ``getattr(credentials, "accountId")``.
    """

    type: Literal["oauth"] = "oauth"
    access: str
    refresh: str
    expires: int

    @field_validator("expires", mode="before")
    @classmethod
    def _whole_milliseconds(cls, value: Any) -> Any:
        return int(value) if isinstance(value, float) else value

    def expires_within(self, milliseconds: int = REFRESH_MARGIN_MS, *, now: int | None = None) -> bool:
        """Whether the access token expires within ``milliseconds`` from now."""
        current = int(time.time() * 1000) if now is None else now
        return current + milliseconds >= self.expires

    def extra(self, name: str, default: Any = None) -> Any:
        """A field of the login's own (``accountId``, ``enterpriseUrl`` …)."""
        return (self.model_extra or {}).get(name, default)

    def to_json(self) -> dict[str, Any]:
        """The ``auth.json`` entry: ``type``, ``access``, ``refresh``, ``expires`` and the
        login's own fields, spelled as given."""
        return self.model_dump(by_alias=True, exclude_none=True)


class ApiKeyCredentials(PiModel):
    """An API-key login as ``auth.json`` stores it (pi 1.6.0's format).

    ``key`` is the key requests are sent with (``None``: the provider needs none, or
    takes it from elsewhere); ``env`` holds the provider's own settings the login
    asked for (a server URL, an account id), which take priority over the process's
    environment variables of the same name. A ``key`` starting with ``!`` is a command
    whose output is the key.
    """

    type: Literal["api_key"] = "api_key"
    key: str | None = None
    env: dict[str, str] | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``auth.json`` entry: ``type``, ``key`` and ``env`` when set."""
        return self.model_dump(by_alias=True, exclude_none=True)


@runtime_checkable
class LoginCallbacks(Protocol):
    """How a login talks to the user: pi passes one to :attr:`LoginMethod.login`.

    ``pi auth login`` implements it on the terminal, ``/login`` in the interactive UI;
    a test can implement it in a few lines. ``prompt`` and ``select`` are coroutines;
    a login that no longer needs a pending prompt (the browser's redirect arrived
    first) cancels the task awaiting it.
    """

    signal: AbortSignal
    """Aborted when the user gives up (Ctrl+C, Escape): stop waiting and raise."""

    def open_url(self, url: str, instructions: str | None = None) -> None:
        """Show ``url`` (and open it in a browser, unless the user asked for none)."""
        ...

    async def prompt(self, message: str, *, placeholder: str | None = None, secret: bool = False) -> str:
        """Ask the user for text: a pasted code or redirect URL, a domain, a key
        (``secret``: not echoed). Raises when the user cancels."""
        ...

    async def select(self, message: str, options: Sequence[tuple[str, str]]) -> str:
        """Let the user choose one of ``(id, label)`` options; returns the id. The
        first option is the default (a browser sign-in before a headless one):
        ``--no-browser`` picks another."""
        ...

    def progress(self, message: str) -> None:
        """Report what the login is doing."""
        ...

    def device_code(self, user_code: str, verification_uri: str, *, expires_in: float | None = None) -> None:
        """Ask the user to open ``verification_uri`` and enter ``user_code``."""
        ...


LoginFunction = Callable[[LoginCallbacks], Any]
"""``login(callbacks) -> OAuthCredentials`` (``ApiKeyCredentials`` for an API-key
login; sync or async; a dict is accepted)."""

RefreshFunction = Callable[[OAuthCredentials], Any]
"""``refresh(credentials) -> OAuthCredentials`` (sync or async; a dict is accepted).
Raise :class:`LoginError` when the login cannot be refreshed (revoked, expired)."""


class LoginError(Exception):
    """A login or a refresh failed; the message is shown to the user."""


class LoginMethod(PiModel):
    """A way to sign in to ``provider``, registered through ``register_providers``.

    * ``login(callbacks)`` runs the sign-in (see :class:`LoginCallbacks`) and returns
      the :class:`OAuthCredentials` to store (``kind="api_key"``: the
      :class:`ApiKeyCredentials`);
    * ``refresh(credentials)`` returns new credentials for expiring ones (required for
      an account login; an API-key login has none);
    * ``api_key(credentials)`` is what requests send as the provider's key (default:
      the access token);
    * ``headers(credentials, model)`` adds request headers, ``base_url(credentials,
      model)`` replaces the endpoint (``None``: the model's own), and
      ``models(credentials, models)`` narrows the provider's models to those the
      login may use.

    Each function may be sync or async. ``name`` is shown in ``/login`` and
    ``pi auth status`` (e.g. "Anthropic (Claude Pro/Max)"); ``subscription`` marks a
    login backed by a paid plan rather than metered API usage; ``label`` is the
    option that starts it when ``/login`` asks how to sign in (e.g. "Sign in with
    ChatGPT"). ``kind`` is ``"oauth"`` (an account) or ``"api_key"``; for an API-key
    login ``api_key``, ``headers`` and ``base_url`` receive the stored
    :class:`ApiKeyCredentials` (``api_key`` defaults to its ``key``). A provider has one
    login method of each kind: the first plugin (in load order) to register one keeps
    it, and a plugin's method replaces pi's own.
    """

    provider: str
    name: str
    login: LoginFunction = Field(exclude=True)
    refresh: RefreshFunction | None = Field(default=None, exclude=True)
    api_key: Callable[[Any], Any] | None = Field(default=None, exclude=True)
    headers: Callable[[Any, Model], Any] | None = Field(default=None, exclude=True)
    base_url: Callable[[Any, Model], Any] | None = Field(default=None, exclude=True)
    models: Callable[[Any, list[Model]], Any] | None = Field(default=None, exclude=True)
    subscription: bool = False
    kind: Literal["oauth", "api_key"] = "oauth"
    label: str | None = None

    @model_validator(mode="after")
    def _account_logins_refresh(self) -> "LoginMethod":
        if self.kind == "oauth" and self.refresh is None:
            raise ValueError("an account (OAuth) login method needs refresh(credentials)")
        return self


__all__ = [
    "REFRESH_MARGIN_MS",
    "ApiKeyCredentials",
    "LoginCallbacks",
    "LoginError",
    "LoginFunction",
    "LoginMethod",
    "OAuthCredentials",
    "RefreshFunction",
]
