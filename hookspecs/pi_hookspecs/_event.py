"""What every event module shares: the base model of events, the reasons a compaction
runs, and the names of the occasional events. Kept apart from :mod:`pi_hookspecs.events`
so that :mod:`pi_hookspecs._occasional`, which that module imports on first use, does not
import it back."""

from typing import Literal

from pydantic import ConfigDict

from ._base import PiModel


class Event(PiModel):
    """Base of every event. ``type`` is the event's name."""

    model_config = ConfigDict(extra="forbid")
    type: str


class _ProviderEvent(Event):
    provider: str = ""
    api: str = ""
    model: str = ""


CompactReason = Literal["manual", "threshold", "overflow"]

HookOutcome = Literal["blocked", "transformed", "handled", "cancelled", "failed"]


OCCASIONAL = frozenset(
    {
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
    }
)
"""Events (and their results and payloads) that fire only when something occasional
happens: compaction, tree navigation, switching or forking sessions, a user's ``!``
command, a model or thinking-level switch, prompt-cache warming, a terminal dialog, a
session renamed; and the events pi builds only for the plugins that implement them
(``bash_spawn``, ``file_access``, ``hook_outcome``, ``context``, ``context_with_system``,
``before_provider_headers``, ``before_provider_request``, ``provider_stream_event``,
``tool_result``) or only for a project that needs trust (``project_trust``). They are
defined in :mod:`pi_hookspecs._occasional` and created the first time one is used
(``pi_hookspecs.events.SessionTreeEvent`` works as any other name): a ``pi -p`` run does
not pay for making about 44 model classes it may never use."""

TOOL_TIME = frozenset(
    {
        "BashSpawnEvent",
        "BashSpawnResult",
        "FileAccessEvent",
        "FileAccessResult",
        "HookOutcomeEvent",
        "ToolResultEvent",
        "ToolResultPatch",
    }
)
"""The occasional names defined in :mod:`pi_hookspecs._tool_events` (the others are in
:mod:`pi_hookspecs._occasional`): made while a tool runs, for the plugins that
implement ``bash_spawn``, ``file_access``, ``tool_result`` or ``hook_outcome``."""


def occasional_module(name: str) -> str:
    """The module (relative to the package) that defines the occasional name ``name``."""
    return "._tool_events" if name in TOOL_TIME else "._occasional"
