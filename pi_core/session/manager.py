"""The session manager: an append-only tree of entries in a JSONL file (format v3).

Every entry has an ``id`` and the ``parentId`` it continues from; the *leaf* is the
current position. Appending adds a child of the leaf and moves the leaf to it; branching
moves the leaf to an earlier entry without deleting anything. The file starts with a
session header; entries follow one per line (see ``docs/sessions.md``).

A new session is kept in memory until its first assistant message exists; then the
header and everything so far are written at once and every later entry is appended
immediately. Opening a file locks it (see :mod:`pi_core.session.storage`).

The manager is the public face of three parts: :class:`~pi_core.session.tree.EntryTree`
(the entries in memory, tree and branch queries, the context cache),
:class:`~pi_core.session.persistence.SessionWriter` (the file: deferred creation,
appends, closing) and :func:`~pi_core.session.persistence.read_session` (opening with
repair and migration).
"""

from __future__ import annotations

import builtins
import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import TypeAdapter

from pi_hookspecs import SESSION_VERSION as CURRENT_VERSION
from pi_hookspecs import (
    AgentMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    ContextEditEntry,
    ContextEditReplacement,
    CustomEntry,
    CustomMessageEntry,
    DraftCompaction,
    DraftContextEdit,
    DraftCustom,
    DraftCustomMessage,
    DraftEntry,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    PiModel,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    SessionView,
    SystemMessage,
    TextContent,
    ThinkingLevelChangeEntry,
    Usage,
    UsageEntry,
    UserContent,
)

from .context import MessageSnapshot, ModelRef, SessionContext, SessionProjection
from .errors import EntryNotFoundError, SessionDiagnostic
from .messages import current_system_message
from .migration import migrate
from .paths import (
    check_session_id,
    filters_by_cwd,
    iso_now,
    iso_to_ms,
    new_entry_id,
    new_session_id,
    resolve_cwd,
    resolve_session_dir,
    session_file_name,
)
from .persistence import FileListener, SessionWriteError, SessionWriter, read_session
from .records import Record, entry_json, no_gc
from .storage import SessionFile, dump_line
from .tree import EntryTree, SessionTreeNode


@functools.cache
def _message_adapter() -> TypeAdapter[AgentMessage]:
    return TypeAdapter(AgentMessage)


@functools.cache
def _draft_adapter() -> TypeAdapter[DraftEntry]:
    return TypeAdapter(DraftEntry)


_EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult"})
_BLOCK_CONTENT_ROLES = frozenset({"assistant", "toolResult"})


class SessionManager:
    """A session: its header, its entry tree, the leaf and the model context.

    Create one with :meth:`create`, :meth:`open`, :meth:`continue_recent`,
    :meth:`in_memory` or :meth:`fork_from`. It implements the read-only
    :class:`pi_hookspecs.SessionView` that plugins see as ``ctx.session_manager``.
    Not thread-safe: use it from one thread (the event loop).
    """

    def __init__(self, cwd: str, *, session_dir: str | None, persist: bool, read_only: bool = False) -> None:
        """Low level: an empty manager. Use the class-method constructors instead."""
        self._cwd = resolve_cwd(cwd)
        self._session_dir = session_dir
        self._header: dict[str, Any] = {}
        self._header_model: SessionHeader | None = None
        #: Problems found while reading the file (skipped lines, repairs, invalid entries).
        self.diagnostics: list[SessionDiagnostic] = []
        self._writer = SessionWriter(persist=persist, read_only=read_only)
        self._tree = EntryTree(self.diagnostics, lambda: self._writer.path or "<memory>")

    # =================================================================== constructors

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        *,
        session_dir: str | os.PathLike[str] | None = None,
        session_id: str | None = None,
        parent_session: str | None = None,
    ) -> SessionManager:
        """A new file-backed session for ``cwd`` (written once it has an assistant message).

        ``session_dir`` overrides ``$PI_CODING_AGENT_SESSION_DIR``, which overrides
        ``<agent dir>/sessions/--<cwd>--/``.
        """
        directory = resolve_session_dir(cwd, session_dir)
        manager = cls(os.fspath(cwd), session_dir=str(directory), persist=True)
        manager._start(session_id, parent_session)
        return manager

    @classmethod
    def in_memory(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        session_id: str | None = None,
        parent_session: str | None = None,
        entries: Iterable[SessionEntry | SessionHeader | Mapping[str, Any]] | None = None,
    ) -> SessionManager:
        """A session that is never written to disk. ``entries`` (raw JSON objects or
        models, optionally led by a header) pre-populates it; old versions are migrated."""
        raws = [item.to_json() if isinstance(item, PiModel) else dict(item) for item in entries or ()]
        header_cwd = raws[0].get("cwd") if raws and raws[0].get("type") == "session" else None
        if cwd is None:
            cwd = header_cwd if isinstance(header_cwd, str) and header_cwd else os.getcwd()
        manager = cls(os.fspath(cwd), session_dir=None, persist=False)
        if raws and raws[0].get("type") == "session":
            migrate(raws)
            manager._header = raws[0]
            manager._tree.load(raws[1:], [0] * (len(raws) - 1), path="<memory>")
        else:
            manager._start(session_id, parent_session)
            if raws:
                manager._tree.load(raws, [0] * len(raws), path="<memory>")
        return manager

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        session_dir: str | os.PathLike[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        read_only: bool = False,
    ) -> SessionManager:
        """Open a session file to continue it (it is locked: a second process gets
        :class:`SessionLockedError`). A missing file becomes a new session at that path;
        an empty file is given a header. The working directory is the header's ``cwd``
        unless ``cwd`` is given; new sessions made from this one (``/new``, forks) go to
        ``session_dir`` (default: the file's directory).

        ``read_only=True`` neither locks, repairs, migrates on disk nor allows appends.
        """
        file_path = os.path.abspath(os.fspath(path))
        directory = os.fspath(session_dir) if session_dir is not None else os.path.dirname(file_path)
        if not os.path.exists(file_path):
            manager = cls(os.fspath(cwd) if cwd is not None else os.getcwd(), session_dir=directory, persist=True)
            manager._start(None, None, file_path=file_path)
            manager._writer.read_only = read_only
            return manager
        if read_only:
            with builtins.open(file_path, "rb") as handle:
                data = handle.read()
            file = None
        else:
            file, data = SessionFile.open_locked(file_path)
        try:
            with no_gc():
                return cls._from_bytes(file_path, data, file, directory, cwd, read_only)
        except BaseException:
            if file is not None:
                file.close()
            raise

    @classmethod
    def _from_bytes(
        cls,
        file_path: str,
        data: bytes,
        file: SessionFile | None,
        directory: str,
        cwd: str | os.PathLike[str] | None,
        read_only: bool,
    ) -> SessionManager:
        if not data:
            manager = cls(os.fspath(cwd) if cwd is not None else os.getcwd(), session_dir=directory, persist=True)
            manager._start(None, None, file_path=file_path)
            manager._writer.read_only = read_only
            if file is not None:
                file.replace([dump_line(manager._header)])
                manager._writer.file = file
            return manager
        stored = read_session(file_path, data, file)
        header_cwd = stored.header.get("cwd")
        chosen_cwd = os.fspath(cwd) if cwd is not None else header_cwd if isinstance(header_cwd, str) else os.getcwd()
        manager = cls(chosen_cwd or os.getcwd(), session_dir=directory, persist=True, read_only=read_only)
        manager._writer.path = file_path
        manager._writer.file = file
        manager.diagnostics.extend(stored.diagnostics)
        manager._header = stored.header
        manager._tree.load(stored.entries, stored.line_numbers, path=file_path)
        return manager

    @classmethod
    def continue_recent(
        cls, cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None
    ) -> SessionManager:
        """The most recently modified session of ``cwd`` (``pi -c``), or a new one."""
        directory = resolve_session_dir(cwd, session_dir)
        cwd_filter = resolve_cwd(cwd) if filters_by_cwd(cwd, directory) else None
        from .listing import find_most_recent  # listing sessions: only when asked to

        recent = find_most_recent(directory, cwd_filter)
        if recent is None:
            return cls.create(cwd, session_dir=session_dir)
        return cls.open(recent, session_dir=directory, cwd=cwd)

    @classmethod
    def fork_from(
        cls,
        source_path: str | os.PathLike[str],
        target_cwd: str | os.PathLike[str],
        *,
        session_dir: str | os.PathLike[str] | None = None,
    ) -> SessionManager:
        """Copy a whole session (of any project) into a new session of ``target_cwd``;
        its header names the source as ``parentSession``. The source is not locked."""
        source = cls.open(source_path, read_only=True)
        directory = resolve_session_dir(target_cwd, session_dir)
        manager = cls(os.fspath(target_cwd), session_dir=str(directory), persist=True)
        manager._start(None, source.get_session_file())
        manager._adopt([dict(record.to_json()) for record in source._tree.records])
        manager.diagnostics.extend(source.diagnostics)
        manager.flush()
        return manager

    # ------------------------------------------------------------------ listing

    @staticmethod
    def list(
        cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None
    ) -> builtins.list[SessionInfo]:
        """The sessions of ``cwd``, newest first (``/resume``)."""
        from .listing import list_sessions

        return list_sessions(cwd, session_dir)

    @staticmethod
    def list_all(session_dir: str | os.PathLike[str] | None = None) -> builtins.list[SessionInfo]:
        """The sessions of every project, newest first."""
        from .listing import list_all_sessions

        return list_all_sessions(session_dir)

    @staticmethod
    def find(
        id_or_prefix: str,
        *,
        cwd: str | os.PathLike[str] | None = None,
        session_dir: str | os.PathLike[str] | None = None,
    ) -> str:
        """The file of the session with this id or unique id prefix (this project's
        sessions first). Raises :class:`SessionNotFoundError` / :class:`AmbiguousSessionError`."""
        from .listing import find_session

        return find_session(id_or_prefix, cwd=cwd, session_dir=session_dir)

    # =================================================================== loading

    def _start(self, session_id: str | None, parent_session: str | None, file_path: str | None = None) -> None:
        if session_id is not None:
            check_session_id(session_id)
        timestamp = iso_now()
        header: dict[str, Any] = {
            "type": "session",
            "version": CURRENT_VERSION,
            "id": session_id or new_session_id(),
            "timestamp": timestamp,
            "cwd": self._cwd,
        }
        if parent_session:
            header["parentSession"] = parent_session
        self._header = header
        self._header_model = None
        if self._writer.persist:
            self._writer.path = file_path or os.path.join(
                self._session_dir or ".", session_file_name(timestamp, header["id"])
            )

    def _adopt(self, raws: builtins.list[dict[str, Any]]) -> None:
        """Take over entries (already v3) copied from another session."""
        self._tree.load(raws, [0] * len(raws), path=self._writer.path or "<memory>")

    # =================================================================== SessionView (read)

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_id(self) -> str:
        return str(self._header.get("id", ""))

    def get_session_file(self) -> str | None:
        """The file path (also before the file is first written); ``None`` in memory."""
        return self._writer.path

    def get_session_dir(self) -> str | None:
        return self._session_dir

    def get_session_name(self) -> str | None:
        return self._tree.name

    def get_header(self) -> SessionHeader | None:
        if self._header_model is None and self._header:
            self._header_model = SessionHeader.model_validate(self._header)
        return self._header_model

    def get_entries(self) -> builtins.list[SessionEntry]:
        """Every entry in file order (the header excluded)."""
        tree = self._tree
        with no_gc():
            return [tree.model_of(record) for record in tree.records]

    def get_entry(self, entry_id: str) -> SessionEntry | None:
        return self._tree.get(entry_id)

    def get_leaf_id(self) -> str | None:
        return self._tree.leaf_id

    def get_leaf_entry(self) -> SessionEntry | None:
        leaf = self._tree.leaf_id
        return self._tree.get(leaf) if leaf is not None else None

    def get_label(self, entry_id: str) -> str | None:
        return self._tree.label(entry_id)

    def get_branch(self, from_id: str | None = None) -> builtins.list[SessionEntry]:
        """The entries from the root to ``from_id`` (default: the leaf), all types."""
        tree = self._tree
        model_of = tree.model_of
        with no_gc():
            return [record.model if record.model is not None else model_of(record) for record in tree.branch(from_id)]

    def get_children(self, parent_id: str) -> builtins.list[SessionEntry]:
        tree = self._tree
        return [tree.model_of(record) for record in tree.records if record.parent_id == parent_id]

    def get_entry_count(self) -> int:
        return len(self._tree.records)

    def get_tree(self) -> builtins.list[SessionTreeNode]:
        """The entries as a tree: roots (normally one) with children sorted oldest first.
        An entry whose parent is missing is a root; a repeated id keeps its first entry."""
        return self._tree.tree()

    def build_context_entries(self) -> builtins.list[SessionEntry]:
        """The compaction-aware entries of the active branch (the latest compaction
        first, then the kept entries and everything after it)."""
        tree = self._tree
        return [tree.model_of(record) for record in tree.context().selected]

    def build_session_projection(self) -> SessionProjection:
        """The context messages together with the entries they come from."""
        return self._tree.context().projection()

    def build_session_context(self) -> SessionContext:
        """The messages for the next model request plus the model and thinking level
        restored from the active branch. O(1) per appended entry (see :mod:`.context`);
        ``messages`` is an immutable snapshot (``list(...)`` it to get a mutable copy)."""
        cache = self._tree.context()
        return SessionContext(
            MessageSnapshot(cache.messages), cache.thinking_level, cache.model, cache.thinking_level_set
        )

    def get_model(self) -> ModelRef | None:
        return self._tree.context().model

    def get_thinking_level(self) -> str:
        return self._tree.context().thinking_level

    # =================================================================== appending

    def append_message(self, message: AgentMessage | Mapping[str, Any]) -> str:
        """Append a message (system, user, assistant, toolResult, bashExecution, custom)
        as a child of the leaf; returns the entry id. Summaries are entries of their own:
        use :meth:`append_compaction` / :meth:`branch_with_summary`."""
        if not isinstance(message, PiModel):
            message = _message_adapter().validate_python(message)
        if isinstance(message, CompactionSummaryMessage | BranchSummaryMessage):
            raise TypeError("summaries are appended with append_compaction() / branch_with_summary()")
        entry_id, parent_id, timestamp = self._next()
        entry = MessageEntry.model_construct(
            type="message", id=entry_id, parent_id=parent_id, timestamp=timestamp, message=message
        )
        return self._append(entry)

    def append_thinking_level_change(self, thinking_level: str) -> str:
        entry_id, parent_id, timestamp = self._next()
        # a string (what pi passes) needs no validator; anything else is validated
        make = ThinkingLevelChangeEntry.model_construct if type(thinking_level) is str else ThinkingLevelChangeEntry
        return self._append(make(id=entry_id, parent_id=parent_id, timestamp=timestamp, thinking_level=thinking_level))

    def append_model_change(self, provider: str, model_id: str) -> str:
        entry_id, parent_id, timestamp = self._next()
        typed = type(provider) is str and type(model_id) is str
        make = ModelChangeEntry.model_construct if typed else ModelChangeEntry
        return self._append(
            make(id=entry_id, parent_id=parent_id, timestamp=timestamp, provider=provider, model_id=model_id)
        )

    def append_usage(
        self,
        kind: str,
        provider: str,
        model: str,
        usage: Usage | Mapping[str, Any],
        note: str | None = None,
    ) -> str:
        """Usage that is no assistant message (e.g. ``kind="cache_warm"``); never context."""
        entry_id, parent_id, timestamp = self._next()
        extra = {"note": note} if note else {}
        entry = UsageEntry(
            id=entry_id,
            parent_id=parent_id,
            timestamp=timestamp,
            kind=kind,
            provider=provider,
            model=model,
            usage=Usage.model_validate(usage),
            **extra,
        )
        return self._append(entry)

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        *,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Usage | None = None,
        system_message: SystemMessage | None = None,
    ) -> str:
        """Append a compaction: the context becomes its checkpoint and summary, then the
        entries from ``first_kept_entry_id`` on (``None``: keep nothing before it).

        ``system_message`` defaults to the replay of every system message of the current
        context (the complete prompt and tools at this boundary). The file is fsynced."""
        entry_id, parent_id, timestamp = self._next()
        if system_message is None:
            checkpoint = current_system_message(self._tree.context().messages)
            if checkpoint is not None:
                system_message = checkpoint.model_copy(update={"timestamp": iso_to_ms(timestamp)})
        entry = CompactionEntry(
            id=entry_id,
            parent_id=parent_id,
            timestamp=timestamp,
            summary=summary,
            first_kept_entry_id=first_kept_entry_id or entry_id,
            tokens_before=tokens_before,
            details=details,
            usage=usage,
            from_hook=from_hook,
            system_message=system_message,
        )
        result = self._append(entry)
        self._writer.sync()
        return result

    def append_context_edit(
        self,
        target_id: str,
        replacement: ContextEditReplacement | str | Sequence[UserContent] | Mapping[str, Any] | None,
    ) -> str:
        """Change what an earlier user/assistant/toolResult/custom-message entry of the
        active branch contributes to future context: ``None`` omits it, anything else
        replaces its content (raw history is untouched). The latest edit wins."""
        target = self._tree.by_id.get(target_id)
        if target is None:
            raise EntryNotFoundError(target_id)
        if not self._tree.on_active_branch(target_id):
            raise EntryNotFoundError(target_id, "is not on the active branch")
        role = target.role if target.type == "message" else "custom" if target.type == "custom_message" else None
        if role not in _EDITABLE_ROLES and role != "custom":
            raise ValueError(f"Entry {target_id} does not contribute editable model content")
        value: ContextEditReplacement | None = None
        if replacement is not None:
            if isinstance(replacement, ContextEditReplacement):
                value = replacement
            elif isinstance(replacement, Mapping):
                value = ContextEditReplacement.model_validate(replacement)
            else:
                value = ContextEditReplacement.model_validate({"content": replacement})
            if isinstance(value.content, str) and role in _BLOCK_CONTENT_ROLES:
                value = ContextEditReplacement(content=[TextContent(text=value.content)])
        entry_id, parent_id, timestamp = self._next()
        entry = ContextEditEntry(
            id=entry_id, parent_id=parent_id, timestamp=timestamp, target_id=target_id, replacement=value
        )
        return self._append(entry)

    def append_branch_summary(
        self,
        summary: str,
        from_id: str | None,
        *,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Usage | None = None,
    ) -> str:
        """A summary of an abandoned branch (ending at ``from_id``), appended at the leaf."""
        entry_id, parent_id, timestamp = self._next()
        entry = BranchSummaryEntry(
            id=entry_id,
            parent_id=parent_id,
            timestamp=timestamp,
            from_id=from_id or "root",
            summary=summary,
            details=details,
            usage=usage,
            from_hook=from_hook,
        )
        return self._append(entry)

    def append_custom_entry(self, custom_type: str, data: Any = None) -> str:
        """Plugin state; never part of the context."""
        entry_id, parent_id, timestamp = self._next()
        return self._append(
            CustomEntry(id=entry_id, parent_id=parent_id, timestamp=timestamp, custom_type=custom_type, data=data)
        )

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: str | Sequence[UserContent],
        display: bool = True,
        details: Any = None,
    ) -> str:
        """A plugin message that is part of the context (sent as user content)."""
        entry_id, parent_id, timestamp = self._next()
        entry = CustomMessageEntry(
            id=entry_id,
            parent_id=parent_id,
            timestamp=timestamp,
            custom_type=custom_type,
            content=content if isinstance(content, str) else builtins.list(content),
            display=display,
            details=details,
        )
        return self._append(entry)

    def set_label(self, entry_id: str, label: str | None) -> str:
        """Label an entry (the latest label wins; ``None`` or ``""`` clears it).
        Raises :class:`EntryNotFoundError` for an unknown id."""
        if entry_id not in self._tree.by_id:
            raise EntryNotFoundError(entry_id)
        new_id, parent_id, timestamp = self._next()
        return self._append(
            LabelEntry(id=new_id, parent_id=parent_id, timestamp=timestamp, target_id=entry_id, label=label or None)
        )

    append_label_change = set_label

    def append_session_info(self, name: str | None) -> str:
        """Name the session (line breaks become spaces; an empty name clears it)."""
        clean = re.sub(r"[\r\n]+", " ", name or "").strip()
        entry_id, parent_id, timestamp = self._next()
        return self._append(SessionInfoEntry(id=entry_id, parent_id=parent_id, timestamp=timestamp, name=clean))

    set_session_name = append_session_info

    def append_draft(self, draft: DraftEntry | Mapping[str, Any]) -> str:
        """Append an entry a ``turn_end`` / ``agent_before_settle`` handler proposed."""
        if not isinstance(draft, PiModel):
            draft = _draft_adapter().validate_python(draft)
        if isinstance(draft, DraftCustom):
            return self.append_custom_entry(draft.custom_type, draft.data)
        if isinstance(draft, DraftCustomMessage):
            return self.append_custom_message_entry(draft.custom_type, draft.content, draft.display, draft.details)
        if isinstance(draft, DraftContextEdit):
            return self.append_context_edit(draft.target_id, draft.replacement)
        if isinstance(draft, DraftCompaction):
            return self.append_compaction(
                draft.summary, draft.first_kept_entry_id, draft.tokens_before, details=draft.details, usage=draft.usage
            )
        raise TypeError(f"not a draft entry: {draft!r}")

    def _next(self) -> tuple[str, str | None, str]:
        self._check_writable()
        return new_entry_id(self._tree.by_id), self._tree.leaf_id, iso_now()

    def _check_writable(self) -> None:
        self._writer.check_writable(self.get_session_id())

    def _append(self, entry: SessionEntry) -> str:
        record = Record(entry.id, entry.parent_id, entry.type, None, entry)
        tree = self._tree
        if self._writer.persist:  # (an in-memory session makes its JSON when asked for)
            # persisted before it is committed to memory: a failed write leaves both unchanged
            self._writer.write(
                entry_json(entry),
                start_file=tree.has_assistant or record.role == "assistant",
                header=self._header,
                earlier=tree.records,
            )
        tree.add(record)
        return entry.id

    # =================================================================== branching

    def branch(self, entry_id: str) -> None:
        """Move the leaf to ``entry_id``: the next entry continues from there."""
        if entry_id not in self._tree.by_id:
            raise EntryNotFoundError(entry_id)
        self._tree.leaf_id = entry_id

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry: the next entry is a new root."""
        self._tree.leaf_id = None

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        *,
        details: Any = None,
        from_hook: bool | None = None,
        usage: Usage | None = None,
    ) -> str:
        """Branch to ``branch_from_id`` (``None``: a new root) and append a summary of the
        branch being left (its ``fromId`` is the previous leaf, ``"root"`` if none)."""
        if branch_from_id is not None and branch_from_id not in self._tree.by_id:
            raise EntryNotFoundError(branch_from_id)
        self._check_writable()
        from_id = self._tree.leaf_id
        self._tree.leaf_id = branch_from_id
        return self.append_branch_summary(summary, from_id, details=details, from_hook=from_hook, usage=usage)

    def fork(
        self,
        entry_id: str,
        position: Literal["before", "at"] = "before",
        *,
        session_dir: str | os.PathLike[str] | None = None,
    ) -> SessionManager:
        """A NEW session holding the path to ``entry_id`` (``"at"``: through the entry;
        ``"before"``: up to the user message ``entry_id``, which the caller typically puts
        back into the editor). Its header names this session as ``parentSession``; this
        manager is unchanged (close it when switching)."""
        record = self._tree.by_id.get(entry_id)
        if record is None:
            raise EntryNotFoundError(entry_id)
        if position == "at":
            target: str | None = entry_id
        elif position == "before":
            if record.type != "message" or record.role != "user":
                raise ValueError(f"Entry {entry_id} is not a user message; fork with position='at'")
            target = record.parent_id
        else:
            raise ValueError(f"position must be 'before' or 'at', not {position!r}")
        return self._branched(target, session_dir)

    def clone(self, *, session_dir: str | os.PathLike[str] | None = None) -> SessionManager:
        """A NEW session holding the active branch (``/clone``)."""
        return self._branched(self._tree.leaf_id, session_dir)

    def _branched(self, leaf_id: str | None, session_dir: str | os.PathLike[str] | None) -> SessionManager:
        directory = os.fspath(session_dir) if session_dir is not None else self._session_dir
        persist = self._writer.persist
        manager = SessionManager(self._cwd, session_dir=directory, persist=persist)
        manager._start(None, self._writer.path if persist else None)
        if leaf_id is not None:
            manager._adopt(self._tree.path_copy(leaf_id))
            if persist and manager._tree.has_assistant:
                manager._create_file()
        return manager

    # =================================================================== file life cycle

    def is_persisted(self) -> bool:
        return self._writer.persist

    @property
    def is_flushed(self) -> bool:
        """Whether the file exists and receives every append."""
        return self._writer.file is not None

    @property
    def closed(self) -> bool:
        return self._writer.closed

    def check_storage(self) -> None:
        """For a session whose file is not written yet: check now that it can be (its
        folder is created, a one-byte file written there and removed), so a read-only or
        full file system is found before the first request rather than after its
        answer. Raises :class:`~pi_core.session.persistence.SessionWriteError`."""
        self._writer.probe()

    def add_file_listener(self, listener: FileListener) -> Callable[[], None]:
        """Hear of what happens to the session file: a write that failed (also raised),
        a file deleted or replaced while the session ran (written anew, see
        :class:`~pi_core.session.persistence.SessionFileEvent`). Returns the function
        that removes the listener. Without listeners a deleted or replaced file is
        reported on stderr."""
        listeners = self._writer.listeners
        listeners.append(listener)

        def remove() -> None:
            if listener in listeners:
                listeners.remove(listener)

        return remove

    @property
    def write_failure(self) -> SessionWriteError | None:
        """The last write to this session's file that failed, if one did."""
        return self._writer.failure

    def flush(self) -> None:
        """Write the header (and anything buffered) now, without waiting for the first
        assistant message: for sessions whose id is handed to someone else early."""
        self._check_writable()
        if self._writer.persist and self._writer.file is None:
            self._create_file()

    def _create_file(self) -> None:
        self._writer.create(self._header, self._tree.records)

    def close(self) -> None:
        """fsync and close the file, releasing its lock. Appends then raise."""
        self._writer.close()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self._writer.path or "in memory"
        return f"<SessionManager {self.get_session_id()} {where} entries={len(self._tree.records)}>"


if TYPE_CHECKING:
    from .listing import SessionInfo

    def _implements_session_view(manager: SessionManager) -> SessionView:
        return manager


__all__ = ["SessionManager", "SessionTreeNode"]
