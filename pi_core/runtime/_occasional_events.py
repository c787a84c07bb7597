"""The occasional session events of :mod:`pi_core.runtime.events` (named by its
``OCCASIONAL``): retries of a failed request or summary, a compaction, a user command's
output, the queue of steering and follow-up messages, a thinking-level change, a recorded
prompt-cache refresh. The same public names, created on first use; import them from :mod:`pi_core.runtime.events`
(or :mod:`pi_core.runtime`), not from here."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from ._session_event import SessionEvent


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


class BashExecutionUpdateEvent(SessionEvent):
    type: Literal["bash_execution_update"] = "bash_execution_update"
    delta: str
    id: str | None = None


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


class EntryAppendedEvent(SessionEvent):
    type: Literal["entry_appended"] = "entry_appended"
    entry: dict[str, Any]


class ThinkingLevelChangedEvent(SessionEvent):
    type: Literal["thinking_level_changed"] = "thinking_level_changed"
    level: str


class QueueUpdateEvent(SessionEvent):
    type: Literal["queue_update"] = "queue_update"
    steering: list[str] = Field(default_factory=list)
    follow_up: list[str] = Field(default_factory=list)
