"""pluggable-pi-mcp's tests start real server processes on each test's event loop."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def collect_after_each_test() -> Iterator[None]:
    """Collect garbage after each test, between tests. A stdio server's asyncio transport
    that a test's loop left behind (one that timed out while starting) is then finalised
    here, rather than at some later moment in another test of the same process: inside a
    ``compile()``, CPython 3.11 turns the finaliser's error into "AST constructor
    recursion depth mismatch"."""
    yield
    gc.collect()
