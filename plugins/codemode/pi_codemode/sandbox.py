"""The Monty sandbox: one process-wide worker pool and prepared sessions.

Scripts run in `pydantic-monty <https://github.com/pydantic/monty>`_ workers: separate
processes running a Python subset with no file system, network or subprocesses, with a
memory limit and Monty's type checker (ty) in front. Each script gets a fresh session:

1. ``pool.checkout(type_check=True, limits=…, external_modules={tools, async_tools,
   codemode, models})`` — ``tools`` holds one host function per callable tool with their
   stubs, ``async_tools`` the same as coroutines, ``codemode`` the helper globals,
   ``models`` the model catalogue (:mod:`pi_codemode.models_api`);
2. the *prelude* imports them (type-checked, which also warms the checker up);
3. the script is fed (type-checked, then run through the snapshot loop).

Steps 1–2 cost ~15 ms, most of it the type checker's first check in a session, so after
a script ends a *spare* session is prepared for the same tools in the background (on a
private event loop thread, so it outlives the caller's loop); the next script with the
same tools only pays for step 3.

At most ``PI_CODEMODE_MAX_WORKERS`` (default 2) sessions are alive per process, spare
included; a script waits for a free worker in arrival order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_monty import AsyncMonty, AsyncMontySession, ExternalModule

__all__ = [
    "CPU_LIMIT_SECONDS",
    "GLOBALS",
    "MEMORY_LIMIT_BYTES",
    "Lease",
    "Sandbox",
    "SessionSetup",
    "get_sandbox",
]

MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
CPU_LIMIT_SECONDS = 60.0
"""Time a script may compute in the sandbox (time spent waiting on tools not counted)."""
MAX_SUSPENSIONS = 250_000
"""Monty's own backstop on host round trips per session."""
DEFAULT_MAX_WORKERS = 2

GLOBALS = (
    "text",
    "image",
    "store",
    "load",
    "search_tools",
    "describe_tool",
    "describe_namespace",
    "call_tool",
    "call_tool_async",
)

GLOBALS_STUBS = """from typing import Any

ALL_TOOLS: list[dict[str, Any]]
def text(value: object) -> None: ...
def image(value: object) -> None: ...
def store(key: str, value: Any) -> None: ...
def load(key: str, default: Any = None) -> Any: ...
def search_tools(query: str, limit: int = 8, namespace: str | None = None) -> list[dict[str, Any]]: ...
def describe_tool(name: str) -> Any: ...  # str, or None
def describe_namespace(name: str) -> Any: ...  # dict, or None
def call_tool(tool: str, /, **args: Any) -> Any: ...
async def call_tool_async(tool: str, /, **args: Any) -> Any: ...
"""

PRELUDE = (
    "import asyncio\n"
    "import json\n"
    "import tools\n"
    "import async_tools\n"
    "import models\n"
    f"from codemode import ALL_TOOLS, {', '.join(sorted(GLOBALS))}\n"
    # binds no names; has the type checker look at common builtins, so the script's own
    # check starts warm
    "str(len([1.0])).upper() + repr({'k': (1, None)}) + json.dumps(ALL_TOOLS[:1])\n"
    "[w.strip().lower() for w in '\\n'.join(['a']).splitlines() if 'x' in w and w.startswith('a')]\n"
    "{k: v for k, v in {'a': 1}.items()}.get('a', 0) + sum(x for x in range(3))\n"
    "[print(f'{i}: {s!r}', sorted(['b']), min(1, 2), max([1]), abs(-1), round(1.5))"
    " for i, s in enumerate(['a'.split(',')[0].replace('a', 'b')])]\n"
)


@dataclass(frozen=True)
class SessionSetup:
    """What a sandbox session is prepared with; ``key`` identifies it."""

    key: str
    idents: tuple[str, ...]
    tools_stubs: str
    async_stubs: str
    all_tools: list[dict[str, Any]]

    def modules(self) -> dict[str, ExternalModule]:
        from pydantic_monty import ExternalModule

        from .models_api import FUNCTIONS, MODELS_STUBS

        host = _host_placeholder
        return {
            "models": ExternalModule(dict.fromkeys(FUNCTIONS, host), stubs=MODELS_STUBS),
            "tools": ExternalModule(dict.fromkeys(self.idents, host), stubs=self.tools_stubs),
            "async_tools": ExternalModule(dict.fromkeys(self.idents, host), stubs=self.async_stubs),
            "codemode": ExternalModule(
                {**dict.fromkeys(GLOBALS, host), "ALL_TOOLS": self.all_tools}, stubs=GLOBALS_STUBS
            ),
        }


def _host_placeholder(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("codemode host functions are answered by the snapshot loop")


def _limits() -> dict[str, Any]:
    return {
        "max_memory": MEMORY_LIMIT_BYTES,
        "max_feed_duration_secs": CPU_LIMIT_SECONDS,
        "max_suspensions": MAX_SUSPENSIONS,
    }


async def _prepare(pool: AsyncMonty, setup: SessionSetup) -> AsyncMontySession:
    """A checked-out session that has run the prelude."""
    from pydantic_monty import AsyncFunctionSnapshot, CollectStreams, MontyComplete

    session = pool.checkout(
        script_name="script.py",
        limits=_limits(),  # type: ignore[arg-type]
        type_check=True,
        external_modules=setup.modules(),
    )
    await session.__aenter__()
    try:
        snap = await session.feed_start(PRELUDE, print_callback=CollectStreams())
        while not isinstance(snap, MontyComplete):
            if not (isinstance(snap, AsyncFunctionSnapshot) and snap.function_name in ("import", "import_stubs")):
                raise RuntimeError(f"codemode prelude suspended unexpectedly: {snap!r}")
            snap = await snap.resume_auto()
    except BaseException:
        await _close(session)
        raise
    return session


async def _close(session: AsyncMontySession) -> None:
    try:
        await session.__aexit__(None, None, None)
    except Exception:  # a crashed or killed worker: the pool replaces it
        pass


@dataclass
class _Spare:
    key: str
    future: concurrent.futures.Future[AsyncMontySession] | None = None
    discarded: bool = False


class Lease:
    """A sandbox session lent to one script."""

    def __init__(self, sandbox: Sandbox, session: AsyncMontySession) -> None:
        self.sandbox = sandbox
        self.session = session
        self._released = False

    def release(self, prepare_next: SessionSetup | None = None) -> None:
        """Close the session in the background (its worker goes back to the pool) and,
        with ``prepare_next``, prepare a spare session for the next script."""
        if self._released:
            return
        self._released = True
        self.sandbox._close_in_background(self.session, prepare_next)


class Sandbox:
    """The process-wide worker pool (see the module docstring)."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max(1, max_workers)
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started: concurrent.futures.Future[AsyncMonty] | None = None
        self._spare: _Spare | None = None
        self._live = 0

    # ------------------------------------------------------------------ the private loop

    def _private_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="pi-codemode-sandbox", daemon=True)
                thread.start()
                self._loop = loop
            return self._loop

    async def _pool(self) -> AsyncMonty:
        loop = self._private_loop()
        with self._lock:
            if self._started is None:
                self._started = asyncio.run_coroutine_threadsafe(self._open_pool(), loop)
            started = self._started
        return await asyncio.wrap_future(started)

    async def _open_pool(self) -> AsyncMonty:
        from pydantic_monty import AsyncMonty

        pool = AsyncMonty(min_processes=1, max_processes=self.max_workers)
        await pool.__aenter__()
        return pool

    # ------------------------------------------------------------------ sessions

    async def acquire(self, setup: SessionSetup) -> Lease:
        """A prepared session for ``setup``: the spare when it matches, else a new one
        (waiting for a free worker)."""
        pool = await self._pool()
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None and spare.future is not None:
            if spare.key == setup.key:
                try:
                    return Lease(self, await asyncio.wrap_future(spare.future))
                except asyncio.CancelledError:
                    raise
                except Exception:  # the spare could not be prepared; try afresh
                    pass
            else:
                self._discard(spare)
        with self._lock:
            self._live += 1
        try:
            session = await _prepare(pool, setup)
        except BaseException:
            self._session_closed()
            raise
        return Lease(self, session)

    def prepare_spare(self, setup: SessionSetup) -> None:
        """Prepare a session for ``setup`` in the background, unless one is prepared
        already or every worker is busy."""
        loop = self._private_loop()
        with self._lock:
            started = self._started
            if self._spare is not None or self._live >= self.max_workers or started is None:
                return
            self._live += 1
            spare = _Spare(setup.key)
            spare.future = asyncio.run_coroutine_threadsafe(self._prepare_spare(started, setup, spare), loop)
            self._spare = spare

    async def _prepare_spare(
        self, started: concurrent.futures.Future[AsyncMonty], setup: SessionSetup, spare: _Spare
    ) -> AsyncMontySession:
        try:
            session = await _prepare(await asyncio.wrap_future(started), setup)
        except BaseException:
            self._session_closed()
            raise
        with self._lock:
            discarded = spare.discarded
        if discarded:
            await self._close_spare(session)
            raise RuntimeError("the spare session was discarded")
        return session

    def _discard(self, spare: _Spare) -> None:
        """Drop a spare prepared for other tools: closed as soon as it is ready."""
        with self._lock:
            spare.discarded = True
        if spare.future is not None:
            spare.future.add_done_callback(self._close_ready_spare)

    def _close_ready_spare(self, future: concurrent.futures.Future[AsyncMontySession]) -> None:
        # a spare that saw `discarded` in time closed itself and raised
        if future.cancelled() or future.exception() is not None or self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._close_spare(future.result()), self._loop)

    async def _close_spare(self, session: AsyncMontySession) -> None:
        try:
            await _close(session)
        finally:
            self._session_closed()

    def _close_in_background(self, session: AsyncMontySession, prepare_next: SessionSetup | None) -> None:
        async def close() -> None:
            if prepare_next is not None:
                self.prepare_spare(prepare_next)  # while this one closes, if a worker is free
            try:
                await _close(session)
            finally:
                self._session_closed()
            if prepare_next is not None:
                self.prepare_spare(prepare_next)

        asyncio.run_coroutine_threadsafe(close(), self._private_loop())

    def _session_closed(self) -> None:
        with self._lock:
            self._live -= 1

    @property
    def live_sessions(self) -> int:
        """Sessions checked out now (running scripts, scripts waiting for a worker, and
        the spare)."""
        return self._live

    def close(self, timeout: float = 10.0) -> None:
        """Stop the workers and the private loop (for embedders and tests; the
        process-wide sandbox otherwise lives as long as the process). Call it from
        outside the sandbox's loop, with no script running."""
        with self._lock:
            loop, started, spare = self._loop, self._started, self._spare
            self._spare = None
        if loop is None:
            return

        async def shutdown() -> None:
            if spare is not None and spare.future is not None:
                spare.future.cancel()
            if started is not None and started.done() and started.exception() is None:
                await started.result().__aexit__(None, None, None)

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout)
        finally:
            loop.call_soon_threadsafe(loop.stop)


_SANDBOX: Sandbox | None = None
_SANDBOX_LOCK = threading.Lock()


def get_sandbox() -> Sandbox:
    """The process-wide sandbox; ``PI_CODEMODE_MAX_WORKERS`` is read when it is created."""
    global _SANDBOX
    with _SANDBOX_LOCK:
        if _SANDBOX is None:
            raw = os.environ.get("PI_CODEMODE_MAX_WORKERS", "")
            try:
                workers = int(raw) if raw.strip() else DEFAULT_MAX_WORKERS
            except ValueError:
                workers = DEFAULT_MAX_WORKERS
            _SANDBOX = Sandbox(workers)
        return _SANDBOX
