"""``pi update --models``: refresh the dynamic model catalogues now.

The providers whose plugins supply ``refresh_models`` (``register_providers``) are asked
online, with ``force``: what they return replaces their models and what they publish is
stored in ``models-store.json`` for offline starts. pi's own catalogue is part of pi (a
newer pi brings a newer one: ``pi update --self``). As in pi 1.6.0 this explicit command
refreshes even with ``PI_OFFLINE`` set, and gives up after 15 seconds.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import typer

from pi_hookspecs import AbortController

REFRESH_TIMEOUT_SECONDS = 15.0

BUILTIN_NOTE = (
    "pi's own model catalogue is built into this pi (a newer pi brings a newer one: pi update --self); "
    "custom models are read from models.json at every start."
)


async def _refresh(registry: object, timeout: float) -> tuple[dict[str, str], bool]:
    from ..ai import ModelRegistry

    assert isinstance(registry, ModelRegistry)
    controller = AbortController()
    task = asyncio.ensure_future(registry.refresh_catalogues(allow_network=True, force=True, signal=controller.signal))
    try:
        return await asyncio.wait_for(asyncio.shield(task), timeout), False
    except TimeoutError:
        controller.abort()
        task.cancel()
        return {}, True


def update_models(timeout: float = REFRESH_TIMEOUT_SECONDS) -> int:
    """Refresh every dynamic catalogue; prints one line per outcome, returns the exit status."""
    from .auth_cmd import load_registry

    registry = load_registry()
    providers = registry.dynamic_providers()
    if not providers:
        typer.echo(f"No plugin supplies a dynamic model catalogue. {BUILTIN_NOTE}")
        return 0
    # a provider without credentials (or, for a server such as llama.cpp, without its
    # address) is not asked online: saying it was refreshed would be untrue
    unasked = [p for p in providers if not registry.has_auth(p)]
    errors, timed_out = asyncio.run(_refresh(registry, timeout))
    if timed_out:
        typer.echo(f"pi update: the model catalogue refresh timed out after {timeout:g} s", err=True)
        return 1
    if errors:
        typer.echo(f"pi update: could not refresh model catalogues: {'; '.join(errors.values())}", err=True)
    refreshed = [p for p in providers if p not in errors and p not in unasked]
    if refreshed:
        typer.echo(f"Model catalogues refreshed: {', '.join(refreshed)}")
    if unasked:
        typer.echo(f"Not asked (no credentials or server configured; see `pi auth login`): {', '.join(unasked)}")
    return 1 if errors else 0


class SharedRefresh:
    """One online refresh of a session's dynamic catalogues at a time, shared by whoever
    asks meanwhile (the start of interactive/RPC mode, the ``/model`` picker), as pi 1.6.0
    shares them: each caller waits with its own time limit; the refresh is aborted when
    the last waiter gives up, and when the session is disposed."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self._task: asyncio.Task[dict[str, str]] | None = None
        self._controller: AbortController | None = None
        self._waiters = 0

    def _start(self) -> asyncio.Task[dict[str, str]]:
        if self._task is None or self._task.done():
            controller = self._controller = AbortController()
            work = self.session.models.refresh_catalogues(allow_network=True, signal=controller.signal)
            self._task = self.session.spawn_owned(work, controller.abort)
        return self._task

    async def refresh(self, timeout: float = REFRESH_TIMEOUT_SECONDS) -> tuple[dict[str, str], bool]:
        """Wait for the shared refresh: ``(errors by provider, timed out)``. A refresh that
        fails as a whole counts as one error under ``"*"``."""
        task = self._start()
        controller = self._controller
        self._waiters += 1
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout), False
        except TimeoutError:
            return {}, True
        except asyncio.CancelledError:
            if task.cancelled():
                return {}, True  # the session was disposed
            raise
        except Exception as exc:
            return {"*": f"{type(exc).__name__}: {exc}"}, False
        finally:
            self._waiters -= 1
            if self._waiters == 0 and not task.done() and controller is not None:
                controller.abort()
                task.cancel()


_shared: weakref.WeakKeyDictionary[Any, SharedRefresh] = weakref.WeakKeyDictionary()


def shared_refresh(session: Any) -> SharedRefresh:
    """The :class:`SharedRefresh` of ``session``."""
    found = _shared.get(session)
    if found is None:
        found = _shared[session] = SharedRefresh(session)
    return found


def background_refresh(session: Any) -> None:
    """Refresh ``session``'s dynamic catalogues online in the background (15 s at most;
    a failure keeps the models as they were, silently, as pi 1.6.0). Skipped offline.
    Disposing of the session aborts it and cancels the task."""
    from ..ai.catalogue_snapshots import network_disabled

    if network_disabled():
        return

    async def refresh() -> None:
        await shared_refresh(session).refresh(REFRESH_TIMEOUT_SECONDS)

    session.spawn_owned(refresh(), lambda: None)  # the shared refresh is aborted on its own


__all__ = ["SharedRefresh", "background_refresh", "shared_refresh", "update_models"]
