"""An incremental BM25 index over tool documents."""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import field
from operator import itemgetter
from typing import NamedTuple

from pi_hookspecs import ToolDefinition
from pi_hookspecs.record import dataclass

from .document import ToolDocument, document_for, namespace_key, namespace_keys
from .tokenize import tokenize

__all__ = ["DEFAULT_LIMIT", "Hit", "SyncResult", "ToolIndex"]

DEFAULT_LIMIT = 8

_namespace_keys = functools.lru_cache(maxsize=4096)(namespace_keys)


class Hit(NamedTuple):
    """One search result: a tool name and its BM25 score (higher is better)."""

    name: str
    score: float


@dataclass
class SyncResult:
    """What :meth:`ToolIndex.sync` changed, by tool name."""

    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.updated or self.removed)


class _Entry:
    __slots__ = ("document", "keys", "length", "seq", "source")

    def __init__(
        self, seq: int, document: ToolDocument, length: float, keys: tuple[str, ...], source: ToolDefinition | None
    ) -> None:
        self.seq = seq
        self.document = document
        self.length = length
        self.keys = keys
        self.source = source


class ToolIndex:
    """BM25 over tool documents, updated in place.

    Every field's terms are counted with the field's weight (``FIELD_WEIGHTS``: name >
    description > parameters > namespace), the simple BM25F form: a term's frequency in a
    tool is the weighted sum over fields, and so is the tool's length. A query term ``t``
    found in ``n`` of ``N`` tools adds::

        idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average_length))

    with ``idf(t) = log(1 + (N - n + 0.5) / (n + 0.5))``, which is never zero or negative,
    so a catalogue of one or two tools still ranks by relevance. ``k1 = 1.2``,
    ``b = 0.75``.

    :meth:`add`, :meth:`update` and :meth:`remove` cost O(size of one document): the index
    keeps an inverted list per term and the running total length, and computes idf and
    the average length when a query runs, from the current counts. A query costs
    O(tools that contain a query term).
    """

    def __init__(self, *, k1: float = 1.2, b: float = 0.75) -> None:
        self.k1 = k1
        self.b = b
        self._entries: dict[str, _Entry] = {}
        self._postings: defaultdict[str, dict[str, float]] = defaultdict(dict)
        self._lengths: dict[str, float] = {}
        self._namespaces: dict[str, set[str]] = {}
        self._total_length = 0.0
        self._seq = 0

    # ------------------------------------------------------------------ contents

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def names(self) -> list[str]:
        """The indexed tool names, in the order they were first added."""
        return list(self._entries)

    def add(self, name: str, document: ToolDocument, *, source: ToolDefinition | None = None) -> None:
        """Index ``document`` under ``name``, replacing what was indexed under that name
        (a replaced tool keeps its place for ties). ``source`` is the definition the
        document was built from, which :meth:`sync` compares by identity."""
        old = self._entries.get(name)
        if old is not None:
            self._unlink(name, old)
        postings = self._postings
        length = 0.0
        for text, weight in document.fields():
            tokens = tokenize(text)
            length += len(tokens) * weight
            for term in tokens:
                posting = postings[term]
                posting[name] = posting.get(name, 0.0) + weight
        keys = _namespace_keys(tuple(document.namespaces)) if document.namespaces else ()
        seq = old.seq if old is not None else self._next_seq()
        self._entries[name] = _Entry(seq, document, length, keys, source)
        self._lengths[name] = length
        self._total_length += length
        for key in keys:
            members = self._namespaces.get(key)
            if members is None:
                self._namespaces[key] = {name}
            else:
                members.add(name)

    def update(self, name: str, document: ToolDocument, *, source: ToolDefinition | None = None) -> None:
        """Replace the document of an indexed tool; ``KeyError`` when ``name`` is not
        indexed."""
        if name not in self._entries:
            raise KeyError(name)
        self.add(name, document, source=source)

    def remove(self, name: str) -> bool:
        """Forget a tool; returns whether it was indexed."""
        entry = self._entries.pop(name, None)
        if entry is None:
            return False
        self._unlink(name, entry)
        if not self._entries:
            self._total_length = 0.0
        return True

    def add_tool(self, tool: ToolDefinition) -> None:
        """``add(tool.name, document_for(tool), source=tool)``."""
        self.add(tool.name, document_for(tool), source=tool)

    def sync(self, tools: Iterable[ToolDefinition], keep: Callable[[ToolDefinition], bool] | None = None) -> SyncResult:
        """Make the index hold exactly ``tools`` (those for which ``keep`` is true).

        A tool whose definition object is the one indexed before is left alone (so
        calling this before every query costs one identity check per tool); a new or
        re-registered definition is (re)indexed; an indexed name that is missing, or no
        longer kept (say, withdrawn with ``exposure="hidden"``), is removed.
        """
        result = SyncResult()
        seen: set[str] = set()
        entries = self._entries
        for tool in tools:
            if keep is not None and not keep(tool):
                continue
            name = tool.name
            seen.add(name)
            entry = entries.get(name)
            if entry is not None and entry.source is tool:
                continue
            self.add_tool(tool)
            (result.added if entry is None else result.updated).append(name)
        if len(seen) != len(entries):
            for name in [n for n in entries if n not in seen]:
                self.remove(name)
                result.removed.append(name)
        return result

    # ------------------------------------------------------------------ search

    def search(
        self,
        query: str,
        limit: int = DEFAULT_LIMIT,
        namespace: str | None = None,
        include: Callable[[str], bool] | None = None,
    ) -> list[Hit]:
        """The best ``limit`` tools for ``query``, best first; ties keep the order the
        tools were added in. Only tools that share a term with the query are returned.

        ``namespace`` keeps the tools of one namespace, named by its name or an alias in
        any of the forms :func:`~pi_toolindex.namespace_keys` accepts (``mcp__github``,
        ``github``). ``include(name)`` keeps only the tools it returns true for (say, not
        active yet and callable); idf still counts every indexed tool.
        """
        entries = self._entries
        if limit <= 0 or not entries:
            return []
        terms = dict.fromkeys(tokenize(query))
        if not terms:
            return []
        allowed: set[str] | None = None
        if namespace is not None:
            allowed = self._namespaces.get(namespace_key(namespace))
            if not allowed:
                return []
        n_docs = len(entries)
        k1 = self.k1
        average = self._total_length / n_docs or 1.0
        base = k1 * (1.0 - self.b)
        scale = k1 * self.b / average
        lengths = self._lengths
        found = [posting for posting in map(self._postings.get, terms) if posting]
        found.sort(key=len, reverse=True)  # the longest list is scored by a comprehension
        scores: dict[str, float] = {}
        for posting in found:
            df = len(posting)
            weight = math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5)) * (k1 + 1.0)
            if not scores:
                scores = {
                    name: weight * tf / (tf + base + scale * lengths[name])
                    for name, tf in posting.items()
                    if allowed is None or name in allowed
                }
                continue
            get = scores.get
            for name, tf in posting.items():
                if allowed is None or name in allowed:
                    scores[name] = get(name, 0.0) + weight * tf / (tf + base + scale * lengths[name])
        items: Iterable[tuple[str, float]] = scores.items()
        if include is not None:
            items = [item for item in items if include(item[0])]
        return [Hit(name, score) for name, score in self._top(items, limit)]

    def _top(self, items: Iterable[tuple[str, float]], limit: int) -> list[tuple[str, float]]:
        """The ``limit`` best items; equal scores in the order the tools were added."""
        ranked = sorted(items, key=itemgetter(1), reverse=True)
        if len(ranked) > limit:
            cutoff = ranked[limit - 1][1]
            end = limit
            while end < len(ranked) and ranked[end][1] == cutoff:
                end += 1
            del ranked[end:]
        entries = self._entries
        ranked.sort(key=lambda item: (-item[1], entries[item[0]].seq))
        return ranked[:limit]

    # ------------------------------------------------------------------ internals

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    def _unlink(self, name: str, entry: _Entry) -> None:
        postings = self._postings
        for text, _weight in entry.document.fields():
            for term in set(tokenize(text)):
                posting = postings.get(term)
                if posting is not None:
                    posting.pop(name, None)
                    if not posting:
                        del postings[term]
        for key in entry.keys:
            members = self._namespaces.get(key)
            if members is not None:
                members.discard(name)
                if not members:
                    del self._namespaces[key]
        self._lengths.pop(name, None)
        self._total_length -= entry.length
