"""Dynamic provider catalogues: a provider whose models come from a live service.

A provider plugin sets ``refresh_models`` on its :class:`~pi_hookspecs.ProviderDefinition`.
pi calls it with a :class:`CatalogueRefresh` in two phases, as pi 1.6.0 does:

1. **offline**, whenever a session's models are built (``allow_network`` false): the
   function restores what it can without the network, usually from ``refresh.stored``,
   the snapshot kept from an earlier run. Returning ``None`` here uses the stored
   snapshot's models as they are, so most functions simply return ``None`` offline.
2. **online**, when pi refreshes catalogues (``pi update --models``; in the background
   when interactive or RPC mode starts and when ``/model`` opens, unless ``--offline`` /
   ``PI_OFFLINE``; after ``/login``; when a plugin calls
   ``ctx.model_registry.refresh``): ``allow_network`` is true and the provider's
   credential is in ``api_key`` / ``env``.

A returned list of models replaces the models the provider registered (``None`` keeps
them). ``await refresh.publish(CatalogueSnapshot(models=...))`` stores a snapshot for
later offline starts in ``<agent dir>/models-store.json`` (pi 1.6.0's file and format,
one entry per provider); ``await refresh.publish(None)`` deletes it. A live service
(llama.cpp) may skip persisting; a remote catalogue keeps one for offline starts.
"""

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import Field, PrivateAttr

from ._base import PiModel, now_ms
from .llm import Model
from .signals import AbortSignal


class CatalogueSnapshot(PiModel):
    """A provider's catalogue as pi keeps it between runs: its ``models`` and when they
    were fetched (``checked_at``, Unix milliseconds). Extra fields a plugin sets are
    stored as they are."""

    models: list[Model] = Field(default_factory=list)
    checked_at: int = Field(default_factory=now_ms)


class CatalogueRefresh(PiModel):
    """What a provider's ``refresh_models`` function receives for one phase.

    * ``provider`` - the provider id;
    * ``stored`` - the snapshot kept from an earlier refresh (``None``: none);
    * ``allow_network`` - whether this phase may use the network (see the module);
    * ``force`` - the user asked for it (``pi update --models``): skip a cache of your own;
    * ``api_key`` - the provider's key: online the resolved one (``None`` without);
      offline only a key stored with the login as it is sent (no ``!command`` runs);
    * ``env`` - the values stored with the provider's login in ``auth.json`` (both
      phases: a login's server URL, say; ``{}`` without one);
    * ``base_url`` - the provider's base URL as configured (``models.json`` included);
    * ``signal`` - pass it to blocking I/O: an aborted refresh is dropped.
    """

    provider: str
    stored: CatalogueSnapshot | None = None
    allow_network: bool = False
    force: bool = False
    api_key: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    base_url: str | None = None
    signal: AbortSignal | None = Field(default=None, exclude=True)
    _publish: Callable[[CatalogueSnapshot | None], Awaitable[bool]] | None = PrivateAttr(default=None)

    async def publish(self, snapshot: "CatalogueSnapshot | dict[str, Any] | None") -> bool:
        """Store ``snapshot`` for later offline starts (``None`` deletes the stored one).
        Returns ``False`` when this refresh was superseded by a newer one or aborted:
        nothing was written then."""
        if self._publish is None:
            return False
        if isinstance(snapshot, dict):
            snapshot = CatalogueSnapshot.model_validate(snapshot)
        return await self._publish(snapshot)


RefreshModels = Callable[[CatalogueRefresh], Any]
"""``refresh_models(refresh) -> list[Model | dict] | None``, sync or async."""


class CatalogueRefreshResult(PiModel):
    """What ``await ctx.model_registry.refresh(...)`` reports: ``errors`` - one message
    per provider whose refresh failed (its models stay as they were); ``aborted`` - the
    ``signal`` fired before every refresh was done (pi stopped waiting)."""

    errors: dict[str, str] = Field(default_factory=dict)
    aborted: bool = False


class ProviderAuth(PiModel):
    """A provider's credentials as a request would use them (``await
    ctx.model_registry.get_provider_auth(provider)``): the resolved ``api_key``
    (``!command`` and ``$VAR`` values already run; ``None`` when the provider takes
    none), the ``headers`` pi adds, the ``base_url`` requests go to (a login's own URL
    included), and ``env`` - the values stored with the provider's ``auth.json`` entry
    (``/login`` puts a server URL there, for example)."""

    api_key: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    base_url: str | None = None
    env: dict[str, str] = Field(default_factory=dict)


__all__ = ["CatalogueRefresh", "CatalogueRefreshResult", "CatalogueSnapshot", "ProviderAuth", "RefreshModels"]
