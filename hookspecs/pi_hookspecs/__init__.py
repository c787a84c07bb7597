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
from .catalogue import CatalogueRefresh, CatalogueRefreshResult, CatalogueSnapshot, ProviderAuth, RefreshModels
from .context import (
    CommandContext,
    ContextUsage,
    DeliverAs,
    ExtensionContext,
    Mode,
    ModelRegistryView,
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
    DEFAULT_MARKDOWN_MESSAGE_TYPES,
    AddHookspecs,
    CliCommandDefinition,
    CommandDefinition,
    FlagDefinition,
    MarkdownMessageType,
    MarkdownTransformContext,
    MarkdownTransformerDefinition,
    McpServerRegistration,
    RegisterCliCommand,
    RegisterCommand,
    RegisterFlag,
    RegisterMarkdownTransformer,
    RegisterMcpServer,
    RegisterProvider,
    RegisterRenderer,
    RegisterShortcut,
    RegisterTool,
    RegisterToolRenderer,
    RegisterVirtualModel,
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
from .virtual import (
    VIRTUAL_MODEL_API,
    VIRTUAL_MODEL_STATE_ENTRY,
    FailedRequest,
    ModelLookup,
    Route,
    RoutedModel,
    RouteReason,
    RouteRequest,
    VirtualModelDefinition,
    is_virtual_model,
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
    "ModelRegistryView",
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
    # classifier and image models
    "MODEL_TYPES",
    "ClassifierAnswer",
    "ClassifierBoolAnswer",
    "ClassifierBoolQuestion",
    "ClassifierChoiceAnswer",
    "ClassifierChoiceQuestion",
    "ClassifierContext",
    "ClassifierQuestion",
    "ClassifierResult",
    "ClassifierScoreAnswer",
    "ClassifierScoreQuestion",
    "ClassifyFunction",
    "ImagesContext",
    "ImagesFunction",
    "ImagesResult",
    "ModelType",
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
    "RegisterMarkdownTransformer",
    "RegisterMcpServer",
    "MarkdownMessageType",
    "MarkdownTransformContext",
    "MarkdownTransformerDefinition",
    "McpServerRegistration",
    "DEFAULT_MARKDOWN_MESSAGE_TYPES",
    "RegisterShortcut",
    "RegisterTool",
    "RegisterToolRenderer",
    "RendererDefinition",
    "ShortcutDefinition",
    "ToolRendererDefinition",
    # virtual models and dynamic catalogues
    "RegisterVirtualModel",
    "VIRTUAL_MODEL_API",
    "VIRTUAL_MODEL_STATE_ENTRY",
    "FailedRequest",
    "ModelLookup",
    "Route",
    "RouteReason",
    "RouteRequest",
    "RoutedModel",
    "VirtualModelDefinition",
    "is_virtual_model",
    "CatalogueRefresh",
    "CatalogueRefreshResult",
    "CatalogueSnapshot",
    "ProviderAuth",
    "RefreshModels",
    *_events.__all__,
    *sorted(OCCASIONAL),
]


_MODEL_TYPES_NAMES = frozenset(
    {
        "MODEL_TYPES",
        "ClassifierAnswer",
        "ClassifierBoolAnswer",
        "ClassifierBoolQuestion",
        "ClassifierChoiceAnswer",
        "ClassifierChoiceQuestion",
        "ClassifierContext",
        "ClassifierQuestion",
        "ClassifierResult",
        "ClassifierScoreAnswer",
        "ClassifierScoreQuestion",
        "ClassifyFunction",
        "ImagesContext",
        "ImagesFunction",
        "ImagesResult",
        "ModelType",
    }
)
"""The names of :mod:`pi_hookspecs.model_types` (classifier and image models): only the
APIs of such models use them, so that module is imported the first time one is read."""

if TYPE_CHECKING:
    from ._occasional import *  # noqa: F403  (made on first use: see __getattr__)
    from .model_types import (
        MODEL_TYPES,
        ClassifierAnswer,
        ClassifierBoolAnswer,
        ClassifierBoolQuestion,
        ClassifierChoiceAnswer,
        ClassifierChoiceQuestion,
        ClassifierContext,
        ClassifierQuestion,
        ClassifierResult,
        ClassifierScoreAnswer,
        ClassifierScoreQuestion,
        ClassifyFunction,
        ImagesContext,
        ImagesFunction,
        ImagesResult,
        ModelType,
    )


def __getattr__(name: str) -> Any:
    """The occasional events (``pi_hookspecs.events.OCCASIONAL``) and the classifier and
    image model types, made on first use."""
    if name in OCCASIONAL:
        value = getattr(_events, name)
    elif name in _MODEL_TYPES_NAMES:
        from . import model_types

        value = getattr(model_types, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *OCCASIONAL, *_MODEL_TYPES_NAMES})


if TYPE_CHECKING:
    from ._occasional import *  # noqa: F403
