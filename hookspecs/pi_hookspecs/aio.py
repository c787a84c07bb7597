"""A helper for code that calls what may be sync or async: hooks, callbacks, listeners."""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["maybe_await"]


async def maybe_await(value: Any) -> Any:
    """``await value`` when it is awaitable, else ``value``: the result of a callback
    that may be a plain function or a coroutine function."""
    if inspect.isawaitable(value):
        return await value
    return value
