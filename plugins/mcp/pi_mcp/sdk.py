"""The ``mcp`` SDK, imported beside pi's startup instead of in its way.

``import mcp`` costs about half a second: the package's ``__init__`` (and that of
``mcp.client``) imports the SDK's server side too (uvicorn, starlette, the server
framework: ≈0.15 s), which a client never uses. pluggable-pi-mcp imports the
client modules it uses without running those two ``__init__`` files
(:func:`_defer_package_inits`); the first name read from either package itself runs
its ``__init__`` then, so ``import mcp; mcp.ClientSession`` works as after a plain
import, for any code in the process. Should the SDK's layout ever refuse that, the SDK
is imported whole.

:func:`prefetch` starts that import in a background thread as soon as pluggable-pi-mcp knows a
server is configured; the connections await :func:`ready` only where they need the SDK
(a stdio server is started before that, so the server and the SDK load at the same
time). Nothing here imports the SDK on the calling thread.

The import runs once per process; a failed import (the SDK missing or broken) is
reported by every connection that needed it.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import sys
import threading
from concurrent.futures import Future
from typing import Any

MODULES = (
    "mcp_types",
    "mcp.client.session",
    "mcp.shared.exceptions",
    "mcp.shared.message",
)
"""What every connection uses."""

HTTP_MODULES = ("mcp.client.streamable_http",)
"""What an HTTP server's connection uses besides (imported after :data:`MODULES` when
such a server is configured: ``prefetch(http=True)``)."""

_DEFERRED_INITS = ("mcp", "mcp.client")
"""The packages whose ``__init__`` runs on first use of one of their own names."""

_lock = threading.Lock()
_future: Future[None] | None = None
_http_future: Future[None] | None = None


def _import_all() -> None:
    deferred = _defer_package_inits()
    try:
        for name in MODULES:
            importlib.import_module(name)
    except Exception:
        if not deferred:
            raise
        for name in deferred:  # the SDK's layout changed: import it whole after all
            _run_package_init(name)
        for name in MODULES:
            importlib.import_module(name)


def _defer_package_inits() -> list[str]:
    """Put the packages of :data:`_DEFERRED_INITS` in ``sys.modules`` with their
    ``__init__`` not run yet (those already imported are left alone)."""
    deferred: list[str] = []
    for name in _DEFERRED_INITS:
        if name in sys.modules:
            break
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            break
        if spec is None or spec.loader is None or spec.submodule_search_locations is None:
            break
        module = importlib.util.module_from_spec(spec)

        def __getattr__(attr: str, _name: str = name) -> Any:  # PEP 562: the first name read
            _run_package_init(_name)
            return getattr(sys.modules[_name], attr)

        module.__getattr__ = __getattr__  # type: ignore[method-assign]
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
        deferred.append(name)
    return deferred


_init_lock = threading.RLock()


def _run_package_init(name: str) -> None:
    """Run the deferred ``__init__`` of package ``name`` (once)."""
    with _init_lock:
        module = sys.modules[name]
        if (
            "__getattr__" not in module.__dict__
            or getattr(module.__dict__["__getattr__"], "__module__", None) != __name__
        ):
            return  # run already (or a package this module did not defer)
        del module.__dict__["__getattr__"]
        spec = module.__spec__
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(module)


def _run(future: Future[None], work: Any) -> None:
    try:
        work()
    except BaseException as exc:  # reported to whoever awaits ready()
        future.set_exception(exc)
    else:
        future.set_result(None)


def _import_http() -> None:
    prefetch().result()  # the client first (the same thread when it is not loaded yet)
    for name in HTTP_MODULES:
        importlib.import_module(name)


def prefetch(*, http: bool = False) -> Future[None]:
    """Start importing the SDK in a background thread (once per process); with
    ``http``, also what HTTP servers need."""
    global _future, _http_future
    with _lock:
        future = _future
        if future is None:
            future = _future = Future()
            future.set_running_or_notify_cancel()
            threading.Thread(target=_run, args=(future, _import_all), name="pi-mcp-sdk-import", daemon=True).start()
        if not http:
            return future
        future = _http_future
        if future is None:
            future = _http_future = Future()
            future.set_running_or_notify_cancel()
            threading.Thread(target=_run, args=(future, _import_http), name="pi-mcp-sdk-http", daemon=True).start()
        return future


def loaded() -> bool:
    """The SDK finished importing (successfully)."""
    future = _future
    return future is not None and future.done() and future.exception() is None


async def ready(*, http: bool = False) -> None:
    """Wait (without blocking the event loop) until the SDK is imported (with ``http``,
    also what HTTP servers need); raises the import's error when it failed."""
    future = prefetch(http=http)
    if not future.done():
        await asyncio.wrap_future(future)
    future.result()
