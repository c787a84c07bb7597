"""Calling code that may be sync or async (plugins, callbacks, listeners): the
contract's :func:`pi_hookspecs.aio.maybe_await`, which plugins use too."""

from __future__ import annotations

from pi_hookspecs.aio import maybe_await

__all__ = ["maybe_await"]
