"""Automatic retry of transient provider errors, and the one overflow recovery per prompt.

A run that ends with a retryable error (rate limit, overload, a dropped connection …)
is retried after an exponential backoff (``retry.baseDelayMs`` doubling per attempt, at
most ``retry.maxAgentDelayMs``), up to ``retry.maxRetries`` times. When the failed
response said how long to wait (``retry-after``, ``retry-after-ms``, rate-limit reset
headers; :func:`~pi_core.ai.errors.requested_retry_delay`) that wait replaces the
backoff, up to ``retry.provider.maxRetryDelayMs``: a longer one is not retried (the
retry ends at once, saying why), as pi 1.6.0 fails a provider retry asked to wait
longer than that. The failed attempt
stays in the session file but leaves the model's context (a ``context_edit``). A
context-window overflow is not retried here: the prompt pipeline compacts once and
continues (:meth:`AutoRetry.take_overflow_recovery`).
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from typing import Any

from pi_hookspecs import AbortController, AssistantMessage

from ..ai import is_context_overflow, is_retryable_error
from ..ai.errors import requested_retry_delay
from ..resources.settings import RetrySettings
from . import events  # its retry events are made when a retry first happens
from .ports import Emit


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g} s"


def retry_delay(settings: RetrySettings, attempt: int, message: AssistantMessage) -> tuple[int | None, str]:
    """The wait in milliseconds before retry ``attempt`` (1-based) of the request that
    failed with ``message``, and a note for the error text reported with it.

    The wait the server asked for, when it asked (the note says so), else the
    exponential backoff (no note; also for a wait of zero, as the provider SDKs read
    ``retry-after: 0``). ``None``: the server asked for longer than
    ``retry.provider.maxRetryDelayMs`` (when not ``0``) - not retried; the note says why.
    """
    requested = requested_retry_delay(message)
    if not requested:
        return min(settings.base_delay_ms * 2 ** (attempt - 1), settings.max_agent_delay_ms), ""
    wanted = math.ceil(requested * 1000)
    limit = settings.provider.max_retry_delay_ms
    if limit and wanted > limit:
        return None, (
            f" (the server asked to retry after {_seconds(wanted)}, longer than "
            f"retry.provider.maxRetryDelayMs allows: {_seconds(limit)}; not retried)"
        )
    return wanted, f" (the server asked to retry after {_seconds(wanted)})"


async def retry_summary(
    produce: Callable[[], Awaitable[AssistantMessage]],
    *,
    settings: RetrySettings,
    enabled: bool,
    signal: Any,
    emit: Emit,
    source: dict[str, Any],
) -> AssistantMessage:
    """One summary request (compaction, branch summary), retried on transient errors
    with the ``retry.*`` budget and backoff of the agent's own retries, as pi 1.6.0:
    ``summarization_retry_scheduled`` before each wait, ``..._attempt_start`` (with
    ``source``) before each new attempt, ``..._finished`` once a retried request ends.
    An abort is never retried; an abort during a wait ends the request ``aborted``."""
    max_attempts = settings.max_retries if enabled else 0
    attempt = 0
    retried = False
    while True:
        response = await produce()
        if response.stop_reason != "error" or attempt >= max_attempts or not is_retryable_error(response):
            if retried:
                emit(events.SummarizationRetryFinishedEvent())
            return response
        planned, note = retry_delay(settings, attempt + 1, response)
        if planned is None:
            if retried:
                emit(events.SummarizationRetryFinishedEvent())
            return response
        attempt += 1
        retried = True
        delay = planned
        error = (response.error_message or "Unknown error") + note
        emit(
            events.SummarizationRetryScheduledEvent(
                attempt=attempt, max_attempts=max_attempts, delay_ms=delay, error_message=error
            )
        )
        if signal is not None:
            waiter = asyncio.ensure_future(signal.wait())
            done, _ = await asyncio.wait([waiter], timeout=delay / 1000)
            waiter.cancel()
            if done or signal.aborted:
                emit(events.SummarizationRetryFinishedEvent())
                return response.model_copy(update={"stop_reason": "aborted", "error_message": None})
        else:
            await asyncio.sleep(delay / 1000)
        emit(events.SummarizationRetryAttemptStartEvent(**source))


class AutoRetry:
    """The retry state of one prompt.

    * ``settings()`` - the current ``retry.*`` settings;
    * ``enabled()`` - whether retries are on (the session's override, else the setting);
    * ``context_window()`` - the current model's window (``None``: no model);
    * ``emit`` - the session's listeners (``auto_retry_start`` / ``auto_retry_end``);
    * ``omit(message)`` - leave a failed attempt out of the model's context.
    """

    def __init__(
        self,
        *,
        settings: Callable[[], RetrySettings],
        enabled: Callable[[], bool],
        context_window: Callable[[], int | None],
        emit: Emit,
        omit: Callable[[AssistantMessage], None],
    ) -> None:
        self._settings = settings
        self._enabled = enabled
        self._context_window = context_window
        self._emit = emit
        self._omit = omit
        self.attempt = 0
        """Retries made for the current prompt so far."""
        self.overflow_recovered = False
        """The current prompt already compacted once after a context overflow."""
        self._controller: AbortController | None = None

    def begin(self) -> None:
        """A new prompt: no attempts made, the overflow recovery available again."""
        self.attempt = 0
        self.overflow_recovered = False

    def is_overflow(self, message: AssistantMessage) -> bool:
        return bool(is_context_overflow(message, self._context_window()))

    def will_retry(self, last: AssistantMessage | None) -> bool:
        """Whether a run that ended with ``last`` is followed by another (``agent_end``'s
        ``will_retry``): a retry, or the overflow recovery."""
        if last is None or last.stop_reason != "error":
            return False
        if self._enabled() and is_retryable_error(last) and not self.is_overflow(last):
            settings = self._settings()
            if self.attempt >= settings.max_retries:
                return False
            return retry_delay(settings, self.attempt + 1, last)[0] is not None
        return not self.overflow_recovered and self.is_overflow(last)

    async def prepare(self, message: AssistantMessage) -> bool:
        """After a failed run: emit ``auto_retry_start``, leave ``message`` out of the
        context and wait for the backoff. Returns whether to continue the run (false when
        retries are off or used up, the error is not transient, or the wait was cancelled)."""
        retry = self._settings()
        if not self._enabled() or self.is_overflow(message) or not is_retryable_error(message):
            return False
        if self.attempt >= retry.max_retries:
            self._emit(events.AutoRetryEndEvent(success=False, attempt=self.attempt, final_error=message.error_message))
            return False
        planned, note = retry_delay(retry, self.attempt + 1, message)
        if planned is None:  # the server asked for a longer wait than the settings allow
            final = (message.error_message or "Unknown error") + note
            self._emit(events.AutoRetryEndEvent(success=False, attempt=self.attempt, final_error=final))
            return False
        self.attempt += 1
        delay = planned
        self._emit(
            events.AutoRetryStartEvent(
                attempt=self.attempt,
                max_attempts=retry.max_retries,
                delay_ms=delay,
                error_message=(message.error_message or "") + note,
            )
        )
        self._omit(message)
        self._controller = AbortController()
        try:
            waiter = asyncio.ensure_future(self._controller.signal.wait())
            done, _ = await asyncio.wait([waiter], timeout=delay / 1000)
            waiter.cancel()
            if done:
                self._emit(events.AutoRetryEndEvent(success=False, attempt=self.attempt, final_error="cancelled"))
                return False
        finally:
            self._controller = None
        return True

    def succeeded(self) -> None:
        """A run ended well: close a retry sequence with ``auto_retry_end`` (success)."""
        if self.attempt:
            self._emit(events.AutoRetryEndEvent(success=True, attempt=self.attempt))
            self.attempt = 0

    def take_overflow_recovery(self, message: AssistantMessage) -> bool:
        """Whether ``message`` overflowed the context and this prompt has not recovered
        from an overflow yet (then it now has: the caller compacts and continues)."""
        if self.overflow_recovered or not self.is_overflow(message):
            return False
        self.overflow_recovered = True
        return True

    def cancel(self) -> None:
        """Cancel a pending backoff (the retry then ends as cancelled)."""
        if self._controller is not None:
            self._controller.abort()


__all__ = ["AutoRetry"]
