"""pi's plugin contract.

Plugins import only this package: the pluggy markers, the hook specifications, the
event and result models, message and content types, tool definitions and the
context protocols. Everything else in pi is an implementation detail.

    from pi_hookspecs import hookimpl, tool

    class Policy:
        @hookimpl(trylast=True)
        def tool_call(self, event):
            if event.tool_name == "bash" and "rm -rf /" in event.input["command"]:
                return {"block": True, "reason": "not on this machine"}
"""

__version__ = "1.0.0"

from typing import TYPE_CHECKING, Any

from . import events as _events
from ._base import PiModel, StrictModel, camel_alias, now_ms
from ._event import OCCASIONAL
from .aio import maybe_await
from .auth import REFRESH_MARGIN_MS, ApiKeyCredentials, LoginCallbacks, LoginError, LoginMethod, OAuthCredentials
from .context import (
    CommandContext,
    ContextUsage,
    DeliverAs,
    ExtensionContext,
    Mode,
    ProjectTrustContext,
    SessionView,
    StaleContextError,
    ToolContext,
    UIContext,
)
from .credentials import CredentialRequest, CredentialResolver, CredentialSource, RequestCredentials
from .entries import (
    SESSION_VERSION,
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    ContextEditReplacement,
    CustomEntry,
    CustomMessageEntry,
    DraftCompaction,
    DraftContextEdit,
    DraftCustom,
    DraftCustomMessage,
    DraftEntry,
    EntryBase,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
    UnknownEntry,
    UsageEntry,
)
from .events import *  # noqa: F403  (the events made at import; the occasional ones below)
from .llm import (
    KNOWN_APIS,
    THINKING_LEVELS,
    ApiDefinition,
    ApiStreamFunction,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    LlmContext,
    Model,
    ModelCost,
    ProviderDefinition,
    StartEvent,
    StreamFunction,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingLevel,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    TranscriptRules,
)
from .markers import ENTRY_POINT_GROUP, PROJECT_NAME, hookimpl, hookspec
from .messages import (
    AgentMessage,
    AnyMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    ContentBlock,
    Cost,
    CustomMessage,
    ImageContent,
    NestedToolCallRecord,
    NestedToolCalls,
    StopReason,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDeclaration,
    ToolReference,
    ToolResultMessage,
    UnknownContent,
    UnknownMessage,
    Usage,
    UserContent,
    UserMessage,
)
from .registration import (
    AddHookspecs,
    CliCommandDefinition,
    CommandDefinition,
    FlagDefinition,
    RegisterCliCommand,
    RegisterCommand,
    RegisterFlag,
    RegisterProvider,
    RegisterRenderer,
    RegisterShortcut,
    RegisterTool,
    RegisterToolRenderer,
    RendererDefinition,
    ShortcutDefinition,
    ToolRendererDefinition,
)
from .rules import EventSpec, RegistrationSpec, Rule
from .signals import AbortController, AbortError, AbortSignal
from .specs import EVENTS, HOOK_GROUPS, REGISTRATION_HOOKS, REGISTRATIONS
from .tools import (
    EXPOSURES,
    ExecutionMode,
    LoadoutResult,
    ToolAnnotations,
    ToolDefinition,
    ToolExposure,
    ToolLoadout,
    ToolNamespace,
    ToolResult,
    format_validation_error,
    parse_docstring,
    tool,
)

__all__ = [
    # markers & contract metadata
    "hookimpl",
    "hookspec",
    "PROJECT_NAME",
    "ENTRY_POINT_GROUP",
    "EVENTS",
    "EventSpec",
    "Rule",
    "REGISTRATION_HOOKS",
    "REGISTRATIONS",
    "RegistrationSpec",
    "HOOK_GROUPS",
    # base
    "PiModel",
    "StrictModel",
    "camel_alias",
    "now_ms",
    "maybe_await",
    # contexts
    "CommandContext",
    "ContextUsage",
    "DeliverAs",
    "ExtensionContext",
    "Mode",
    "ProjectTrustContext",
    "SessionView",
    "StaleContextError",
    "ToolContext",
    "UIContext",
    # logins
    "REFRESH_MARGIN_MS",
    "ApiKeyCredentials",
    "LoginCallbacks",
    "LoginError",
    "LoginMethod",
    "OAuthCredentials",
    # credentials lent by plugins
    "CredentialRequest",
    "CredentialResolver",
    "CredentialSource",
    "RequestCredentials",
    # cancellation
    "AbortController",
    "AbortError",
    "AbortSignal",
    # messages
    "AgentMessage",
    "AnyMessage",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "ContentBlock",
    "Cost",
    "CustomMessage",
    "ImageContent",
    "NestedToolCallRecord",
    "NestedToolCalls",
    "StopReason",
    "SystemMessage",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolDeclaration",
    "ToolReference",
    "ToolResultMessage",
    "UnknownContent",
    "UnknownMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    # entries
    "SESSION_VERSION",
    "BranchSummaryEntry",
    "CompactionEntry",
    "ContextEditEntry",
    "ContextEditReplacement",
    "CustomEntry",
    "CustomMessageEntry",
    "DraftCompaction",
    "DraftContextEdit",
    "DraftCustom",
    "DraftCustomMessage",
    "DraftEntry",
    "EntryBase",
    "LabelEntry",
    "MessageEntry",
    "ModelChangeEntry",
    "SessionEntry",
    "SessionHeader",
    "SessionInfoEntry",
    "ThinkingLevelChangeEntry",
    "UnknownEntry",
    "UsageEntry",
    # llm
    "KNOWN_APIS",
    "THINKING_LEVELS",
    "ApiDefinition",
    "ApiStreamFunction",
    "AssistantMessageEvent",
    "DoneEvent",
    "ErrorEvent",
    "LlmContext",
    "Model",
    "ModelCost",
    "ProviderDefinition",
    "StartEvent",
    "StreamFunction",
    "StreamOptions",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "TranscriptRules",
    # tools & registration
    "EXPOSURES",
    "ExecutionMode",
    "LoadoutResult",
    "ToolAnnotations",
    "ToolDefinition",
    "ToolExposure",
    "ToolLoadout",
    "ToolNamespace",
    "ToolResult",
    "format_validation_error",
    "parse_docstring",
    "tool",
    "AddHookspecs",
    "CliCommandDefinition",
    "CommandDefinition",
    "FlagDefinition",
    "RegisterCliCommand",
    "RegisterCommand",
    "RegisterFlag",
    "RegisterProvider",
    "RegisterRenderer",
    "RegisterShortcut",
    "RegisterTool",
    "RegisterToolRenderer",
    "RendererDefinition",
    "ShortcutDefinition",
    "ToolRendererDefinition",
    *_events.__all__,
    *sorted(OCCASIONAL),
]


def __getattr__(name: str) -> Any:
    """The occasional events (``pi_hookspecs.events.OCCASIONAL``), made on first use."""
    if name in OCCASIONAL:
        value = getattr(_events, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *OCCASIONAL})


if TYPE_CHECKING:
    from ._occasional import *  # noqa: F403
