"""The entries of a session in memory: the tree, the leaf, and what is derived from
them (labels, the session name, the context of the active branch).

:class:`EntryTree` holds one :class:`~pi_core.session.records.Record` per entry and
answers the tree and branch queries of :class:`~pi_core.session.manager.SessionManager`;
writing is the manager's job (:mod:`pi_core.session.writer`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pi_hookspecs import SessionEntry

from .context import ContextCache
from .errors import SessionDiagnostic
from .paths import iso_to_ms, new_entry_id
from .records import CHUNK, Record, no_gc, validate_entries, validate_entry


@dataclass(slots=True)
class SessionTreeNode:
    """A node of :meth:`SessionManager.get_tree`: an entry, its children (oldest first)
    and its label."""

    entry: SessionEntry
    children: list[SessionTreeNode] = field(default_factory=list)
    label: str | None = None
    label_timestamp: str | None = None


class EntryTree:
    """Every entry of a session, by id and in file order, and the leaf.

    ``diagnostics`` receives the entries that do not match the session format (found
    when they are first validated); ``source()`` names where they came from.
    """

    def __init__(self, diagnostics: list[SessionDiagnostic], source: Callable[[], str]) -> None:
        self.records: list[Record] = []
        self.by_id: dict[str, Record] = {}
        self.labels: dict[str, tuple[str, str]] = {}
        """Entry id -> (label, timestamp of the label entry)."""
        self.name: str | None = None
        self.has_assistant = False
        self.leaf_id: str | None = None
        self._raw_loaded = False
        """Whether an entry was loaded without its model (validated when first needed)."""
        self._linear = True
        """Every record is the child of the one before it (the first a root) and no id
        repeats: the path to the last record is then all of them, in order."""
        self.cache = ContextCache(self.model_of, self.validate)
        self._diagnostics = diagnostics
        self._source = source

    # ------------------------------------------------------------------ building

    def load(self, entries: Sequence[dict[str, Any] | SessionEntry], lines: Sequence[int], *, path: str) -> None:
        """Add the entries read from ``path`` (their ``lines``): raw JSON objects, or
        models of lines validated while reading. The leaf moves to the last."""
        records = self.records
        append = records.append
        by_id = self.by_id
        diagnostics = self._diagnostics
        note = self._note
        linear = self._linear
        previous = records[-1].id if records else None
        for entry, line in zip(entries, lines, strict=True):
            if type(entry) is not dict:  # a model (the usual entry)
                entry_id = entry.id  # type: ignore[union-attr]
                kind = entry.type  # type: ignore[union-attr]
                record = Record(entry_id, entry.parent_id, kind, None, entry, line)  # type: ignore[union-attr,arg-type]
            else:
                entry_id = entry.get("id")
                kind = entry.get("type")
                if type(entry_id) is not str or type(kind) is not str or kind == "session":
                    diagnostics.append(SessionDiagnostic(path, line, "entry without a string id and type; skipped"))
                    continue
                parent = entry.get("parentId")
                record = Record(entry_id, parent if type(parent) is str else None, kind, entry, None, line)
                self._raw_loaded = True
            if entry_id in by_id:
                diagnostics.append(SessionDiagnostic(path, line, f"duplicate entry id {entry_id}"))
                linear = False
            if record.parent_id != previous:
                linear = False
            previous = entry_id
            append(record)
            by_id[entry_id] = record
            if kind != "message" or (not self.has_assistant and record.role == "assistant"):
                note(record)  # (a message only matters to it as the first assistant one)
        self._linear = linear
        self.leaf_id = records[-1].id if records else None

    def add(self, record: Record) -> None:
        """Append a new child of the leaf; the leaf moves to it."""
        if record.id in self.by_id or record.parent_id != (self.records[-1].id if self.records else None):
            self._linear = False
        self.records.append(record)
        self.by_id[record.id] = record
        self._note(record)
        cache = self.cache
        if cache.valid and cache.leaf_id == record.parent_id:
            if not cache.extend(record):
                cache.rebuild([*cache.path, record], record.id)
        self.leaf_id = record.id

    def _note(self, record: Record) -> None:
        """Keep what is derived from the entries (an assistant message seen, labels, the
        session name) up to date with a new ``record``."""
        kind = record.type
        if kind == "message":
            if record.role == "assistant":
                self.has_assistant = True
        elif kind == "label":
            target = record.field("targetId", "target_id")
            if not isinstance(target, str):
                return
            label = record.field("label", "label")
            if isinstance(label, str) and label:
                self.labels[target] = (label, str(record.field("timestamp", "timestamp") or ""))
            else:
                self.labels.pop(target, None)
        elif kind == "session_info":
            name = record.field("name", "name")
            self.name = (name.strip() or None) if isinstance(name, str) else None

    # ------------------------------------------------------------------ reading

    def model_of(self, record: Record) -> SessionEntry:
        """The entry's model, validated on first use (a mismatch is kept as an unknown
        entry and reported in the diagnostics)."""
        model = record.model
        if model is None:
            assert record.raw is not None
            model, error = validate_entry(record.raw)
            self._keep(record, model, error)
        return model

    def validate(self, records: Sequence[Record], kinds: frozenset[str]) -> None:
        """Validate those of ``records`` of the ``kinds`` of entry that are not yet, all
        at once (cheaper than :meth:`model_of` one by one, with the same models and
        diagnostics)."""
        if not self._raw_loaded:  # every entry has its model (lines validated as read)
            return
        # (a record without its model holds its raw object)
        pending = [
            record for record in records if record.raw is not None and record.model is None and record.type in kinds
        ]
        # a chunk at a time: the raw objects of one chunk are freed before the next is
        # validated, so the models reuse their memory (fewer pages to fault in)
        for start in range(0, len(pending), CHUNK):
            chunk = pending[start : start + CHUNK]
            results = validate_entries([record.raw for record in chunk if record.raw is not None])
            for record, (model, error) in zip(chunk, results, strict=True):
                self._keep(record, model, error)

    def _keep(self, record: Record, model: SessionEntry, error: str | None) -> None:
        if error is not None:
            self._diagnostics.append(
                SessionDiagnostic(
                    self._source(),
                    record.line,
                    f"entry {record.id} ({record.type}) does not match the session format ({error}); "
                    "it is kept but left out of the context",
                )
            )
        record.model = model
        if error is None:
            record.raw = None  # the model round-trips every field: keep one copy

    def get(self, entry_id: str) -> SessionEntry | None:
        record = self.by_id.get(entry_id)
        return self.model_of(record) if record is not None else None

    def label(self, entry_id: str) -> str | None:
        label = self.labels.get(entry_id)
        return label[0] if label else None

    def context(self) -> ContextCache:
        """The context of the active branch (rebuilt when the leaf moved)."""
        cache = self.cache
        if not cache.valid or cache.leaf_id != self.leaf_id:
            with no_gc():
                cache.rebuild(self.branch(None), self.leaf_id)
        return cache

    def branch(self, from_id: str | None) -> list[Record]:
        """The records from the root to ``from_id`` (``None``: the leaf)."""
        start = self.leaf_id if from_id is None else from_id
        cache = self.cache
        if cache.valid and cache.leaf_id == start and start is not None:
            return list(cache.path)
        records = self.records
        if self._linear and records and records[-1].id == start:  # a session without branches
            return list(records)
        get = self.by_id.get
        record = get(start) if start is not None else None
        path: list[Record] = []
        append = path.append
        limit = len(self.records)
        remaining = limit + 1
        while record is not None and remaining:
            append(record)
            remaining -= 1
            parent = record.parent_id
            record = get(parent) if parent is not None else None
        if len(path) > limit:  # a parent cycle (a repeated id): stop at the first revisit
            seen: set[int] = set()
            unique = []
            for item in path:
                if id(item) in seen:
                    break
                seen.add(id(item))
                unique.append(item)
            path = unique
        path.reverse()
        return path

    def on_active_branch(self, entry_id: str) -> bool:
        cache = self.cache
        if cache.valid and cache.leaf_id == self.leaf_id:
            return any(record.id == entry_id for record in cache.path)
        return any(record.id == entry_id for record in self.branch(None))

    def tree(self) -> list[SessionTreeNode]:
        """The entries as a tree: roots (normally one) with children sorted oldest first.
        An entry whose parent is missing is a root; a repeated id keeps its first entry."""
        nodes: dict[str, SessionTreeNode] = {}
        order: list[tuple[Record, SessionTreeNode]] = []
        for record in self.records:
            if record.id in nodes:
                continue
            label = self.labels.get(record.id)
            node = SessionTreeNode(self.model_of(record), [], label[0] if label else None, label[1] if label else None)
            nodes[record.id] = node
            order.append((record, node))
        roots: list[SessionTreeNode] = []
        for record, node in order:
            parent = nodes.get(record.parent_id) if record.parent_id and record.parent_id != record.id else None
            (parent.children if parent is not None else roots).append(node)
        stack = list(roots)
        while stack:
            node = stack.pop()
            node.children.sort(key=lambda child: iso_to_ms(child.entry.timestamp))
            stack.extend(node.children)
        return roots

    def path_copy(self, leaf_id: str) -> list[dict[str, Any]]:
        """The path to ``leaf_id`` as raw entries for a new session: label entries left
        out (the path re-chained), followed by one label entry per label still set on a
        copied entry."""
        out: list[dict[str, Any]] = []
        label_successor: dict[str, str] = {}
        pending: list[str] = []
        parent: str | None = None
        for record in self.branch(leaf_id):
            if record.type == "label":
                pending.append(record.id)
                continue
            for label_id in pending:
                label_successor[label_id] = record.id
            pending.clear()
            raw = dict(record.to_json())
            raw["parentId"] = parent
            if record.type == "compaction":
                kept = raw.get("firstKeptEntryId")
                if isinstance(kept, str) and kept != record.id:
                    raw["firstKeptEntryId"] = label_successor.get(kept, kept)
            out.append(raw)
            parent = record.id
        ids = {raw["id"] for raw in out}
        for target, (label, timestamp) in self.labels.items():
            if target not in ids:
                continue
            label_id = new_entry_id(ids)
            ids.add(label_id)
            out.append(
                {
                    "type": "label",
                    "id": label_id,
                    "parentId": parent,
                    "timestamp": timestamp,
                    "targetId": target,
                    "label": label,
                }
            )
            parent = label_id
        return out


__all__ = ["EntryTree", "SessionTreeNode"]
