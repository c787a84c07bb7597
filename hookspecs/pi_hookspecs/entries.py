"""Session entries: the lines of a session JSONL file (format version 3).

Each entry has an ``id`` (8 hex characters), the ``parent_id`` it continues from
(``None`` for a root) and an ISO-8601 ``timestamp``. The file begins with a
:class:`SessionHeader`. Draft entries (:data:`DraftEntry`) are what ``turn_end`` and
``agent_before_settle`` handlers propose; pi assigns ids when it appends them.
"""

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, Discriminator, Field, Tag

from ._base import PiModel
from .messages import AgentMessage, SystemMessage, Usage, UserContent

SESSION_VERSION = 3


class SessionHeader(PiModel):
    type: Literal["session"] = "session"
    version: int = SESSION_VERSION
    id: str
    timestamp: str
    cwd: str
    parent_session: str | None = None


class EntryBase(PiModel):
    _keep_none: ClassVar[frozenset[str]] = frozenset({"parent_id"})
    type: str
    id: str
    parent_id: str | None = None
    timestamp: str = ""


class MessageEntry(EntryBase):
    type: Literal["message"] = "message"
    message: AgentMessage


class ModelChangeEntry(EntryBase):
    type: Literal["model_change"] = "model_change"
    provider: str
    model_id: str


class ThinkingLevelChangeEntry(EntryBase):
    type: Literal["thinking_level_change"] = "thinking_level_change"
    thinking_level: str


class UsageEntry(EntryBase):
    type: Literal["usage"] = "usage"
    kind: str
    provider: str | None = None
    model: str | None = None
    usage: Usage = Field(default_factory=Usage.model_construct)


class CompactionEntry(EntryBase):
    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept_entry_id: str
    tokens_before: int = 0
    system_message: SystemMessage | None = None
    usage: Usage | None = None
    details: Any = None
    from_hook: bool | None = None


class ContextEditReplacement(PiModel):
    """The new model-visible content of an edited entry; written ``{"content": ...}``."""

    content: str | list[UserContent]


def _wrap_replacement(value: Any) -> Any:
    # A bare string or block list is accepted as shorthand for {"content": value}.
    if isinstance(value, (str, list)):
        return {"content": value}
    return value


Replacement = Annotated[ContextEditReplacement | None, BeforeValidator(_wrap_replacement)]
"""``None`` omits the target from the model context; otherwise its content is replaced."""


class ContextEditEntry(EntryBase):
    _keep_none: ClassVar[frozenset[str]] = frozenset({"parent_id", "replacement"})
    type: Literal["context_edit"] = "context_edit"
    target_id: str
    replacement: Replacement = None


class BranchSummaryEntry(EntryBase):
    type: Literal["branch_summary"] = "branch_summary"
    from_id: str | None = None
    summary: str
    usage: Usage | None = None
    details: Any = None
    from_hook: bool | None = None


class CustomEntry(EntryBase):
    """Plugin state. Never part of the model's context."""

    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None


class CustomMessageEntry(EntryBase):
    """A plugin message that *is* part of the model's context (as user text)."""

    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[UserContent] = ""
    display: bool = True
    details: Any = None


class LabelEntry(EntryBase):
    type: Literal["label"] = "label"
    target_id: str
    label: str | None = None


class SessionInfoEntry(EntryBase):
    type: Literal["session_info"] = "session_info"
    name: str | None = None


class UnknownEntry(EntryBase):
    """An entry of a type this version does not know; kept verbatim."""

    type: str


_ENTRY_TYPES = {
    "message",
    "model_change",
    "thinking_level_change",
    "usage",
    "compaction",
    "context_edit",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
}


def _entry_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in _ENTRY_TYPES else "unknown"


SessionEntry = Annotated[
    Annotated[MessageEntry, Tag("message")]
    | Annotated[ModelChangeEntry, Tag("model_change")]
    | Annotated[ThinkingLevelChangeEntry, Tag("thinking_level_change")]
    | Annotated[UsageEntry, Tag("usage")]
    | Annotated[CompactionEntry, Tag("compaction")]
    | Annotated[ContextEditEntry, Tag("context_edit")]
    | Annotated[BranchSummaryEntry, Tag("branch_summary")]
    | Annotated[CustomEntry, Tag("custom")]
    | Annotated[CustomMessageEntry, Tag("custom_message")]
    | Annotated[LabelEntry, Tag("label")]
    | Annotated[SessionInfoEntry, Tag("session_info")]
    | Annotated[UnknownEntry, Tag("unknown")],
    Discriminator(_entry_tag),
]
"""Any session entry (not the header), discriminated by ``type``."""


# --------------------------------------------------------------------------- drafts


class DraftCustom(PiModel):
    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None


class DraftCustomMessage(PiModel):
    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[UserContent]
    display: bool = True
    details: Any = None


class DraftContextEdit(PiModel):
    _keep_none: ClassVar[frozenset[str]] = frozenset({"replacement"})
    type: Literal["context_edit"] = "context_edit"
    target_id: str
    replacement: Replacement = None


class DraftCompaction(PiModel):
    """``first_kept_entry_id=None`` keeps no earlier entry (a retain-none compaction)."""

    type: Literal["compaction"] = "compaction"
    summary: str
    first_kept_entry_id: str | None = None
    tokens_before: int = 0
    usage: Usage | None = None
    details: Any = None


DraftEntry = Annotated[
    DraftCustom | DraftCustomMessage | DraftContextEdit | DraftCompaction,
    Field(discriminator="type"),
]
"""An entry a ``turn_end`` / ``agent_before_settle`` handler proposes to append."""
