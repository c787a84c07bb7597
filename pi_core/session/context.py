"""From the entry tree to the model's context.

The context follows the path from the root to the leaf:

1. settings: the thinking level and the model are restored from the *whole* path (a
   ``thinking_level_change`` sets the level; a ``model_change`` or an assistant message
   sets the model: the later one wins);
2. selection: with a compaction on the path, the latest one comes first, followed by the
   entries from its ``firstKeptEntryId`` up to it (system messages excluded: the
   compaction's checkpoint replaces them) and every entry after it. A compaction whose
   ``firstKeptEntryId`` is its own id keeps nothing before it;
3. projection: each selected entry contributes its messages; the latest ``context_edit``
   of an entry (among the selected ones) omits it (``replacement: null``) or replaces its
   content.

:class:`ContextCache` keeps this result for the current leaf and extends it when an entry
is appended under the leaf, so a turn costs O(1) instead of O(history). Branch changes,
compactions and context edits of earlier entries rebuild it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any, NamedTuple, overload

from pi_hookspecs import (
    AgentMessage,
    AssistantMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    ContextEditEntry,
    CustomMessage,
    CustomMessageEntry,
    MessageEntry,
    SessionEntry,
    TextContent,
    ToolResultMessage,
)
from pi_hookspecs.events import ProjectedEntry
from pi_hookspecs.messages import UnknownMessage
from pi_hookspecs.record import dataclass

from .paths import iso_to_ms
from .records import Record

_EDITABLE = (AssistantMessage, ToolResultMessage, CustomMessage)
_NO_MESSAGES: tuple[AgentMessage, ...] = ()


class ModelRef(NamedTuple):
    """The model a session uses: ``provider`` and ``model_id``."""

    provider: str
    model_id: str


class MessageSnapshot(Sequence[AgentMessage]):
    """An immutable view of the first ``len`` messages of an append-only list: taking it
    costs O(1) however long the conversation is, and later appends do not change it.
    Compares equal to any sequence with the same messages."""

    __slots__ = ("_items", "_length")

    def __init__(self, items: list[AgentMessage], length: int | None = None) -> None:
        self._items = items
        self._length = len(items) if length is None else length

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> AgentMessage: ...
    @overload
    def __getitem__(self, index: slice) -> list[AgentMessage]: ...
    def __getitem__(self, index: int | slice) -> AgentMessage | list[AgentMessage]:
        if isinstance(index, slice):
            return self._items[: self._length][index]
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("message index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[AgentMessage]:
        return islice(self._items, self._length)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._length and all(a == b for a, b in zip(self, other, strict=False))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"MessageSnapshot({list(self)!r})"


@dataclass(slots=True)
class SessionContext:
    """What the model sees next, and the settings to use."""

    messages: Sequence[AgentMessage]
    thinking_level: str = "off"
    model: ModelRef | None = None
    thinking_level_set: bool = False
    """Whether a ``thinking_level_change`` entry on the branch set ``thinking_level``
    (else it is the default)."""


@dataclass(slots=True)
class SessionProjection:
    """The context messages together with the entries they come from."""

    entries: list[ProjectedEntry]
    messages: list[AgentMessage]
    thinking_level: str = "off"
    model: ModelRef | None = None


# --------------------------------------------------------------------------- entry -> messages


def entry_messages(entry: SessionEntry) -> tuple[AgentMessage, ...]:
    """The messages one entry contributes to the context (before context edits)."""
    if isinstance(entry, MessageEntry):
        return (entry.message,)
    if isinstance(entry, CustomMessageEntry):
        message = CustomMessage(
            custom_type=entry.custom_type,
            content=entry.content if entry.content is not None else [],
            display=entry.display,
            details=entry.details,
            timestamp=iso_to_ms(entry.timestamp),
        )
        return (message,)
    if isinstance(entry, BranchSummaryEntry):
        if not entry.summary:
            return _NO_MESSAGES
        return (
            BranchSummaryMessage(summary=entry.summary, from_id=entry.from_id, timestamp=iso_to_ms(entry.timestamp)),
        )
    if isinstance(entry, CompactionEntry):
        summary = CompactionSummaryMessage(
            summary=entry.summary, tokens_before=entry.tokens_before, timestamp=iso_to_ms(entry.timestamp)
        )
        return (entry.system_message, summary) if entry.system_message is not None else (summary,)
    return _NO_MESSAGES


def apply_edit(messages: tuple[AgentMessage, ...], edit: ContextEditEntry | None) -> tuple[AgentMessage, ...]:
    """Apply a context edit: ``None`` replacement omits, otherwise only the content of
    user/assistant/toolResult/custom messages is replaced (a string becomes one text block
    for assistant and toolResult messages, which require block lists)."""
    if edit is None or not messages:
        return messages
    replacement = edit.replacement
    if replacement is None:
        return _NO_MESSAGES
    out: list[AgentMessage] = []
    for message in messages:
        role = getattr(message, "role", None)
        if role not in ("user", "assistant", "toolResult", "custom") or isinstance(message, UnknownMessage):
            out.append(message)
            continue
        content: Any = replacement.content
        if isinstance(content, str) and isinstance(message, AssistantMessage | ToolResultMessage):
            content = [TextContent(text=content)]
        out.append(message.model_copy(update={"content": content}))
    return tuple(out)


# --------------------------------------------------------------------------- selection


def select_context(path: Sequence[Record]) -> list[Record]:
    """The compaction-aware selection of a root-to-leaf path (step 2 of the module doc)."""
    compaction_index = -1
    for index in range(len(path) - 1, -1, -1):
        if path[index].type == "compaction":
            compaction_index = index
            break
    if compaction_index < 0:
        return list(path)
    compaction = path[compaction_index]
    first_kept = compaction.field("firstKeptEntryId", "first_kept_entry_id")
    selected = [compaction]
    found = False
    for record in path[:compaction_index]:
        if record.id == first_kept:
            found = True
        if found and not (record.type == "message" and record.role == "system"):
            selected.append(record)
    selected.extend(path[compaction_index + 1 :])
    return selected


_VALIDATED = frozenset({"message", "custom_message", "branch_summary", "compaction", "context_edit"})
"""The entry types a context rebuild reads the models of."""


def _model_ref(record: Record) -> ModelRef | None:
    """The model a ``model_change`` entry or an assistant message names, if any."""
    if record.type == "model_change":
        provider, model_id = record.field("provider", "provider"), record.field("modelId", "model_id")
    elif record.raw is not None:
        message = record.raw.get("message")
        provider, model_id = message.get("provider"), message.get("model")  # type: ignore[union-attr]
    else:
        message = getattr(record.model, "message", None)
        provider, model_id = getattr(message, "provider", None), getattr(message, "model", None)
    if isinstance(provider, str) and isinstance(model_id, str):
        return ModelRef(provider, model_id)
    return None


class ContextCache:
    """The projection of the current leaf, extended incrementally on append."""

    def __init__(
        self,
        model_of: Callable[[Record], SessionEntry],
        validate: Callable[[Sequence[Record], frozenset[str]], None] | None = None,
    ) -> None:
        self._model_of = model_of
        self._validate = validate
        self.valid = False
        self.leaf_id: str | None = None
        self.path: list[Record] = []
        self.selected: list[Record] = []
        self.contributions: list[tuple[AgentMessage, ...]] = []
        self.messages: list[AgentMessage] = []
        #: The :class:`ProjectedEntry` of each selected entry, once asked for; extended
        #: on append (a turn end's preview costs O(new entries), not O(history)).
        self._projected: list[ProjectedEntry] | None = None
        self.edits: dict[str, ContextEditEntry] = {}
        self._selected_ids: set[str] | None = set()
        self.thinking_level = "off"
        self.thinking_level_set = False
        self.model: ModelRef | None = None

    @property
    def selected_ids(self) -> set[str]:
        """The ids of the selected entries."""
        if self._selected_ids is None:
            self._selected_ids = {record.id for record in self.selected}
        return self._selected_ids

    def invalidate(self) -> None:
        self.valid = False

    def rebuild(self, path: list[Record], leaf_id: str | None) -> None:
        self.path = path
        self.leaf_id = leaf_id
        self._restore_settings(path)
        selected = self.selected = select_context(path)
        self._selected_ids = None  # built when a context edit is appended (rare)
        if self._validate is not None:  # what is projected below, validated at once
            self._validate(selected, _VALIDATED)
        model_of = self._model_of
        edits: dict[str, ContextEditEntry] = {}
        for record in selected:
            if record.type == "context_edit":
                edit = model_of(record)
                if isinstance(edit, ContextEditEntry):
                    edits[edit.target_id] = edit
        self.edits = edits
        contributions: list[tuple[AgentMessage, ...]] = []
        messages: list[AgentMessage] = []
        for index, record in enumerate(selected):
            kind = record.type
            if kind == "message" and not (edits and record.id in edits):  # the usual entry, inline
                entry = record.model
                if entry is None:
                    entry = model_of(record)
                if type(entry) is MessageEntry or isinstance(entry, MessageEntry):
                    message = entry.message
                    contributions.append((message,))
                    messages.append(message)
                else:
                    contributions.append(_NO_MESSAGES)
                continue
            # Only the latest compaction (selected first) contributes its checkpoint and
            # summary; an older one inside the kept range is shown, not sent.
            if kind == "compaction" and index > 0:
                contribution = _NO_MESSAGES
            else:
                contribution = self._project(record)
            contributions.append(contribution)
            messages.extend(contribution)
        self.contributions = contributions
        self._projected = None
        self.messages = messages
        self.valid = True

    def extend(self, record: Record) -> bool:
        """Add ``record``, a new child of the cached leaf. False when a rebuild is needed."""
        if record.type == "compaction":
            return False
        if record.type == "context_edit":
            target = record.field("targetId", "target_id")
            if target in self.selected_ids:
                return False
            edit = self._model_of(record)
            if isinstance(edit, ContextEditEntry):
                self.edits[edit.target_id] = edit
        self._update_settings(record)
        self.path.append(record)
        self.selected.append(record)
        if self._selected_ids is not None:
            self._selected_ids.add(record.id)
        contribution = self._project(record)
        self.contributions.append(contribution)
        if self._projected is not None:
            self._projected.append(ProjectedEntry(self._model_of(record), contribution))
        self.messages.extend(contribution)
        self.leaf_id = record.id
        return True

    def _project(self, record: Record) -> tuple[AgentMessage, ...]:
        if record.type not in ("message", "custom_message", "branch_summary", "compaction"):
            return _NO_MESSAGES
        return apply_edit(entry_messages(self._model_of(record)), self.edits.get(record.id))

    def _restore_settings(self, path: Sequence[Record]) -> None:
        """The thinking level and model of the whole ``path``: the last entry that sets
        each wins, so the path is read backwards until both are found."""
        level: str | None = None
        model: ModelRef | None = None
        for record in reversed(path):
            kind = record.type
            if kind == "message":
                if model is None and record.role == "assistant":
                    model = _model_ref(record)
            elif kind == "thinking_level_change":
                if level is None:
                    value = record.field("thinkingLevel", "thinking_level")
                    level = value if isinstance(value, str) else None
            elif kind == "model_change" and model is None:
                model = _model_ref(record)
            if level is not None and model is not None:
                break
        self.thinking_level = level if level is not None else "off"
        self.thinking_level_set = level is not None
        self.model = model

    def _update_settings(self, record: Record) -> None:
        kind = record.type
        if kind == "thinking_level_change":
            level = record.field("thinkingLevel", "thinking_level")
            if isinstance(level, str):
                self.thinking_level = level
                self.thinking_level_set = True
        elif kind == "model_change" or (kind == "message" and record.role == "assistant"):
            model = _model_ref(record)
            if model is not None:
                self.model = model

    def projection(self) -> SessionProjection:
        projected = self._projected
        if projected is None:
            model_of = self._model_of
            projected = self._projected = [
                ProjectedEntry(record.model if record.model is not None else model_of(record), contribution)
                for record, contribution in zip(self.selected, self.contributions, strict=True)
            ]
        return SessionProjection(list(projected), list(self.messages), self.thinking_level, self.model)
