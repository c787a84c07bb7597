"""pi-codemode: the ``codemode`` tool runs a model-written Python script that calls
pi's other tools, in the Monty sandbox; only the script's output reaches the model.

    {"defaultTools": ["+codemode"]}        # settings.json, or: pi --tools +codemode

See ``docs/codemode.md``.
"""

from __future__ import annotations

from .catalog import Catalog, CatalogCache
from .description import CodemodeSettings, build_description
from .naming import to_identifier
from .plugin import CodemodePlugin
from .sandbox import get_sandbox
from .store import STORE_ENTRY, read_store
from .tool import CodemodeTool, reaches_tools

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
