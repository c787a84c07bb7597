"""The per-file mutation queue: tool calls run in parallel, but changes to one file
happen one after the other. pi's own ``edit`` and ``write`` tools take part in it; a
plugin tool that changes files should too.

Without it two tools may read the same old content, compute different updates, and the
last write wins: the other change is lost. Every tool that changes a file should hold
the file's place in the queue for its whole read-modify-write window::

    from pi_hookspecs.files import file_mutation_lock

    async with file_mutation_lock(absolute_path):
        text = path.read_text()
        path.write_text(transform(text))

or, with a coroutine factory, ``await with_file_mutation_queue(path, lambda: work())``.

The queue key is the real path: symbolic links of an existing file (or of an existing
parent directory of a new file) resolve to the same key, so aliases share one queue.
Different files never wait for each other. Waiters are served first come, first served.
The queue belongs to the running event loop.
"""

from __future__ import annotations

import asyncio
import os
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

T = TypeVar("T")


class _Entry:
    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


_queues: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, _Entry]] = weakref.WeakKeyDictionary()


def mutation_queue_key(path: str | os.PathLike[str]) -> str:
    """The key of ``path``'s queue: its absolute path with symbolic links resolved as
    far as the path exists."""
    return os.path.realpath(os.path.abspath(os.fspath(path)))


@asynccontextmanager
async def file_mutation_lock(path: str | os.PathLike[str]) -> AsyncIterator[None]:
    """Hold ``path``'s place in the mutation queue for the body of the ``async with``.

    ``path`` should be the absolute target path (resolve a relative argument against
    ``ctx.cwd`` first)."""
    loop = asyncio.get_running_loop()
    table = _queues.get(loop)
    if table is None:
        table = _queues[loop] = {}
    key = mutation_queue_key(path)
    entry = table.get(key)
    if entry is None:
        entry = table[key] = _Entry()
    entry.users += 1
    try:
        async with entry.lock:
            yield
    finally:
        entry.users -= 1
        if entry.users == 0 and table.get(key) is entry:
            del table[key]


async def with_file_mutation_queue(path: str | os.PathLike[str], work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work()`` (a coroutine factory, called once its turn comes) while holding
    ``path``'s place in the mutation queue; returns what it returns."""
    async with file_mutation_lock(path):
        return await work()


def pending_mutations(path: str | os.PathLike[str]) -> int:
    """How many holders and waiters ``path``'s queue has in the running loop (for tests
    and diagnostics)."""
    table = _queues.get(asyncio.get_running_loop(), {})
    entry = table.get(mutation_queue_key(path))
    return entry.users if entry is not None else 0
