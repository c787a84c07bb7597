"""Session events beyond the agent's own (which are the ``pi_hookspecs`` event models).

Hosts (interactive, print, json, rpc, SDK) receive both through
``AgentSession.subscribe``; ``event.to_json()`` is the record ``--mode json`` prints.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field

from pi_hookspecs import PiModel


class SessionEvent(PiModel):
    model_config = ConfigDict(extra="forbid")
    type: str


class QueueUpdateEvent(SessionEvent):
    type: Literal["queue_update"] = "queue_update"
    steering: list[str] = Field(default_factory=list)
    follow_up: list[str] = Field(default_factory=list)


class CompactionStartEvent(SessionEvent):
    type: Literal["compaction_start"] = "compaction_start"
    reason: str = "manual"


class CompactionEndEvent(SessionEvent):
    type: Literal["compaction_end"] = "compaction_end"
    reason: str = "manual"
    result: dict[str, Any] | None = None
    aborted: bool = False
    will_retry: bool = False
    error_message: str | None = None


class AutoRetryStartEvent(SessionEvent):
    type: Literal["auto_retry_start"] = "auto_retry_start"
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str = ""


class AutoRetryEndEvent(SessionEvent):
    type: Literal["auto_retry_end"] = "auto_retry_end"
    success: bool
    attempt: int
    final_error: str | None = None


class SummarizationRetryScheduledEvent(SessionEvent):
    """A compaction or branch summary request failed with a transient error and is
    retried after ``delay_ms`` (the ``retry.*`` settings' budget and backoff)."""

    type: Literal["summarization_retry_scheduled"] = "summarization_retry_scheduled"
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str = ""


class SummarizationRetryAttemptStartEvent(SessionEvent):
    """The retried summary request starts: ``source`` is ``compaction`` (with its
    ``reason``) or ``branchSummary``."""

    type: Literal["summarization_retry_attempt_start"] = "summarization_retry_attempt_start"
    source: Literal["compaction", "branchSummary"]
    reason: str | None = None


class SummarizationRetryFinishedEvent(SessionEvent):
    """The retries of a summary request are over (it succeeded, failed for good or
    was cancelled)."""

    type: Literal["summarization_retry_finished"] = "summarization_retry_finished"


class EntryAppendedEvent(SessionEvent):
    type: Literal["entry_appended"] = "entry_appended"
    entry: dict[str, Any]


class ThinkingLevelChangedEvent(SessionEvent):
    type: Literal["thinking_level_changed"] = "thinking_level_changed"
    level: str


class ExtensionErrorEvent(SessionEvent):
    type: Literal["extension_error"] = "extension_error"
    extension_path: str
    event: str
    error: str


class BashExecutionUpdateEvent(SessionEvent):
    type: Literal["bash_execution_update"] = "bash_execution_update"
    delta: str
    id: str | None = None


class NoticeEvent(SessionEvent):
    """A message for the user from pi itself (a diagnostic, a warning)."""

    type: Literal["notice"] = "notice"
    level: Literal["info", "warning", "error"] = "info"
    message: str
