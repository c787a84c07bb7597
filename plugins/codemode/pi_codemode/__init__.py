"""pluggable-pi-codemode: the ``codemode`` tool runs a model-written Python script that calls
pi's other tools, in the Monty sandbox; only the script's output reaches the model.

    {"defaultTools": ["+codemode"]}        # settings.json, or: pi --tools +codemode

See ``docs/codemode.md``.
"""

from __future__ import annotations

__version__ = "1.0.0"

import importlib
from typing import TYPE_CHECKING, Any

from .catalog import Catalog, CatalogCache
from .description import CodemodeSettings, build_description
from .plugin import CodemodePlugin
from .tool import CodemodeTool, reaches_tools

if TYPE_CHECKING:
    from .naming import to_identifier
    from .sandbox import get_sandbox
    from .store import STORE_ENTRY, read_store

_LAZY = {"get_sandbox": ".sandbox", "STORE_ENTRY": ".store", "read_store": ".store", "to_identifier": ".naming"}


def __getattr__(name: str) -> Any:
    """What runs scripts is imported on first use: loading the plugin does not need it."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "STORE_ENTRY",
    "Catalog",
    "CatalogCache",
    "CodemodePlugin",
    "CodemodeSettings",
    "CodemodeTool",
    "build_description",
    "get_sandbox",
    "reaches_tools",
    "read_store",
    "to_identifier",
]
