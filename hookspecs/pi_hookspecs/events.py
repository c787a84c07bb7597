"""One model per event and one per result.

An event's fields are the snake_case of the TypeScript pi's (``toolName`` ->
``tool_name``); ``event.to_json()`` gives the camelCase record that ``--mode json``
prints. A handler may return the result model **or a plain dict with the same fields**
(snake_case or camelCase); pi validates it. Result models reject unknown keys, so a
typo is reported instead of ignored.
"""

import importlib
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ConfigDict, Field

from ._base import PiModel, StrictModel, camel_alias
from ._event import OCCASIONAL, CompactReason, Event, HookOutcome, _ProviderEvent, occasional_module
from .entries import DraftCustomMessage, DraftEntry, SessionEntry
from .messages import (
    AgentMessage,
    AssistantMessage,
    CustomMessage,
    ImageContent,
    ToolResultMessage,
)
from .record import dataclass
from .tools import ToolResult

# --------------------------------------------------------------------------- shared parts


class ContextFile(PiModel):
    path: str
    content: str


class Skill(PiModel):
    name: str
    description: str
    file_path: str
    base_dir: str
    source: str = ""
    disable_model_invocation: bool = False


class SystemPromptOptions(PiModel):
    """The structured inputs the system prompt is built from. Collections are mutable:
    ``before_agent_start`` handlers change them in place."""

    custom_prompt: str | None = None
    force_system_prompt: str | None = None
    selected_tools: list[str] = Field(default_factory=list)
    hidden_tools: list[str] = Field(default_factory=list)
    tool_snippets: dict[str, str] = Field(default_factory=dict)
    tool_guidelines: dict[str, list[str]] = Field(default_factory=dict)
    prompt_guidelines: list[str] = Field(default_factory=list)
    sections: dict[str, str] = Field(default_factory=dict)
    append_system_prompt: list[str] = Field(default_factory=list)
    cwd: str = ""
    context_files: list[ContextFile] = Field(default_factory=list)
    skills: list[Skill] = Field(default_factory=list)


# --------------------------------------------------------------------------- startup & resources


class ResourcesDiscoverEvent(Event):
    type: Literal["resources_discover"] = "resources_discover"
    cwd: str
    reason: Literal["startup", "reload"] = "startup"


class ResourcesDiscoverResult(StrictModel):
    skill_paths: list[str] = Field(default_factory=list)
    prompt_paths: list[str] = Field(default_factory=list)
    theme_paths: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- session

SessionStartReason = Literal["startup", "reload", "new", "resume", "fork"]
ShutdownReason = Literal["quit", "reload", "new", "resume", "fork"]


class SessionStartEvent(Event):
    type: Literal["session_start"] = "session_start"
    reason: SessionStartReason = "startup"
    previous_session_file: str | None = None


class SessionShutdownEvent(Event):
    type: Literal["session_shutdown"] = "session_shutdown"
    reason: ShutdownReason = "quit"
    target_session_file: str | None = None


# --------------------------------------------------------------------------- agent runs


class BeforeAgentStartEvent(Event):
    type: Literal["before_agent_start"] = "before_agent_start"
    message_type: Literal["user", "custom"] = "user"
    prompt: str | None = None
    images: list[ImageContent] = Field(default_factory=list)
    message: CustomMessage | None = None
    system_prompt: str = ""
    system_prompt_options: SystemPromptOptions = Field(default_factory=SystemPromptOptions)


class BeforeAgentStartResult(StrictModel):
    message: DraftCustomMessage | None = None
    """A message to add to the run (kept in the session, sent to the model)."""
    system_prompt: str | None = None
    """Replace the whole system prompt for this run (chained across handlers)."""


class AgentStartEvent(Event):
    type: Literal["agent_start"] = "agent_start"


class AgentEndEvent(Event):
    type: Literal["agent_end"] = "agent_end"
    messages: list[AgentMessage] = Field(default_factory=list)
    will_retry: bool = False


class BoundaryResult(StrictModel):
    """What a ``turn_end`` / ``agent_before_settle`` handler proposes. Each field
    replaces the proposal so far; an omitted field keeps it."""

    entries: list[DraftEntry] | None = None
    continue_: bool | None = None


@dataclass(frozen=True, slots=True)
class ProjectedEntry:
    """An entry of the context and the messages it contributes (none for state-only
    entries such as ``model_change``, or for omitted ones).

    A plain frozen record rather than a model: the session keeps one per context entry
    and a boundary's preview shares them (a turn end does not copy the history)."""

    __pydantic_config__ = ConfigDict(alias_generator=camel_alias, populate_by_name=True)

    source_entry: SessionEntry
    messages: tuple[AgentMessage, ...] = ()


class BoundaryContext(PiModel):
    """The context as it would be with the proposed entries appended (nothing written
    yet), as a ``turn_end`` / ``agent_before_settle`` handler sees it."""

    context_entries: list[ProjectedEntry] = Field(default_factory=list)
    """The active branch's entries that make up the context, with their messages."""
    context_messages: list[AgentMessage] = Field(default_factory=list)
    """The context's messages (custom, summaries and bash executions included)."""
    llm_messages: list[AgentMessage] = Field(default_factory=list)
    """The same converted to what the model receives (system, user, assistant, tool results)."""
    pending_messages: list[AgentMessage] = Field(default_factory=list)
    """Steering and follow-up messages waiting, then messages queued for the next turn."""
    can_continue: bool = False
    """Whether asking for another model request (``continue_``) can be honoured."""


class AgentBeforeSettleEvent(Event):
    type: Literal["agent_before_settle"] = "agent_before_settle"
    entries: list[DraftEntry] = Field(default_factory=list)
    continue_: bool = False
    context: BoundaryContext = Field(default_factory=BoundaryContext.model_construct)
    outcome: Literal["completed", "error", "aborted"] = "completed"
    """How the run's last activity ended."""


class AgentSettledEvent(Event):
    type: Literal["agent_settled"] = "agent_settled"
    aborted: bool = False


class TurnStartEvent(Event):
    type: Literal["turn_start"] = "turn_start"
    turn_index: int = 0
    timestamp: int = 0


class TurnEndEvent(Event):
    type: Literal["turn_end"] = "turn_end"
    turn_index: int = 0
    message: AssistantMessage
    tool_results: list[ToolResultMessage] = Field(default_factory=list)
    message_entry_id: str | None = None
    tool_result_entry_ids: list[str] = Field(default_factory=list)
    outcome: Literal["completed", "error", "aborted"] = "completed"
    entries: list[DraftEntry] = Field(default_factory=list)
    continue_: bool = False
    context: BoundaryContext = Field(default_factory=BoundaryContext.model_construct)


# --------------------------------------------------------------------------- messages


class MessageStartEvent(Event):
    type: Literal["message_start"] = "message_start"
    message: AgentMessage


class MessageUpdateEvent(Event):
    type: Literal["message_update"] = "message_update"
    message: AssistantMessage
    assistant_message_event: Any = None


class MessageEndEvent(Event):
    type: Literal["message_end"] = "message_end"
    message: AgentMessage


class MessageEndResult(StrictModel):
    """A replacement for the finished message; it must keep the same ``role``."""

    message: AgentMessage


# --------------------------------------------------------------------------- tools


class ToolExecutionStartEvent(Event):
    type: Literal["tool_execution_start"] = "tool_execution_start"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    parent_tool_call_id: str | None = None


class ToolExecutionUpdateEvent(Event):
    type: Literal["tool_execution_update"] = "tool_execution_update"
    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    partial_result: ToolResult
    parent_tool_call_id: str | None = None


class ToolExecutionEndEvent(Event):
    type: Literal["tool_execution_end"] = "tool_execution_end"
    tool_call_id: str
    tool_name: str
    result: ToolResult
    is_error: bool = False
    duration_ms: float | None = None
    parent_tool_call_id: str | None = None


class ToolCallEvent(Event):
    """``input`` is mutable: change it in place to patch the arguments."""

    type: Literal["tool_call"] = "tool_call"
    tool_name: str
    tool_call_id: str
    input: dict[str, Any] = Field(default_factory=dict)
    parent_tool_call_id: str | None = None


class ToolCallResult(StrictModel):
    block: bool = False
    reason: str | None = None
    terminate: bool = False


# --------------------------------------------------------------------------- context & provider

# The events of tool_result, context, context_with_system and of the provider hooks but
# after_provider_response are occasional: pi makes them only for a plugin that implements the hook.


class AfterProviderResponseEvent(_ProviderEvent):
    type: Literal["after_provider_response"] = "after_provider_response"
    status: int = 0
    headers: dict[str, str] = Field(default_factory=dict)


# --------------------------------------------------------------------------- prompt-cache warming


# --------------------------------------------------------------------------- model selection


# --------------------------------------------------------------------------- observing plugins

# HookOutcomeEvent is occasional: made when a plugin implements hook_outcome.


# --------------------------------------------------------------------------- user input


class InputEvent(Event):
    type: Literal["input"] = "input"
    text: str
    images: list[ImageContent] = Field(default_factory=list)
    source: Literal["interactive", "rpc", "extension", "sdk"] = "interactive"
    streaming_behavior: Literal["steer", "follow_up"] | None = None


class InputResult(StrictModel):
    action: Literal["continue", "transform", "handled"] = "continue"
    text: str | None = None
    images: list[ImageContent] | None = None


# ---------------------------------------------------------------- occasional events

# OCCASIONAL (in ._event) names the events defined in ._occasional, made on first use.


def __getattr__(name: str) -> Any:
    if name in OCCASIONAL:
        value = getattr(importlib.import_module(occasional_module(name), __package__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *OCCASIONAL})


if TYPE_CHECKING:
    from ._occasional import *  # noqa: F403


__all__ = [
    "AfterProviderResponseEvent",
    "AgentBeforeSettleEvent",
    "AgentEndEvent",
    "AgentSettledEvent",
    "AgentStartEvent",
    "BeforeAgentStartEvent",
    "BeforeAgentStartResult",
    "BoundaryContext",
    "BoundaryResult",
    "CompactReason",
    "ContextFile",
    "Event",
    "HookOutcome",
    "InputEvent",
    "InputResult",
    "MessageEndEvent",
    "MessageEndResult",
    "MessageStartEvent",
    "MessageUpdateEvent",
    "ProjectedEntry",
    "ResourcesDiscoverEvent",
    "ResourcesDiscoverResult",
    "SessionShutdownEvent",
    "SessionStartEvent",
    "SessionStartReason",
    "ShutdownReason",
    "Skill",
    "SystemPromptOptions",
    "ToolCallEvent",
    "ToolCallResult",
    "ToolExecutionEndEvent",
    "ToolExecutionStartEvent",
    "ToolExecutionUpdateEvent",
    "TurnEndEvent",
    "TurnStartEvent",
]
