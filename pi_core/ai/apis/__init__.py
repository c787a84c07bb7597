"""The API table: one stream implementation per ``Model.api`` string.

An implementation is ``async def run(model, context, options, out)``: it sends the
request, reports what arrives through ``out`` (a :class:`~pi_core.ai.MessageBuilder`)
and raises on failure. Built-in implementations are imported on first use, so the
provider SDKs load only when a request needs them.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Awaitable, Callable

from pi_hookspecs import LlmContext, Model, StreamOptions

from ..stream import MessageBuilder

ApiImplementation = Callable[[Model, LlmContext, StreamOptions, MessageBuilder], Awaitable[None]]

_APIS: dict[str, ApiImplementation | str] = {
    "anthropic-messages": "pi_core.ai.apis.anthropic:stream_anthropic",
    "openai-responses": "pi_core.ai.apis.openai_responses:stream_openai_responses",
    "openai-completions": "pi_core.ai.apis.openai_completions:stream_openai_completions",
    "faux": "pi_core.ai.faux:stream_faux",
}


def register_api(name: str, implementation: ApiImplementation | str) -> None:
    """Add or replace the implementation of ``name`` (a function or ``"module:function"``)."""
    _APIS[name] = implementation


def get_api(name: str) -> ApiImplementation | None:
    """The implementation of API ``name``, or ``None`` when there is none."""
    entry = _APIS.get(name)
    if isinstance(entry, str):
        module, _, attribute = entry.partition(":")
        entry = getattr(importlib.import_module(module), attribute)
        _APIS[name] = entry
    return entry


def known_apis() -> list[str]:
    return sorted(_APIS)


_SDK_MODULES: dict[str, tuple[str, ...]] = {
    "anthropic-messages": ("anthropic", "anthropic.types"),
    "openai-responses": ("openai", "openai.types.responses"),
    "openai-completions": ("openai", "openai.types.chat"),
}


def preload(api: str) -> threading.Thread | None:
    """Start importing the SDK of ``api`` in a background thread (the import of a
    provider SDK takes a noticeable fraction of a second): call it as soon as the
    model is known, so the import overlaps with the rest of startup. Returns the
    thread, or ``None`` when the API needs no SDK or it is already imported."""
    import sys

    modules = [m for m in _SDK_MODULES.get(api, ()) if m not in sys.modules]
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
