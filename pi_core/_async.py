"""Calling code that may be sync or async (plugins, callbacks, listeners)."""

from __future__ import annotations

import inspect
from typing import Any


async def maybe_await(value: Any) -> Any:
    """``await value`` when it is awaitable, else ``value``: the result of a callback
    that may be a plain function or a coroutine function."""
    if inspect.isawaitable(value):
        return await value
    return value
