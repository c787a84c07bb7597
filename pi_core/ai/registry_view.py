"""``ctx.model_registry``: what plugins see of a session's :class:`ModelRegistry
<pi_core.ai.registry.ModelRegistry>` (the contract's
:class:`~pi_hookspecs.context.ModelRegistryView`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pi_hookspecs import (
    AbortSignal,
    CatalogueRefreshResult,
    Model,
    ProviderAuth,
    StreamOptions,
)

if TYPE_CHECKING:
    from .registry import ModelRegistry

_TYPES = ("chat", "classifier", "image")


def _check_type(model_type: str) -> str:
    if model_type not in _TYPES:
        raise ValueError(f"unknown model type {model_type!r}: expected chat, classifier or image")
    return model_type


class RegistryView:
    """Lookups and calls of one model registry, by the contract's names."""

    __slots__ = ("_registry", "classify", "generate_images")

    def __init__(self, registry: ModelRegistry) -> None:
        self._registry = registry
        # the contract's calls are the registry's own, by the same names and signatures
        self.classify = registry.classify
        self.generate_images = registry.generate_images

    def find(self, provider: str, model_id: str) -> Model | None:
        return self._registry.get(provider, model_id)

    def get_all(self) -> list[Model]:
        return self._registry.models()

    def get_available(self) -> list[Model]:
        return self._registry.available()

    def get_models_of_type(self, type: str, provider: str | None = None) -> list[Model]:
        return self._registry.models_of_type(_check_type(type), provider)

    def get_available_of_type(self, type: str, provider: str | None = None) -> list[Model]:
        return self._registry.available_of_type(_check_type(type), provider)

    def get_model_of_type(self, type: str, provider: str, model_id: str) -> Model | None:
        return self._registry.get_of_type(_check_type(type), provider, model_id)

    def find_of_type(self, type: str, provider: str, model_id: str) -> Model | None:
        return self.get_model_of_type(type, provider, model_id)

    async def refresh(
        self,
        *,
        providers: Sequence[str] | None = None,
        allow_network: bool | None = None,
        signal: AbortSignal | None = None,
    ) -> CatalogueRefreshResult:
        """Refresh the registry's dynamic catalogues (``allow_network`` ``None``: unless pi
        is offline); an aborted ``signal`` stops the waiting - the refresh itself gets it too."""
        from .catalogue_snapshots import network_disabled

        online = (not network_disabled()) if allow_network is None else allow_network
        work = asyncio.ensure_future(
            self._registry.refresh_catalogues(allow_network=online, providers=providers, signal=signal)
        )
        if signal is None:
            return CatalogueRefreshResult(errors=await work)
        if signal.aborted:
            work.cancel()
            return CatalogueRefreshResult(aborted=True)
        stopped = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({work, stopped}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            work.cancel()
            raise
        finally:
            stopped.cancel()
        if not work.done():
            work.cancel()
            return CatalogueRefreshResult(aborted=True)
        return CatalogueRefreshResult(errors=work.result(), aborted=signal.aborted)

    async def get_provider_auth(self, provider: str) -> ProviderAuth | None:
        """``provider``'s credentials as a request would use them, without a model (pi
        1.6.0's ``getProviderAuth``): ``None`` when the provider is unknown or has none."""
        from pi_hookspecs import VIRTUAL_MODEL_API

        registry = self._registry
        state = next((p for p in registry.provider_states() if p.name == provider), None)
        if state is None or not registry.has_auth(provider):
            return None
        first = next((i for i, e in state.models.items() if e.get("api") != VIRTUAL_MODEL_API), None)
        model = registry.get(provider, first) if first is not None else None
        if model is None:
            model = Model(
                id=provider,
                provider=provider,
                api=state.api or "",
                base_url=state.base_url or "",
                headers=dict(state.headers) or None,
            )
        request_model, options = await registry.prepare_request(model, StreamOptions())
        headers = {k: v for k, v in {**(request_model.headers or {}), **(options.headers or {})}.items() if v}
        signed = any(k.lower() in ("authorization", "x-api-key") for k in headers)
        if state.needs_auth and not options.api_key and not signed:
            return None  # configured, but nothing resolved (an unset $VAR, an empty !command)
        return ProviderAuth(
            api_key=options.api_key or None,
            headers={k: v for k, v in headers.items() if isinstance(v, str)},
            base_url=request_model.base_url or None,
            env=dict(registry.auth.env(provider)),
        )

    def __repr__(self) -> str:
        return f"<ModelRegistryView of {len(self._registry.providers())} providers>"


__all__ = ["RegistryView"]
