"""Credentials a plugin lends to requests: tokens pi cannot find in a file or a variable.

Some providers authenticate with credentials that need a library of their own to
obtain: Google Cloud's Application Default Credentials (``google-auth``), a company's
token broker, a short-lived token minted from a workload identity. A plugin that can
obtain such a credential registers a :class:`CredentialSource` through
``register_providers``; pi's own wire APIs then send what it lends, so the plugin
does not have to re-implement the provider's API::

    from pi_hookspecs import CredentialSource, RequestCredentials, hookimpl

    async def resolve(request):
        if request.api_key:                 # the user configured a key: use it
            return None
        token = await my_broker.token()     # the plugin's own library, cached by it
        return RequestCredentials(headers={"Authorization": f"Bearer {token}"})

    @hookimpl
    def register_providers(register):
        register(CredentialSource(provider="google-vertex", resolve=resolve,
                                  available=lambda env: my_broker.configured()))

``pluggable-pi-vertex`` lends Google Cloud access tokens to the built-in ``google-vertex`` API
this way.
"""

from collections.abc import Callable
from typing import Any

from pydantic import Field

from ._base import PiModel
from .llm import Model


class CredentialRequest(PiModel):
    """What a :class:`CredentialSource` is asked with, once per request."""

    provider: str
    """The provider of the request's model."""
    model: Model
    """The model the request goes to (with the provider's resolved headers)."""
    api_key: str | None = None
    """The key pi found for the provider, if any: ``--api-key``, ``auth.json``, the
    provider's ``apiKey`` in ``models.json``, or its environment variables."""
    env: dict[str, str] = Field(default_factory=dict)
    """The ``env`` values stored with the provider's ``auth.json`` entry; they take
    priority over the process environment (``GOOGLE_CLOUD_PROJECT`` …)."""


class RequestCredentials(PiModel):
    """What a :class:`CredentialSource` lends one request.

    * ``api_key`` replaces the request's key (sent the way the model's API sends keys);
    * ``headers`` are added to the request's headers (they win over the model's), e.g.
      ``{"Authorization": "Bearer …"}``;
    * ``extra`` is merged into ``StreamOptions.extra``: settings the model's API reads
      (``google-vertex`` reads ``project`` and ``location``).
    """

    api_key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    extra: dict[str, Any] = Field(default_factory=dict)


CredentialResolver = Callable[[CredentialRequest], Any]
"""``resolve(request) -> RequestCredentials | None`` (sync or async)."""


class CredentialSource(PiModel):
    """A source of credentials for the models of ``provider``, registered through
    ``register_providers``.

    ``resolve(request)`` is called before every request to one of the provider's
    models, with the :class:`CredentialRequest` (the key pi found, if any). It returns
    the :class:`RequestCredentials` to send, or ``None`` to send the request as pi
    resolved it (then a request without a key fails as usual, naming the provider).
    It may be a coroutine function; a plain function runs on the event loop, so it
    must not block: do network I/O (a token refresh) in a thread
    (``asyncio.to_thread``) or asynchronously, and cache tokens until they expire —
    pi asks again for every request. An exception fails the request; its message is
    what the user sees, so say what to do (``run gcloud auth application-default
    login``).

    ``available(env)`` (``env``: the provider's ``auth.json`` ``env`` values) says,
    without network I/O, whether the source could lend a credential now: a provider
    counts as configured when it does (``pi --list-models``, the default model). Without
    it, a registered source makes its provider count as configured.

    A provider has one source: the first plugin (in load order) to register one for
    it keeps it.
    """

    provider: str
    resolve: CredentialResolver = Field(exclude=True)
    available: Callable[[dict[str, str]], bool] | None = Field(default=None, exclude=True)


__all__ = ["CredentialRequest", "CredentialResolver", "CredentialSource", "RequestCredentials"]
