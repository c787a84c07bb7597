"""``<agent dir>/models-store.json``: the stored snapshots of dynamic provider catalogues.

pi 1.6.0 keeps them in the same file and format, one entry per provider id::

    {"llama.cpp": {"models": [{"id": "qwen3", "provider": "llama.cpp", ...}], "checkedAt": 1767225600000}}

Entries are written by a provider's refresh (``await refresh.publish(snapshot)``) and
read back at every start, so a provider's models are known offline. Every write is a
read-modify-write under the file's cross-process lock (the directory
``models-store.json.lock``, which pi 1.6.0 takes too) and replaces the file atomically;
other providers' entries are kept as they are. A malformed file reads as empty (one
message in :attr:`ModelsStore.error`) and is never overwritten.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

from pi_hookspecs import AbortSignal, CatalogueRefresh, CatalogueSnapshot, Model, maybe_await

from .._fs import DirectoryLock, atomic_write

STORE_FILE = "models-store.json"
LOCK_STALE_SECONDS = 30.0
LOCK_TIMEOUT_SECONDS = 10.0


class ModelsStoreError(Exception):
    """The store could not be read or written (one line naming the file)."""


class ModelsStore:
    """The snapshots file; reads are cached until the file changes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.error: str | None = None
        self._stamp: tuple[int, int] | None = None
        self._data: dict[str, Any] = {}

    def _read(self) -> dict[str, Any]:
        try:
            stat = self.path.stat()
        except OSError:
            self._stamp, self._data, self.error = None, {}, None
            return self._data
        stamp = (stat.st_mtime_ns, stat.st_size)
        if stamp == self._stamp:
            return self._data
        self._stamp = stamp
        self._data, self.error = self._parse(self.path.read_text(encoding="utf-8"))
        return self._data

    def _parse(self, text: str) -> tuple[dict[str, Any], str | None]:
        text = text.removeprefix("\ufeff")
        if not text.strip():
            return {}, None
        try:
            data = json.loads(text)
        except ValueError as error:
            return {}, f"{self.path}: invalid JSON: {error}"
        if not isinstance(data, dict):
            return {}, f"{self.path}: expected an object of providers, got {type(data).__name__}"
        return data, None

    def read(self, provider: str) -> CatalogueSnapshot | None:
        """The stored snapshot of ``provider`` (only its own models), ``None`` when there
        is none or it cannot be read."""
        try:
            entry = self._read().get(provider)
        except OSError as error:
            self.error = f"{self.path}: {error.strerror or error}"
            return None
        if not isinstance(entry, dict):
            return None
        models = entry.get("models")
        kept = [
            m
            for m in (models if isinstance(models, list) else [])
            if isinstance(m, dict) and isinstance(m.get("id"), str) and m.get("provider", provider) == provider
        ]
        try:
            return CatalogueSnapshot.model_validate({**entry, "models": kept})
        except ValueError:
            return None

    def providers(self) -> list[str]:
        """The providers with a stored snapshot."""
        try:
            return list(self._read())
        except OSError:
            return []

    def write(self, provider: str, snapshot: CatalogueSnapshot | None) -> None:
        """Store ``snapshot`` as ``provider``'s entry (``None`` deletes it). Raises
        :class:`ModelsStoreError`."""
        lock = DirectoryLock(self.path, stale=LOCK_STALE_SECONDS, timeout=LOCK_TIMEOUT_SECONDS)
        try:
            with lock:
                try:
                    text = self.path.read_text(encoding="utf-8")
                except FileNotFoundError:
                    text = ""
                data, error = self._parse(text)
                if error is not None:
                    raise ModelsStoreError(f"{error}; not overwritten")
                if snapshot is None:
                    if provider not in data:
                        return
                    data.pop(provider)
                else:
                    entry = snapshot.to_json()
                    entry["models"] = [{**model, "provider": provider} for model in entry.get("models", [])]
                    data[provider] = entry
                atomic_write(self.path, json.dumps(data, indent=2) + "\n")
        except ModelsStoreError:
            raise
        except Exception as exc:  # the lock timed out, the folder is not writable
            raise ModelsStoreError(f"{self.path}: {exc}") from None
        self._stamp = None


Entries = tuple[dict[str, dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]
"""A refreshed catalogue: chat model entries by id, classifier and image ones by ``(type, id)``."""


class DynamicCatalogues:
    """A registry's dynamic catalogues: what each provider's last refresh returned
    (``models``: provider -> model entries, applied by :func:`apply_dynamic`), the
    generation of each provider's latest refresh, and the snapshots file."""

    def __init__(self, store_path: Callable[[], Path]) -> None:
        self.models: dict[str, Entries] = {}
        self._generations: dict[str, int] = {}
        self._store_path = store_path
        self._store: ModelsStore | None = None

    @property
    def store(self) -> ModelsStore:
        """``models-store.json`` (beside ``models.json``)."""
        path = self._store_path()
        if self._store is None or self._store.path != path:
            self._store = ModelsStore(path)
        return self._store

    def begin(self, provider: str) -> int:
        """Start a refresh of ``provider``: its generation (an older refresh is superseded)."""
        generation = self._generations.get(provider, 0) + 1
        self._generations[provider] = generation
        return generation

    def current(self, provider: str, generation: int) -> bool:
        return self._generations.get(provider, 0) == generation


class CatalogueHost(Protocol):
    """What refreshing needs of the model registry (:class:`~pi_core.ai.ModelRegistry`)."""

    @property
    def catalogues(self) -> DynamicCatalogues: ...

    @property
    def auth(self) -> Any: ...

    def provider_states(self) -> list[Any]: ...

    def has_auth(self, provider: str) -> bool: ...

    def api_key(self, provider: str) -> str | None: ...

    async def oauth_credentials(self, provider: str) -> Any: ...

    def catalogues_changed(self) -> None: ...


def network_disabled() -> bool:
    """``--offline`` / ``PI_OFFLINE``: no automatic network activity (catalogue refreshes)."""
    return os.environ.get("PI_OFFLINE", "").strip().lower() not in ("", "0", "false", "no")


def apply_dynamic(providers: dict[str, Any], dynamic: dict[str, Entries]) -> None:
    """Give each provider the models its last refresh returned: they replace the models
    the provider was registered with, of every type (``models.json`` applies on top)."""
    for name, (chat, typed) in dynamic.items():
        provider = providers.get(name)
        if provider is not None and provider.refresh_models is not None:
            provider.models = dict(chat)
            provider.typed = dict(typed)


def _entries(models: Any) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]:
    """The registry entries of what a refresh returned: chat models by id, classifier and
    image models by ``(type, id)``; raises ``ValueError`` naming the bad item."""
    if not isinstance(models, list | tuple):
        raise ValueError(f"refresh_models returned {type(models).__name__}, expected a list of models or None")
    chat: dict[str, dict[str, Any]] = {}
    typed: dict[tuple[str, str], dict[str, Any]] = {}
    for index, item in enumerate(models):
        try:
            model = item if isinstance(item, Model) else Model.model_validate(item)
        except Exception as exc:
            raise ValueError(f"refresh_models returned an invalid model at index {index}: {exc}") from None
        entry = model.model_dump(exclude_none=True, exclude={"provider"})
        kind = getattr(model, "model_type", "chat")
        if kind != "chat":
            typed[(kind, model.id)] = entry
        else:
            entry.pop("type", None)
            chat[model.id] = entry
    return chat, typed


async def refresh_catalogues(
    registry: CatalogueHost,
    *,
    allow_network: bool,
    force: bool = False,
    providers: Iterable[str] | None = None,
    signal: AbortSignal | None = None,
) -> dict[str, str]:
    """Run the ``refresh_models`` of every dynamic provider (or of ``providers``): the
    offline phase, then - with ``allow_network`` and credentials for the provider - the
    online one. Returns one message per provider whose refresh failed; its models stay
    as they were. Refreshes of different providers run concurrently; a newer refresh of
    a provider supersedes an older one (whose ``publish`` then returns ``False``)."""
    wanted = set(providers) if providers is not None else None
    targets = [
        state
        for state in registry.provider_states()
        if state.refresh_models is not None and (wanted is None or state.name in wanted)
    ]
    if not targets:
        return {}
    outcomes = await asyncio.gather(
        *(_refresh_provider(registry, state, allow_network, force, signal) for state in targets)
    )
    errors = {state.name: error for state, (error, _) in zip(targets, outcomes, strict=True) if error}
    if any(changed for _, changed in outcomes):
        registry.catalogues_changed()
    return errors


async def _credential(registry: CatalogueHost, provider: str) -> tuple[str | None, dict[str, str]]:
    env = dict(registry.auth.env(provider))
    try:
        key = await asyncio.to_thread(registry.api_key, provider)
    except Exception:
        key = None
    if key is None and registry.auth.has_oauth(provider):
        try:
            key = (await registry.oauth_credentials(provider)).access
        except Exception:
            key = None
    return key, env


def _stored_credential(registry: CatalogueHost, provider: str) -> tuple[str | None, dict[str, str]]:
    entry = registry.auth.credential(provider) or {}
    raw = entry.get("key") if entry.get("type") == "api_key" else None
    key = None
    if isinstance(raw, str) and raw.strip() and not raw.strip().startswith("!"):
        try:
            key = registry.auth.api_key(provider)
        except Exception:
            key = None
    return key, dict(registry.auth.env(provider))


async def _refresh_provider(
    registry: CatalogueHost, state: Any, allow_network: bool, force: bool, signal: AbortSignal | None
) -> tuple[str | None, bool]:
    name = state.name
    catalogues = registry.catalogues
    generation = catalogues.begin(name)
    store = catalogues.store

    def current() -> bool:
        return catalogues.current(name, generation) and not (signal is not None and signal.aborted)

    async def publish(snapshot: CatalogueSnapshot | None) -> bool:
        if not current():
            return False
        await asyncio.to_thread(store.write, name, snapshot)
        return current()

    changed = False
    phases = [False, True] if allow_network else [False]
    for online in phases:
        if online and not registry.has_auth(name):
            break  # a provider without credentials is not asked (as pi 1.6.0)
        stored = store.read(name)
        # the stored login in both phases (as pi 1.6.0): offline its env and a key stored as
        # it is sent (no !command runs before the network may be used)
        key, env = await _credential(registry, name) if online else _stored_credential(registry, name)
        refresh = CatalogueRefresh.model_construct(
            provider=name,
            stored=stored,
            allow_network=online,
            force=force and online,
            api_key=key,
            env=env,
            base_url=state.base_url,
            signal=signal,
        )
        refresh._publish = publish
        try:
            result = await maybe_await(state.refresh_models(refresh))
            if not current():
                return None, changed
            if result is None:
                if online or stored is None:
                    continue
                result = stored.models  # offline: start from the stored snapshot
            catalogues.models[name] = _entries(result)
            changed = True
        except ModelsStoreError as exc:
            return f"{name}: {exc}", changed
        except Exception as exc:
            if signal is not None and signal.aborted:
                return None, changed
            detail = str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"
            return f"{name}: {detail}", changed
    return None, changed


__all__ = [
    "STORE_FILE",
    "DynamicCatalogues",
    "ModelsStore",
    "ModelsStoreError",
    "apply_dynamic",
    "network_disabled",
    "refresh_catalogues",
]
