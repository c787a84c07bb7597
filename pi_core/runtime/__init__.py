"""The AgentSession runtime: prompt pipeline, tool registry, event bridge and
persistence, retry, compaction, reload and session replacement."""

from typing import TYPE_CHECKING, Any

from .errors import MissingSessionCwdError, no_model_message
from .events import ExtensionErrorEvent, NoticeEvent
from .host import SessionRuntime
from .sdk import create_agent_session
from .services import ServiceOptions, SessionServices, create_services
from .session import AgentSession, NoModelError, SessionBusyError
from .tool_registry import ToolRegistry, ToolSelection

if TYPE_CHECKING:
    from .events import (
        AutoRetryEndEvent,
        AutoRetryStartEvent,
        CompactionEndEvent,
        CompactionStartEvent,
        QueueUpdateEvent,
    )

_OCCASIONAL = (
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "QueueUpdateEvent",
)


def __getattr__(name: str) -> Any:
    """The occasional session events, made the first time one is read (:data:`.events.OCCASIONAL`)."""
    if name in _OCCASIONAL:
        from . import events

        return getattr(events, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "AgentSession",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "ExtensionErrorEvent",
    "MissingSessionCwdError",
    "NoModelError",
    "NoticeEvent",
    "QueueUpdateEvent",
    "ServiceOptions",
    "SessionBusyError",
    "SessionRuntime",
    "SessionServices",
    "ToolRegistry",
    "ToolSelection",
    "create_agent_session",
    "create_services",
    "no_model_message",
]
