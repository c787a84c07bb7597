"""``/llama``: the router's models, and loading, unloading and downloading them.

* ``/llama`` — in interactive and RPC mode a menu of the router's models (choose an
  unloaded one to load it, a loaded one to unload it, or *Download model…*); elsewhere
  the list;
* ``/llama list``; ``/llama load ID``; ``/llama unload ID``;
* ``/llama download owner/repository[:quant]`` (or a search text: Hugging Face is searched);
* ``/llama search TEXT`` — GGUF repositories on Hugging Face.

The router is the one ``/login llama.cpp`` (or ``LLAMA_BASE_URL``) configured, read
through ``ctx.model_registry.get_provider_auth`` (the stored URL in its ``env``, the key
as a request sends it). A load or a download shows its progress in the status line; Esc
(or Ctrl+C, or RPC ``abort``) fires the command's ``ctx.signal``, which stops the wait
and asks the router to stop too. After a change pi's catalogue is refreshed
(``ctx.model_registry.refresh``), so ``/model`` and ``--model`` offer the router's
current models at once, without ``/reload``. The router may be shared with other
clients: every command shows its current state, never a cache.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from .catalog import context_window, fetch_snapshot, write_snapshot
from .client import (
    LlamaClient,
    LlamaError,
    Progress,
    Stopped,
    format_bytes,
    model_is_loaded,
    normalize_server_url,
    status_of,
)
from .config import PROVIDER
from .huggingface import HuggingFaceClient, HuggingFaceError, find_token, split_reference

if TYPE_CHECKING:
    from . import LlamaPlugin

STATUS_KEY = "llama"
APPLY_TIMEOUT = 15.0
"""Seconds the catalogue refresh after a change may take (as pi 1.6.0)."""
DOWNLOAD = "Download model…"
CLOSE = "Close"
USAGE = "Usage: /llama [list | load ID | unload ID | download owner/repository[:quant] | search TEXT]"

T = TypeVar("T")


def _interactive(ctx: Any) -> bool:
    return bool(ctx.has_ui) and ctx.mode in ("tui", "rpc")


def describe(entry: dict[str, Any], contexts: dict[str, int] | None = None) -> str:
    """``id · loaded · 32k context`` (as pi 1.6.0's list); ``contexts``: the context
    windows the snapshot found (``/props`` of loaded models)."""
    details = []
    status = status_of(entry)
    loaded = model_is_loaded(entry)
    if loaded:
        details.append("loaded" if status == "loaded" else "loaded (sleeping)")
    elif status != "unloaded":
        details.append(status)
    if loaded:
        window = (contexts or {}).get(entry["id"]) or context_window(entry)
        details.append(f"{round(window / 1000)}k context" if window >= 1000 else f"{window} context")
    return " · ".join([entry["id"], *details])


async def configured_client(ctx: Any) -> LlamaClient | None:
    """The router pi's credentials name (``None``: not configured): the URL a login
    stored in its ``env`` (else the provider's base URL, from ``LLAMA_BASE_URL``) and
    the key a request would send."""
    auth = await ctx.model_registry.get_provider_auth(PROVIDER)
    if auth is None:
        return None
    url = auth.env.get("LLAMA_BASE_URL") or auth.base_url
    if not url:
        return None
    try:
        return LlamaClient(normalize_server_url(url), auth.api_key)
    except ValueError:
        return None


async def run_command(plugin: LlamaPlugin, args: str, ctx: Any) -> None:
    client = await configured_client(ctx)
    if client is None:
        ctx.ui.notify(f"Configure llama.cpp with /login {PROVIDER} (or set LLAMA_BASE_URL)", "warning")
        return
    word, _, rest = args.strip().partition(" ")
    rest = rest.strip()
    session = _Session(plugin, ctx, client)
    try:
        if not word:
            if _interactive(ctx):
                await session.menu()
            else:
                await session.show_list()
        elif word in ("list", "ls", "status"):
            await session.show_list()
        elif word == "load" and rest:
            await session.load(rest)
        elif word == "unload" and rest:
            await session.unload(rest, confirm=False)
        elif word == "download" and (rest or _interactive(ctx)):
            await session.download(rest or None)
        elif word == "search" and rest:
            await session.search(rest)
        else:
            ctx.ui.notify(USAGE, "warning")
    except (LlamaError, HuggingFaceError) as error:
        ctx.ui.notify(str(error), "error")
    finally:
        with contextlib.suppress(Exception):
            ctx.ui.set_status(STATUS_KEY, None)
    if session.changed:
        await session.apply()


class _Session:
    """One ``/llama`` invocation."""

    def __init__(self, plugin: LlamaPlugin, ctx: Any, client: LlamaClient) -> None:
        self.plugin = plugin
        self.ctx = ctx
        self.client = client
        self.changed = False

    # ------------------------------------------------------------------ listing

    async def _look(self) -> tuple[list[dict[str, Any]], dict[str, int]]:
        """The router's catalogue and the context windows of its offered models (the
        snapshot is rewritten on the way)."""
        snapshot = await asyncio.to_thread(fetch_snapshot, self.client)
        write_snapshot(snapshot)
        return snapshot.catalogue, {m["id"]: m["context_window"] for m in snapshot.models}

    async def show_list(self) -> None:
        catalogue, contexts = await self._look()
        if not catalogue:
            self.ctx.ui.notify(f"llama.cpp at {self.client.server_url}: no models (check --models-dir)", "info")
            return
        lines = [f"llama.cpp at {self.client.server_url}:", *(f"  {describe(e, contexts)}" for e in catalogue)]
        self.ctx.ui.notify("\n".join(lines), "info")

    async def menu(self) -> None:
        while True:
            catalogue, contexts = await self._look()
            options = [describe(e, contexts) for e in catalogue] + [DOWNLOAD, CLOSE]
            choice = await self.ctx.ui.select(f"llama.cpp · {self.client.server_url}", options)
            if choice is None or choice == CLOSE:
                return
            try:
                if choice == DOWNLOAD:
                    await self.download(None)
                    continue
                entry = catalogue[options.index(choice)]
                if model_is_loaded(entry):
                    await self.unload(entry["id"], confirm=True)
                elif status_of(entry) == "unloaded":
                    await self.load(entry["id"], catalogue)
                else:
                    self.ctx.ui.notify(f"{entry['id']} is {status_of(entry)}", "warning")
            except (LlamaError, HuggingFaceError) as error:
                self.ctx.ui.notify(str(error), "error")

    # ------------------------------------------------------------------ actions

    async def _with_progress(
        self, title: str, model: str, run: Callable[[Callable[[Progress], None], Any], Awaitable[T]], stop: str
    ) -> T | None:
        """``run(update, signal)`` with its progress in the status line. When the user
        stops the command (``ctx.signal`` fires: Esc, Ctrl+C, RPC ``abort``) the router is
        asked to stop (unload) the model and ``None`` is returned; a cancelled task
        does the same and re-raises."""

        def update(progress: Progress) -> None:
            with contextlib.suppress(Exception):
                self.ctx.ui.set_status(STATUS_KEY, f"{title} {model}: {progress.line()} (Esc stops)")

        async def halt() -> None:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.client.unload(model))
            with contextlib.suppress(Exception):
                self.ctx.ui.notify(f"Stopped {stop} {model}", "warning")
            self.changed = True

        update(Progress("Starting…"))
        try:
            return await run(update, self.ctx.signal)
        except Stopped:
            await halt()
            return None
        except asyncio.CancelledError:
            await halt()
            raise

    async def load(self, model: str, catalogue: list[dict[str, Any]] | None = None) -> None:
        catalogue = catalogue if catalogue is not None else await self.client.catalogue()
        if not any(e.get("id") == model for e in catalogue):
            known = ", ".join(e["id"] for e in catalogue) or "none"
            raise LlamaError(f"llama.cpp has no model {model!r} (models: {known})")
        others = [e for e in catalogue if e.get("id") != model and model_is_loaded(e)]
        replace = False
        if others and _interactive(self.ctx):
            count = len(others)
            choice = await self.ctx.ui.select(
                f"{count} model{' is' if count == 1 else 's are'} loaded",
                ["Unload all and load", "Keep loaded and load", "Cancel"],
            )
            if choice is None or choice == "Cancel":
                return
            replace = choice == "Unload all and load"
        if replace:
            for entry in others:
                await self.client.unload_and_wait(entry["id"])
            self.changed = True
        try:
            loaded = await self._with_progress(
                "Loading", model, lambda update, signal: self.client.load_and_wait(model, update, signal), "loading"
            )
        except LlamaError:
            if replace:
                await self._restore(others)
            raise
        except asyncio.CancelledError:
            if replace:
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._restore(others))
            raise
        self.changed = True
        if loaded is None:  # stopped
            if replace:
                await self._restore(others)
            return
        self.ctx.ui.notify(f"Loaded {model} ({describe(loaded).partition(' · ')[2] or 'loaded'})", "info")

    async def _restore(self, models: list[dict[str, Any]]) -> None:
        self.ctx.ui.notify("Restoring previously loaded models", "info")
        for entry in models:
            await self.client.load_and_wait(entry["id"], lambda _progress: None)

    async def unload(self, model: str, *, confirm: bool) -> None:
        if confirm and not await self.ctx.ui.confirm("Unload model?", model):
            return
        await self.client.unload_and_wait(model)
        self.changed = True
        self.ctx.ui.notify(f"Unloaded {model}", "info")

    async def search(self, query: str) -> None:
        results = await HuggingFaceClient(find_token()).search(query)
        if not results:
            self.ctx.ui.notify(f"No GGUF repositories on Hugging Face match {query!r}", "info")
            return
        lines = [f"  {r.id} · {r.downloads} downloads" for r in results]
        self.ctx.ui.notify("\n".join([f"Hugging Face: GGUF repositories matching {query!r}:", *lines]), "info")

    async def download(self, reference: str | None) -> None:
        interactive = _interactive(self.ctx)
        if reference is None:
            reference = (
                await self.ctx.ui.input("Download model: a name to search, or owner/repository[:quant]", "") or ""
            ).strip()
            if not reference:
                return
        huggingface = HuggingFaceClient(find_token())
        if "/" not in reference:
            results = await huggingface.search(reference)
            if not results:
                self.ctx.ui.notify(f"No GGUF repositories on Hugging Face match {reference!r}", "warning")
                return
            if not interactive:
                lines = [f"  {r.id} · {r.downloads} downloads" for r in results]
                self.ctx.ui.notify("\n".join(["Choose one: /llama download owner/repository[:quant]", *lines]), "info")
                return
            labels = [f"{r.id} · {r.downloads} downloads" for r in results]
            picked = await self.ctx.ui.select(f"Hugging Face: {reference}", labels)
            if picked is None:
                return
            reference = results[labels.index(picked)].id
        repository, quantization = split_reference(reference)
        if interactive:
            try:
                details = await huggingface.details(repository)
            except HuggingFaceError as error:
                self.ctx.ui.notify(f"{error}; downloading {reference} as given", "warning")
            else:
                repository = details.id
                if details.gated:
                    approval = "Manual approval is required" if details.gated == "manual" else "Accept the access terms"
                    choice = await self.ctx.ui.select(
                        f"Hugging Face access required: {details.id}. {approval} at "
                        f"https://huggingface.co/{details.id}; the llama.cpp server needs HF_TOKEN with access.",
                        ["Continue", "Back"],
                    )
                    if choice != "Continue":
                        return
                if quantization is None and details.quantizations:
                    labels = []
                    for q in details.quantizations:
                        extra = [format_bytes(q.size) if q.size is not None else None]
                        extra.append("recommended" if q.name == "Q4_K_M" else None)
                        detail = " · ".join(e for e in extra if e)
                        labels.append(f"{q.name} · {detail}" if detail else q.name)
                    picked = await self.ctx.ui.select(f"Select quantization: {details.id}", labels)
                    if picked is None:
                        return
                    quantization = details.quantizations[labels.index(picked)].name
        model = f"{repository}:{quantization}" if quantization else repository
        done = await self._with_progress(
            "Downloading",
            model,
            lambda update, signal: self.client.download_and_wait(model, update, signal),
            "downloading",
        )
        self.changed = True
        if done is not None:
            self.ctx.ui.notify(f"Downloaded {model}", "info")

    # ------------------------------------------------------------------ after a change

    async def apply(self) -> None:
        """Refresh pi's ``llama.cpp`` catalogue (which rewrites the snapshot), so that
        ``/model`` and ``--model`` offer what the router offers now. Online even with
        ``PI_OFFLINE``: the command just talked to the router."""
        from pi_hookspecs import AbortController

        controller = AbortController()
        timer = asyncio.get_running_loop().call_later(APPLY_TIMEOUT, controller.abort)
        try:
            result = await self.ctx.model_registry.refresh(
                providers=[PROVIDER], allow_network=True, signal=controller.signal
            )
        finally:
            timer.cancel()
        if result.aborted:
            self.ctx.ui.notify("llama.cpp: the model catalogue refresh timed out; /model may be out of date", "warning")
        elif PROVIDER in result.errors:
            self.ctx.ui.notify(f"llama.cpp: {result.errors[PROVIDER]}", "error")
