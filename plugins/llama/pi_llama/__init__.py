"""pluggable-pi-llama: the llama.cpp router as pi's ``llama.cpp`` provider, and ``/llama``.

What pi 1.6.0's built-in llama.cpp extension gives, as a plugin:

* the provider ``llama.cpp``: the router's models through its OpenAI-compatible
  ``/v1/chat/completions`` (pi's ``openai-completions`` API), at ``LLAMA_BASE_URL`` or the
  URL ``/login llama.cpp`` stored, with ``LLAMA_API_KEY`` or the stored key;
* a catalogue that follows the router: loaded and sleeping models (and unloaded presets
  when the router autoloads), their context size from ``/props``. The models registered
  at startup come from a snapshot in ``<agent>/llama/models.json`` (pi never waits for the
  network to start). pi's catalogue refreshes (``refresh_models``: ``pi update
  --models``, the start of interactive and RPC mode, ``/model``, ``/login``, and
  ``/llama`` after every change) update the offered models at once; in print and json
  mode ``session_start`` refreshes the snapshot in the background for the next start.
  Without a snapshot, registration asks the router once, with a one-second timeout;
* ``/llama``: list, load, unload and download (Hugging Face search) the router's models,
  with progress in the status line; Esc stops a load or a download (the command's
  ``ctx.signal``);
* classifiers: every chat model is also a classifier of the same id (pi's
  ``llama-cpp-classify`` API reads answers from next-token probabilities), and the
  router's decision models (output modality ``decisions``) are ``typesafe-system-one``
  classifiers at ``/v1/systemone`` (``catalog.classifier_models``).

See ``docs/llama.md``. The plugin speaks HTTP with the standard library, in worker
threads; it imports nothing else at startup.
"""

from __future__ import annotations

__version__ = "1.0.0"

import asyncio
import contextlib
import os
from typing import Any

from pi_hookspecs import (
    ApiKeyCredentials,
    CatalogueRefresh,
    CommandDefinition,
    CredentialRequest,
    CredentialSource,
    LoginCallbacks,
    LoginMethod,
    Model,
    ProviderDefinition,
    RequestCredentials,
    hookimpl,
)

from .catalog import Snapshot, classifier_models, fetch_snapshot, read_snapshot, write_snapshot
from .client import LlamaClient, LlamaError, inference_url, normalize_server_url
from .config import DEFAULT_SERVER_URL, PROVIDER, env_api_key, login_credentials, server_url

__all__ = ["PROVIDER", "LlamaPlugin"]

STARTUP_TIMEOUT = 1.0
"""Seconds a start may wait for a router it has no snapshot of."""

REFRESH_TIMEOUT = 5.0
"""Seconds each request of the background refresh may take."""


class LlamaPlugin:
    """The pi plugin (entry point ``llama``): one instance per session runtime."""

    def __init__(self) -> None:
        self.registered: Snapshot | None = None
        """The snapshot whose models registration gave pi."""
        self.startup_error: str | None = None
        self.refresh_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ registration

    @hookimpl
    def register_providers(self, register: Any) -> None:
        """The provider, its login and its key. Its models come from ``refresh_models``:
        offline at every start (the snapshot of the router pi's credentials name), online
        when pi refreshes catalogues."""
        register(
            ProviderDefinition.model_construct(
                name=PROVIDER,
                display_name="llama.cpp",
                base_url=inference_url(server_url() or DEFAULT_SERVER_URL),
                api="openai-completions",
                api_key=None,
                headers=None,
                auth_header=False,
                compat=None,
                models=[],
                catalogue=None,
                stream=None,
                refresh_models=self.refresh_models,
            )
        )
        # constant values, made with model_construct: a run does not build their validators
        register(
            LoginMethod.model_construct(
                provider=PROVIDER,
                name="llama.cpp server",
                kind="api_key",
                login=self.login,
                api_key=_login_key,
                base_url=_login_base_url,
            )
        )
        register(CredentialSource.model_construct(provider=PROVIDER, resolve=_lend_key, available=_configured))

    @hookimpl
    def register_commands(self, register: Any) -> None:
        register(
            CommandDefinition.model_construct(
                name="llama",
                handler=self.command,
                description="Manage llama.cpp router models: list, load, unload, download",
                argument_hint="[list|load ID|unload ID|download REPO[:QUANT]|search QUERY]",
            )
        )

    # ------------------------------------------------------------------ life cycle

    @hookimpl
    async def session_start(self, event: Any, ctx: Any) -> None:
        if self.startup_error and ctx.mode == "tui":
            ctx.ui.notify(f"llama.cpp: {self.startup_error}", "warning")
        if ctx.mode in ("tui", "rpc"):
            return  # pi refreshes the catalogue itself (refresh_models), models included
        auth = await ctx.model_registry.get_provider_auth(PROVIDER)
        url = (auth.env.get("LLAMA_BASE_URL") or auth.base_url) if auth is not None else None
        if not url:
            return
        try:
            client = LlamaClient(normalize_server_url(url), auth.api_key if auth else None, timeout=REFRESH_TIMEOUT)
        except ValueError:
            return
        self.refresh_task = asyncio.ensure_future(self._refresh(client))

    @hookimpl
    async def session_shutdown(self, event: Any, ctx: Any) -> None:
        task, self.refresh_task = self.refresh_task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _refresh(self, client: LlamaClient) -> None:
        """Look at the router in the background and keep the snapshot for the next start."""
        try:
            snapshot = await asyncio.to_thread(fetch_snapshot, client)
        except LlamaError:
            return  # a request to the model says it, once
        write_snapshot(snapshot)

    async def refresh_models(self, refresh: CatalogueRefresh) -> list[Model] | None:
        """pi's catalogue refresh. The router is the one pi's credentials name: the URL a
        login stored (``refresh.env``), else ``LLAMA_BASE_URL``; none: no models.

        * offline (every start): the snapshot of that router; without one, one look at
          the router with a one-second timeout (not with ``PI_OFFLINE``), kept as the
          snapshot - pi never waits longer for the network to start;
        * online (``pi update --models``, the start of interactive and RPC mode, ``/model``,
          ``/login``, ``/llama`` after a change): look at the router and offer what it
          offers now, with ``refresh.api_key`` (else ``LLAMA_API_KEY``), keeping the
          snapshot."""
        url = server_url(refresh.env)
        if url is None:
            return None
        if not refresh.allow_network:
            snapshot = read_snapshot(url)
            if snapshot is None and not _offline():
                client = LlamaClient(url, refresh.api_key or env_api_key(refresh.env), timeout=STARTUP_TIMEOUT)
                try:
                    snapshot = await asyncio.to_thread(fetch_snapshot, client, timeout=STARTUP_TIMEOUT)
                except LlamaError as error:
                    self.startup_error = str(error)
                    return None
                write_snapshot(snapshot)
        else:
            client = LlamaClient(url, refresh.api_key or env_api_key(refresh.env), timeout=REFRESH_TIMEOUT)
            try:
                snapshot = await asyncio.to_thread(fetch_snapshot, client)
            except LlamaError as error:
                raise RuntimeError(str(error)) from None
            if refresh.signal is not None and refresh.signal.aborted:
                return None
            write_snapshot(snapshot)
        if snapshot is None:
            return None
        self.registered = snapshot
        return [Model.model_validate(m) for m in [*snapshot.models, *classifier_models(snapshot)]]

    async def command(self, args: str, ctx: Any) -> None:
        from .commands import run_command

        await run_command(self, args, ctx)

    # ------------------------------------------------------------------ /login llama.cpp

    async def login(self, callbacks: LoginCallbacks) -> ApiKeyCredentials:
        """Ask for the router's URL and an optional key, check that the router answers,
        and keep a snapshot of its models; stored as pi 1.6.0 stores it (an API key with
        the URL in its ``env``)."""
        default = os.environ.get("LLAMA_BASE_URL") or DEFAULT_SERVER_URL
        entered = await callbacks.prompt("llama.cpp server URL", placeholder=default)
        server_url = normalize_server_url(entered.strip() or default)
        key = (await callbacks.prompt("API key (optional)", secret=True)).strip() or None
        callbacks.progress(f"Connecting to {server_url}")
        client = LlamaClient(server_url, key or env_api_key())
        try:
            snapshot = await asyncio.to_thread(fetch_snapshot, client)
        except LlamaError as error:
            raise RuntimeError(str(error)) from None
        write_snapshot(snapshot)
        return login_credentials(server_url, key)


# ---------------------------------------------------------------------- credentials


def _login_key(credentials: ApiKeyCredentials) -> str | None:
    key = credentials.key
    if key and key.startswith("!"):
        return None  # a command: pi runs it (the stored key's usual resolution)
    return key or env_api_key(credentials.env) or "local"


def _login_base_url(credentials: ApiKeyCredentials, model: Model) -> str | None:
    url = (credentials.env or {}).get("LLAMA_BASE_URL")
    return inference_url(normalize_server_url(url)) if url else None


def _configured(env: dict[str, str]) -> bool:
    """A server URL is known: stored with the login (``env``) or in ``LLAMA_BASE_URL``."""
    return server_url(env) is not None


def _offline() -> bool:
    """``--offline`` / ``PI_OFFLINE``: no look at the router at start-up."""
    return os.environ.get("PI_OFFLINE", "").strip().lower() not in ("", "0", "false", "no")


def _lend_key(request: CredentialRequest) -> RequestCredentials | None:
    """Requests without a stored key send ``LLAMA_API_KEY``, else ``local`` (the router
    ignores the key unless started with ``--api-key``)."""
    if request.api_key:
        return None
    return RequestCredentials(api_key=env_api_key(request.env) or "local")
