"""pluggable-pi-toolindex: the incremental BM25 index that ranks tools for ``tool_search`` and for
codemode's ``search_tools``.

    from pi_toolindex import ToolIndex

    index = ToolIndex()
    index.sync(ctx.get_all_tools(), keep=lambda t: t.exposure in ("deferred", "codemode"))
    for hit in index.search("create an issue", limit=5, namespace="github"):
        print(hit.name, round(hit.score, 2))

The public API is what this module exports; everything else is private.
"""

from __future__ import annotations

__version__ = "1.0.0"

from .document import FIELD_WEIGHTS, ToolDocument, document_for, namespace_key, namespace_keys, namespace_matches
from .index import DEFAULT_LIMIT, Hit, SyncResult, ToolIndex
from .tokenize import STOP_WORDS, stem, tokenize

__all__ = [
    "DEFAULT_LIMIT",
    "FIELD_WEIGHTS",
    "STOP_WORDS",
    "Hit",
    "SyncResult",
    "ToolDocument",
    "ToolIndex",
    "document_for",
    "namespace_key",
    "namespace_keys",
    "namespace_matches",
    "stem",
    "tokenize",
]
