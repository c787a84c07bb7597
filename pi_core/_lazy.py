"""Package namespaces whose names are imported on first use (PEP 562).

A package's ``__init__`` that imports every submodule to re-export its names makes
importing *one* submodule import all of them: ``pi -p`` paid for branch summaries,
compaction prompts and cut points to estimate a token count. A package built with
:func:`lazy_exports` keeps the same public names, each imported from its submodule the
first time it is read::

    __getattr__, __dir__ = lazy_exports(__name__, {
        ".tokens": "estimate_tokens should_compact",
        "..ai.models": "combine_usage",
    })

    if TYPE_CHECKING:  # what type checkers and editors see: the same names
        from ..ai.models import combine_usage
        from .tokens import estimate_tokens, should_compact

    __all__ = ["combine_usage", "estimate_tokens", "should_compact"]

``tests/test_lazy_packages.py`` checks that the table, the ``TYPE_CHECKING`` imports and
``__all__`` of each such package name the same things, and that every name resolves.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, table: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose ``table`` maps a module
    (relative to the package, e.g. ``.tokens`` or ``..ai.models``) to the names it
    provides, separated by spaces."""
    where = {name: module for module, names in table.items() for name in names.split()}
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *where})

    return __getattr__, __dir__
