"""The API table: one stream implementation per ``Model.api`` string.

An implementation is ``async def run(model, context, options, out)``: it sends the
request, reports what arrives through ``out`` (a :class:`~pi_core.ai.MessageBuilder`)
and raises on failure. Built-in implementations are imported on first use; they speak
HTTP and SSE themselves (``_transport``, ``_sse``; no provider SDK or HTTP library is
imported by a run).
"""

from __future__ import annotations

import importlib
import sys
import threading
from collections.abc import Awaitable, Callable

from pi_hookspecs import LlmContext, Model, StreamOptions

from ..builtin import registrations
from ..message_stream import MessageBuilder

ApiImplementation = Callable[[Model, LlmContext, StreamOptions, MessageBuilder], Awaitable[None]]

_APIS: dict[str, ApiImplementation | str] = {}
_builtins_loaded = False


def _load_builtins() -> None:
    """Fill the table from pi's built-in provider plugin (:mod:`pi_core.ai.builtin`)."""
    global _builtins_loaded
    if _builtins_loaded:
        return
    _builtins_loaded = True
    for name, definition in registrations()[0].items():
        if definition.stream is not None:  # (classifier and image APIs do not stream)
            _APIS.setdefault(name, definition.stream)


def register_api(name: str, implementation: ApiImplementation | str) -> None:
    """Add or replace the implementation of ``name`` (a function or ``"module:function"``)."""
    _APIS[name] = implementation


def get_api(name: str) -> ApiImplementation | None:
    """The implementation of API ``name``, or ``None`` when there is none."""
    _load_builtins()
    entry = _APIS.get(name)
    if isinstance(entry, str):
        entry = resolve_target(entry)
        _APIS[name] = entry
    return entry


def resolve_target(target: str) -> ApiImplementation:
    """The function ``"package.module:function"`` names (its module imported now)."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)  # type: ignore[no-any-return]


def known_apis() -> list[str]:
    _load_builtins()
    return sorted(_APIS)


_HTTP_APIS = frozenset(
    {
        "anthropic-messages",
        "openai-responses",
        "openai-completions",
        "google-generative-ai",
        "google-vertex",
        "mistral-conversations",
        "azure-openai-responses",
        "openai-codex-responses",
        "pi-messages",
    }
)


def preload(api: str) -> threading.Thread | None:
    """Start importing what a request of ``api`` needs (the HTTP client, the API's
    module) in a background thread: call it as soon as the model is known, so the
    imports overlap with the rest of startup. Returns the thread, or ``None`` when
    there is nothing left to import."""
    if api not in _HTTP_APIS:
        return None
    _load_builtins()
    entry = _APIS.get(api)
    client = ["pi_core.ai.apis._transport", "pi_core.ai.apis._sse"]
    modules = [*client, entry.partition(":")[0]] if isinstance(entry, str) else client
    modules = [m for m in modules if m not in sys.modules]
    if not modules:
        return None

    def load() -> None:
        for name in modules:
            try:
                importlib.import_module(name)
            except ImportError:
                return

    thread = threading.Thread(target=load, name=f"pi-preload-{api}", daemon=True)
    thread.start()
    return thread
