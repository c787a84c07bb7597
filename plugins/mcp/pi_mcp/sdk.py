"""The ``mcp`` SDK, imported beside pi's startup instead of in its way.

``import mcp`` costs about half a second (the package imports its server side too).
:func:`prefetch` starts that import in a background thread as soon as pi-mcp knows a
server is configured; the connections await :func:`ready` only where they need the SDK
(a stdio server is started before that, so the server and the SDK load at the same
time). Nothing here imports the SDK on the calling thread.

The import runs once per process; a failed import (the SDK missing or broken) is
reported by every connection that needed it.
"""

from __future__ import annotations

import asyncio
import importlib
import threading
from concurrent.futures import Future

MODULES = (
    "mcp_types",
    "mcp",
    "mcp.client.session",
    "mcp.client.streamable_http",
    "mcp.shared.exceptions",
    "mcp.shared.message",
)
"""What the connections use (``mcp`` itself pulls in most of the rest)."""

_lock = threading.Lock()
_future: Future[None] | None = None


def _import_all() -> None:
    for name in MODULES:
        importlib.import_module(name)


def _run(future: Future[None]) -> None:
    try:
        _import_all()
    except BaseException as exc:  # reported to whoever awaits ready()
        future.set_exception(exc)
    else:
        future.set_result(None)


def prefetch() -> Future[None]:
    """Start importing the SDK in a background thread (once per process)."""
    global _future
    with _lock:
        future = _future
        if future is None:
            future = _future = Future()
            future.set_running_or_notify_cancel()
            threading.Thread(target=_run, args=(future,), name="pi-mcp-sdk-import", daemon=True).start()
    return future


def loaded() -> bool:
    """The SDK finished importing (successfully)."""
    future = _future
    return future is not None and future.done() and future.exception() is None


async def ready() -> None:
    """Wait (without blocking the event loop) until the SDK is imported; raises the
    import's error when it failed."""
    future = prefetch()
    if not future.done():
        await asyncio.wrap_future(future)
    future.result()
