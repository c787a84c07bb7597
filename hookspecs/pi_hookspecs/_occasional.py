"""The occasional events of :mod:`pi_hookspecs.events` (named by ``OCCASIONAL``): the
same public names, created on first use. Import them from :mod:`pi_hookspecs` or
:mod:`pi_hookspecs.events`, not from here."""

from typing import Any, Literal

from pydantic import Field

from ._base import PiModel, StrictModel
from ._event import CompactReason, Event, _ProviderEvent

# made at tool time for the plugins that implement them: defined apart (see that module)
from ._tool_events import (
    BashSpawnEvent,
    BashSpawnResult,
    FileAccessEvent,
    FileAccessResult,
    HookOutcomeEvent,
    ToolResultEvent,
    ToolResultPatch,
)
from .entries import BranchSummaryEntry, CompactionEntry, SessionEntry
from .llm import Model
from .messages import AgentMessage, Usage
from .registration import McpServerRegistration
from .signals import AbortSignal


class FileOperations(PiModel):
    read: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)


class CompactionPreparation(PiModel):
    first_kept_entry_id: str
    messages_to_summarize: list[AgentMessage] = Field(default_factory=list)
    turn_prefix_messages: list[AgentMessage] = Field(default_factory=list)
    is_split_turn: bool = False
    tokens_before: int = 0
    previous_summary: str | None = None
    file_ops: FileOperations = Field(default_factory=FileOperations)
    settings: dict[str, Any] = Field(default_factory=dict)


class CompactionResult(StrictModel):
    """A compaction a ``session_before_compact`` handler supplies."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int = 0
    usage: Usage | None = None
    details: Any = None


class TreePreparation(PiModel):
    target_id: str
    old_leaf_id: str | None = None
    common_ancestor_id: str | None = None
    entries_to_summarize: list[SessionEntry] = Field(default_factory=list)
    user_wants_summary: bool = False
    custom_instructions: str | None = None
    replace_instructions: bool = False
    label: str | None = None


class BranchSummaryResult(StrictModel):
    summary: str
    usage: Usage | None = None
    details: Any = None


class BashResult(PiModel):
    """The outcome of a user ``!command``."""

    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None


class SessionInfoChangedEvent(Event):
    type: Literal["session_info_changed"] = "session_info_changed"
    name: str | None = None


class UiPromptStartEvent(Event):
    """A plugin's blocking dialog (``ctx.ui.select``/``confirm``/``input``/``editor``)
    now waits for the user; nested dialogs make one span."""

    type: Literal["ui_prompt_start"] = "ui_prompt_start"
    reason: Literal["ui_prompt"] = "ui_prompt"
    kind: Literal["select", "confirm", "input", "editor", "custom"] = "select"
    title: str | None = None


class UiPromptEndEvent(Event):
    type: Literal["ui_prompt_end"] = "ui_prompt_end"
    reason: Literal["ui_prompt"] = "ui_prompt"
    kind: Literal["select", "confirm", "input", "editor", "custom"] = "select"
    title: str | None = None


class SessionBeforeSwitchEvent(Event):
    type: Literal["session_before_switch"] = "session_before_switch"
    reason: Literal["new", "resume"]
    target_session_file: str | None = None


class SessionBeforeSwitchResult(StrictModel):
    cancel: bool = False


class SessionBeforeForkEvent(Event):
    type: Literal["session_before_fork"] = "session_before_fork"
    entry_id: str
    position: Literal["before", "at"] = "before"


class SessionBeforeForkResult(StrictModel):
    cancel: bool = False
    skip_conversation_restore: bool = False


class SessionBeforeCompactEvent(Event):
    type: Literal["session_before_compact"] = "session_before_compact"
    preparation: CompactionPreparation
    branch_entries: list[SessionEntry] = Field(default_factory=list)
    custom_instructions: str | None = None
    reason: CompactReason = "manual"
    will_retry: bool = False
    signal: AbortSignal | None = Field(default=None, exclude=True)


class SessionBeforeCompactResult(StrictModel):
    cancel: bool = False
    compaction: CompactionResult | None = None


class SessionCompactEvent(Event):
    type: Literal["session_compact"] = "session_compact"
    compaction_entry: CompactionEntry
    from_extension: bool = False
    reason: CompactReason = "manual"
    will_retry: bool = False


class SessionCompactFailedEvent(Event):
    type: Literal["session_compact_failed"] = "session_compact_failed"
    reason: CompactReason = "manual"
    error_message: str | None = None
    aborted: bool = False
    will_retry: bool = False
    from_extension: bool = False


class SessionBeforeTreeEvent(Event):
    type: Literal["session_before_tree"] = "session_before_tree"
    preparation: TreePreparation
    signal: AbortSignal | None = Field(default=None, exclude=True)


class SessionBeforeTreeResult(StrictModel):
    cancel: bool = False
    summary: BranchSummaryResult | None = None
    custom_instructions: str | None = None
    replace_instructions: bool | None = None
    label: str | None = None


class SessionTreeEvent(Event):
    type: Literal["session_tree"] = "session_tree"
    new_leaf_id: str | None = None
    old_leaf_id: str | None = None
    summary_entry: BranchSummaryEntry | None = None
    from_extension: bool = False


class CacheWarmingDecisionEvent(Event):
    """Before a prompt-cache refresh: pi's cost estimate and its decision."""

    type: Literal["cache_warming_decision"] = "cache_warming_decision"
    warm_cost: float
    """What this refresh costs (US dollars)."""
    miss_cost: float
    """What the next request would cost extra if the cache entry expired."""
    continuation_probability: float
    """pi's estimate that a request arrives before the entry expires (1 during a run)."""
    action: Literal["warm", "stop"]
    """pi's decision: refresh now, or stop warming until the next real request."""


class CacheWarmingDecisionResult(StrictModel):
    action: Literal["warm", "stop"] | None = None


class ModelSelectEvent(Event):
    type: Literal["model_select"] = "model_select"
    model: Model
    previous_model: Model | None = None
    source: Literal["set", "cycle"] = "set"


class ThinkingLevelSelectEvent(Event):
    type: Literal["thinking_level_select"] = "thinking_level_select"
    level: str
    previous_level: str | None = None


class UserBashEvent(Event):
    type: Literal["user_bash"] = "user_bash"
    command: str
    exclude_from_context: bool = False
    cwd: str = ""


class UserBashResult(StrictModel):
    """Either ``operations`` (an object with ``async exec(command, cwd, *, on_data,
    signal, timeout) -> BashResult`` that runs the command elsewhere) or ``result`` (the
    command's outcome, recorded without running anything)."""

    operations: Any = None
    result: BashResult | None = None


class McpServersChangeEvent(Event):
    """Plugins registered or unregistered MCP servers after the session started:
    ``servers`` lists every server plugins registered, after the change."""

    type: Literal["mcp_servers_change"] = "mcp_servers_change"
    servers: list[McpServerRegistration] = Field(default_factory=list)


# ---------------------------------------------------------- made only for a project that needs trust


class ProjectTrustEvent(Event):
    type: Literal["project_trust"] = "project_trust"
    cwd: str


class ProjectTrustResult(StrictModel):
    trusted: Literal["yes", "no", "undecided"] = "undecided"
    remember: bool = False


# ---------------------------------------------------------- made only for the plugins that implement them


class ContextEvent(Event):
    type: Literal["context"] = "context"
    messages: list[AgentMessage] = Field(default_factory=list)


class ContextResult(StrictModel):
    messages: list[AgentMessage]


class ContextWithSystemEvent(Event):
    type: Literal["context_with_system"] = "context_with_system"
    messages: list[AgentMessage] = Field(default_factory=list)


class ContextWithSystemResult(StrictModel):
    messages: list[AgentMessage]


class BeforeProviderHeadersEvent(_ProviderEvent):
    """Mutate ``headers`` in place; a value of ``None`` removes that header."""

    type: Literal["before_provider_headers"] = "before_provider_headers"
    headers: dict[str, str | None] = Field(default_factory=dict)


class BeforeProviderRequestEvent(_ProviderEvent):
    type: Literal["before_provider_request"] = "before_provider_request"
    payload: Any = None


class BeforeProviderRequestResult(StrictModel):
    payload: Any


class ProviderStreamEvent(_ProviderEvent):
    type: Literal["provider_stream_event"] = "provider_stream_event"
    data: Any = None


# The same names as _event.OCCASIONAL (tests/test_contract.py checks), spelled out so that
# type checkers see them through the TYPE_CHECKING imports of pi_hookspecs and .events.
__all__ = [
    "BashResult",
    "BashSpawnEvent",
    "BashSpawnResult",
    "BeforeProviderHeadersEvent",
    "BeforeProviderRequestEvent",
    "BeforeProviderRequestResult",
    "BranchSummaryResult",
    "CacheWarmingDecisionEvent",
    "CacheWarmingDecisionResult",
    "CompactionPreparation",
    "CompactionResult",
    "ContextEvent",
    "ContextResult",
    "ContextWithSystemEvent",
    "ContextWithSystemResult",
    "FileAccessEvent",
    "FileAccessResult",
    "FileOperations",
    "HookOutcomeEvent",
    "McpServersChangeEvent",
    "ModelSelectEvent",
    "ProjectTrustEvent",
    "ProjectTrustResult",
    "ProviderStreamEvent",
    "SessionBeforeCompactEvent",
    "SessionBeforeCompactResult",
    "SessionBeforeForkEvent",
    "SessionBeforeForkResult",
    "SessionBeforeSwitchEvent",
    "SessionBeforeSwitchResult",
    "SessionBeforeTreeEvent",
    "SessionBeforeTreeResult",
    "SessionCompactEvent",
    "SessionCompactFailedEvent",
    "SessionInfoChangedEvent",
    "SessionTreeEvent",
    "ThinkingLevelSelectEvent",
    "ToolResultEvent",
    "ToolResultPatch",
    "TreePreparation",
    "UiPromptEndEvent",
    "UiPromptStartEvent",
    "UserBashEvent",
    "UserBashResult",
]
