"""pluggable-pi-llama: the llama.cpp router as pi's ``llama.cpp`` provider, and ``/llama``.

What pi 1.6.0's built-in llama.cpp extension gives, as a plugin:

* the provider ``llama.cpp``: the router's models through its OpenAI-compatible
  ``/v1/chat/completions`` (pi's ``openai-completions`` API), at ``LLAMA_BASE_URL`` or the
  URL ``/login llama.cpp`` stored, with ``LLAMA_API_KEY`` or the stored key;
* a catalogue that follows the router: loaded and sleeping models (and unloaded presets
  when the router autoloads), their context size from ``/props``. The models registered
  at startup come from a snapshot in ``<agent>/llama/models.json`` (pi never waits for the
  network to start); ``session_start`` refreshes it in the background. Without a
  snapshot, registration asks the router once, with a one-second timeout;
* ``/llama``: list, load, unload and download (Hugging Face search) the router's models,
  with progress in the status line; Esc stops a load or a download.

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

from .catalog import Snapshot, fetch_snapshot, read_snapshot, write_snapshot
from .client import LlamaClient, LlamaError, inference_url, normalize_server_url
from .config import DEFAULT_SERVER_URL, PROVIDER, connection, env_api_key, login_credentials

__all__ = ["PROVIDER", "LlamaPlugin"]

STARTUP_TIMEOUT = 1.0
"""Seconds registration may wait for a router it has no snapshot of."""

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
        current = connection()
        snapshot = None
        if current is not None:
            snapshot = read_snapshot(current.server_url)
            if snapshot is None:
                try:
                    snapshot = fetch_snapshot(current.client(timeout=STARTUP_TIMEOUT), timeout=STARTUP_TIMEOUT)
                except LlamaError as error:
                    self.startup_error = str(error)
                else:
                    write_snapshot(snapshot)
        self.registered = snapshot
        server_url = current.server_url if current is not None else DEFAULT_SERVER_URL
        register(
            ProviderDefinition.model_construct(
                name=PROVIDER,
                display_name="llama.cpp",
                base_url=inference_url(server_url),
                api="openai-completions",
                api_key=None,
                headers=None,
                auth_header=False,
                compat=None,
                models=[Model.model_validate(m) for m in (snapshot.models if snapshot else [])],
                catalogue=None,
                stream=None,
            )
        )
        register(
            LoginMethod(
                provider=PROVIDER,
                name="llama.cpp server",
                kind="api_key",
                login=self.login,
                api_key=_login_key,
                base_url=_login_base_url,
            )
        )
        register(CredentialSource(provider=PROVIDER, resolve=_lend_key, available=_configured))

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
        current = connection()
        if current is None:
            return
        if self.startup_error and ctx.mode == "tui":
            ctx.ui.notify(f"llama.cpp: {self.startup_error}", "warning")
        self.refresh_task = asyncio.ensure_future(self._refresh(ctx, current.client(timeout=REFRESH_TIMEOUT)))

    @hookimpl
    async def session_shutdown(self, event: Any, ctx: Any) -> None:
        task, self.refresh_task = self.refresh_task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def _refresh(self, ctx: Any, client: LlamaClient) -> None:
        """Look at the router in the background and keep the snapshot for the next start;
        tell an interactive user when the offered models changed."""
        try:
            snapshot = await asyncio.to_thread(fetch_snapshot, client)
        except LlamaError:
            return  # a request to the model says it, once
        write_snapshot(snapshot)
        registered = self.registered
        if registered is not None and registered.models == snapshot.models:
            return
        if ctx.mode == "tui" and snapshot.models:
            try:
                ctx.ui.notify("llama.cpp: the router's models changed; /reload (or /llama) updates /model", "info")
            except Exception:
                pass  # the session ended meanwhile

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
    return connection(env) is not None


def _lend_key(request: CredentialRequest) -> RequestCredentials | None:
    """Requests without a stored key send ``LLAMA_API_KEY``, else ``local`` (the router
    ignores the key unless started with ``--api-key``)."""
    if request.api_key:
        return None
    return RequestCredentials(api_key=env_api_key(request.env) or "local")
