"""Session events beyond the agent's own (which are the ``pi_hookspecs`` event models).

Hosts (interactive, print, json, rpc, SDK) receive both through
``AgentSession.subscribe``; ``event.to_json()`` is the record ``--mode json`` prints.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from ._session_event import SessionEvent


class ExtensionErrorEvent(SessionEvent):
    type: Literal["extension_error"] = "extension_error"
    extension_path: str
    event: str
    error: str


class NoticeEvent(SessionEvent):
    """A message for the user from pi itself (a diagnostic, a warning)."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "warning", "error"] = "info"
    message: str


OCCASIONAL = frozenset(
    {
        "AutoRetryEndEvent",
        "AutoRetryStartEvent",
        "BashExecutionUpdateEvent",
        "CompactionEndEvent",
        "CompactionStartEvent",
        "EntryAppendedEvent",
        "QueueUpdateEvent",
        "SummarizationRetryAttemptStartEvent",
        "SummarizationRetryFinishedEvent",
        "SummarizationRetryScheduledEvent",
        "ThinkingLevelChangedEvent",
    }
)
"""Events emitted only when something occasional happens (a retry, a compaction, a user
command's output, queued steering or follow-up messages, a thinking-level change, a
prompt-cache refresh recorded): defined in :mod:`._occasional_events` and made the first
time one is read, so a run that needs none does not make their model classes."""

if TYPE_CHECKING:
    from ._occasional_events import (
        AutoRetryEndEvent,
        AutoRetryStartEvent,
        BashExecutionUpdateEvent,
        CompactionEndEvent,
        CompactionStartEvent,
        EntryAppendedEvent,
        QueueUpdateEvent,
        SummarizationRetryAttemptStartEvent,
        SummarizationRetryFinishedEvent,
        SummarizationRetryScheduledEvent,
        ThinkingLevelChangedEvent,
    )


def __getattr__(name: str) -> Any:
    if name in OCCASIONAL:
        from . import _occasional_events

        value = getattr(_occasional_events, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "OCCASIONAL",
    "AutoRetryEndEvent",
    "AutoRetryStartEvent",
    "BashExecutionUpdateEvent",
    "CompactionEndEvent",
    "CompactionStartEvent",
    "EntryAppendedEvent",
    "ExtensionErrorEvent",
    "NoticeEvent",
    "QueueUpdateEvent",
    "SessionEvent",
    "SummarizationRetryAttemptStartEvent",
    "SummarizationRetryFinishedEvent",
    "SummarizationRetryScheduledEvent",
    "ThinkingLevelChangedEvent",
]
