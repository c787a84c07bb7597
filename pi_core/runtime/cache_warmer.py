"""Prompt-cache warming (the ``cacheWarming`` setting), as pi 1.6.0 does it.

A provider keeps a prompt's cache entry for a while (the model's ``promptCache``
lifetime, in seconds per retention tier: ``{"short": 300, "long": 3600}``). When the
next request comes later than that, the whole prompt is written to the cache again at
full price. The warmer re-sends the session's last request with a one-token output cap
shortly before the entry expires — when that is expected to pay for itself:

* the refresh costs the prompt read from cache plus one output token (``warm_cost``);
* losing the entry costs the difference between writing the prompt again and reading it
  (``miss_cost``);
* the next request comes in time with probability 1 during a run and 0.15 between runs;
* pi warms when ``probability * miss_cost - warm_cost`` is at least $0.05.

Plugins see each decision (``cache_warming_decision``) and may override it; the last
handler that returns an action decides. A refresh is recorded as a ``usage`` entry of
kind ``cache_warm`` (counted in session totals, never sent to the model). Warming stops
when the conversation moves on without a new request (another model, other messages),
after 60 minutes from the request during a run and 30 minutes between runs, when a
refresh would come too late to find the entry, and with ``cacheWarming: "off"`` (or,
with ``"streaming"``, once the run settles).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import field
from typing import Any, Literal

from pi_hookspecs import AbortController, LlmContext, Model, SessionEntry, StreamOptions, Usage
from pi_hookspecs.record import dataclass
from pi_hookspecs.streaming import calculate_cost

MAX_AGE_MS = 60 * 60_000
"""Warming during a run never goes on longer than this after the request it repeats."""
MAX_IDLE_AGE_MS = 30 * 60_000
"""Between runs the horizon is shorter: the continuation estimate gets worse with age."""
MINIMUM_EXPECTED_SAVINGS = 0.05
"""Dollars a refresh must be expected to save."""
IDLE_CONTINUATION_PROBABILITY = 0.15
"""Chance that a request comes before the entry expires while the agent is idle."""

Phase = Literal["streaming", "idle"]
Mode = Literal["off", "streaming", "idle"]


@dataclass(frozen=True)
class Decision:
    """Whether warming the prompt cache pays, with the figures that decided it."""

    phase: Phase
    warm_cost: float
    miss_cost: float
    continuation_probability: float
    expected_savings: float
    economics_available: bool
    action: Literal["warm", "stop"]


def prompt_cache_lifetime_ms(model: Model, options: StreamOptions) -> int | None:
    """How long the cache entry a request writes lives: the model's ``promptCache``
    seconds for the request's retention tier (``None``: no lifetime, or caching off)."""
    retention = options.extra.get("cache_retention") or (
        "long" if os.environ.get("PI_CACHE_RETENTION") == "long" else "short"
    )
    if retention == "none":
        return None
    tiers = model.prompt_cache
    seconds = tiers.get(retention) if isinstance(tiers, dict) else None
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or seconds <= 0:
        return None
    return int(seconds * 1000)


def warm_delay_ms(lifetime_ms: int) -> int | None:
    """Refresh at 90% of the lifetime, keeping at least ten seconds of margin."""
    if lifetime_ms <= 10_000:
        return None
    return max(1, math.floor(min(lifetime_ms * 0.9, lifetime_ms - 10_000)))


def is_replayable(model: Model, options: StreamOptions) -> bool:
    """Whether repeating the request with a one-token cap leaves its cache entry as it
    is. Anthropic's budget-based thinking derives its budget from ``max_tokens`` (part
    of the cache key), so only adaptive-thinking models qualify there."""
    thinking = options.thinking_level
    if not thinking or thinking == "off" or model.api != "anthropic-messages":
        return True
    return bool((model.compat or {}).get("forceAdaptiveThinking") is True)


def _price(model: Model, **tokens: int) -> float:
    return calculate_cost(model, Usage(**tokens)).cost.total


def evaluate(model: Model, prompt_tokens: int, phase: Phase) -> Decision:
    """Whether refreshing the entry of a ``prompt_tokens``-token request pays in ``phase``."""
    hit = _price(model, cache_read=prompt_tokens)
    miss = (
        _price(model, cache_write=prompt_tokens) if model.cost.cache_write > 0 else _price(model, input=prompt_tokens)
    )
    warm_cost = _price(model, cache_read=prompt_tokens, output=1)
    miss_cost = max(0.0, miss - hit)
    probability = IDLE_CONTINUATION_PROBABILITY if phase == "idle" else 1.0
    savings = probability * miss_cost - warm_cost
    return Decision(
        phase=phase,
        warm_cost=warm_cost,
        miss_cost=miss_cost,
        continuation_probability=probability,
        expected_savings=savings,
        economics_available=prompt_tokens > 0 and (hit > 0 or miss > 0),
        action="warm" if savings >= MINIMUM_EXPECTED_SAVINGS else "stop",
    )


def last_prompt_tokens(branch: list[SessionEntry]) -> int:
    """The prompt size of the branch's last real request, as the provider reported it."""
    for entry in reversed(branch):
        message = getattr(entry, "message", None)
        if entry.type == "message" and getattr(message, "role", None) == "assistant":
            usage = message.usage  # type: ignore[union-attr]
            return int(usage.input + usage.cache_read + usage.cache_write)
    return 0


@dataclass
class _Run:
    """One warming request: what it sends and when."""

    model: Model
    context: LlmContext
    options: StreamOptions
    is_current: Callable[[], bool]
    lifetime_ms: int
    delay_ms: int
    started: float = field(default_factory=time.monotonic)
    phase: Phase = "streaming"
    next_warm_at: float = 0.0
    deadline: float = 0.0
    extension_override: bool = False
    controller: AbortController = field(default_factory=AbortController)
    timer: asyncio.TimerHandle | None = None


class CacheWarmer:
    """Keeps the cache entry of the session's last request warm.

    * ``stream(model, context, options)`` - sends a request (the session's provider path);
    * ``branch()`` - the session's active branch (for the last request's prompt size);
    * ``record(provider, model, usage, note)`` - store a refresh's usage; returns the entry;
    * ``mode()`` - the ``cacheWarming`` setting;
    * ``decide(decision)`` - pi's decision after the plugins' say (the action taken).
    """

    def __init__(
        self,
        *,
        stream: Callable[[Model, LlmContext, StreamOptions], Any],
        branch: Callable[[], list[SessionEntry]],
        record: Callable[[str, str, Usage, str | None], Any],
        mode: Callable[[], Mode],
        decide: Callable[[Decision], Awaitable[str]],
    ) -> None:
        self._stream = stream
        self._branch = branch
        self._record = record
        self._mode = mode
        self._decide = decide
        self._run: _Run | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.reason = "waiting for the first request"
        """Why warming is inactive (when it is)."""
        self.last_decision: Decision | None = None

    # ------------------------------------------------------------------ state

    @property
    def active(self) -> bool:
        return self._run is not None

    def status(self) -> dict[str, Any]:
        """What ``/session`` and RPC clients show: ``state`` (``inactive``,
        ``scheduled``), the reason or the next refresh time and the last decision."""
        run = self._run
        if self._safe_mode() == "off":
            return {"state": "inactive", "reason": "cache warming disabled"}
        if run is None:
            out: dict[str, Any] = {"state": "inactive", "reason": self.reason}
        else:
            out = {"state": "scheduled", "nextWarmInMs": max(0, int((run.next_warm_at - time.monotonic()) * 1000))}
        if self.last_decision is not None:
            d = self.last_decision
            out["decision"] = {
                "action": d.action,
                "warmCost": d.warm_cost,
                "missCost": d.miss_cost,
                "continuationProbability": d.continuation_probability,
                "expectedSavings": d.expected_savings,
            }
        return out

    def _safe_mode(self) -> Mode:
        try:
            return self._mode()
        except Exception:  # an invalid setting is reported where settings are read
            return "off"

    # ------------------------------------------------------------------ lifecycle

    def start(self, model: Model, context: LlmContext, options: StreamOptions, is_current: Callable[[], bool]) -> None:
        """A session request was sent: warm its cache entry from now on (replaces the
        previous run)."""
        self._clear()
        if self._safe_mode() == "off":
            self._stop("cache warming disabled")
            return
        if not is_replayable(model, options):
            self._stop("the request cannot be repeated safely")
            return
        lifetime = prompt_cache_lifetime_ms(model, options)
        if lifetime is None:
            self._stop(
                "prompt caching is off for the request"
                if options.extra.get("cache_retention") == "none"
                else "the model declares no cache lifetime"
            )
            return
        delay = warm_delay_ms(lifetime)
        if delay is None:
            self._stop("the cache lifetime is too short")
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._run = _Run(
            model=model, context=context, options=options, is_current=is_current, lifetime_ms=lifetime, delay_ms=delay
        )
        self._schedule(self._run)

    def on_agent_settled(self) -> None:
        run = self._run
        if run is None:
            return
        if self._safe_mode() == "streaming":
            self._stop("the agent run settled")
            return
        run.phase = "idle"
        limit = run.started + MAX_IDLE_AGE_MS / 1000
        if run.next_warm_at > limit or time.monotonic() >= limit:
            self._stop("30-minute idle limit reached")

    def cancel(self, reason: str = "inactive") -> None:
        self._stop(reason)
        for task in list(self._tasks):
            task.cancel()

    def _clear(self) -> None:
        run, self._run = self._run, None
        if run is not None:
            if run.timer is not None:
                run.timer.cancel()
            run.controller.abort()

    def _stop(self, reason: str) -> None:
        self._clear()
        self.reason = reason

    def _schedule(self, run: _Run) -> None:
        run.extension_override = False
        now = time.monotonic()
        run.next_warm_at = now + run.delay_ms / 1000
        # a timer may fire late (sleep, a busy loop): keep half of the margin before the
        # entry expires for that; later than this a refresh would write the cache anew
        run.deadline = run.next_warm_at + (run.lifetime_ms - run.delay_ms) / 2000
        limit = run.started + (MAX_IDLE_AGE_MS if run.phase == "idle" else MAX_AGE_MS) / 1000
        if run.next_warm_at > limit or now >= limit:
            self._stop("30-minute idle limit reached" if run.phase == "idle" else "one-hour limit reached")
            return
        loop = asyncio.get_running_loop()
        run.timer = loop.call_later(run.delay_ms / 1000, self._fire, run)

    def _fire(self, run: _Run) -> None:
        run.timer = None
        task = asyncio.ensure_future(self._refresh(run))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _valid(self, run: _Run) -> bool:
        if self._run is not run:
            return False
        mode = self._safe_mode()
        reason = (
            "cache warming disabled"
            if mode == "off"
            else "the agent run settled"
            if mode == "streaming" and run.phase == "idle"
            else None
            if run.is_current()
            else "the conversation moved on"
        )
        if reason is not None:
            self._stop(reason)
            return False
        if time.monotonic() > run.deadline:
            self._stop("the refresh came too late")
            return False
        return True

    async def _refresh(self, run: _Run) -> None:
        if not self._valid(run):
            return
        decision = evaluate(run.model, last_prompt_tokens(self._branch()), run.phase)
        self.last_decision = decision
        try:
            action = await self._decide(decision)
        except Exception:  # a plugin's failure leaves pi's decision
            action = decision.action
        if not self._valid(run):
            return
        override = action != decision.action
        if action == "stop":
            self._stop(
                "stopped by a plugin"
                if override
                else "expected savings below the threshold"
                if decision.economics_available
                else "cache economics unavailable"
            )
            return
        run.extension_override = override
        options = run.options.model_copy(
            update={"max_tokens": 1, "signal": run.controller.signal, "extra": {**run.options.extra, "max_retries": 0}}
        )
        with contextlib.suppress(Exception):  # best effort: never disturbs the session
            stream = self._stream(run.model, run.context, options)
            if asyncio.iscoroutine(stream):
                stream = await stream
            message = await stream.result()
            if self._run is run and message.stop_reason not in ("error", "aborted"):
                self._record(
                    message.provider,
                    message.response_model or message.model,
                    message.usage,
                    "extension override" if override else None,
                )
        if self._run is run:
            self._schedule(run)


__all__ = [
    "CacheWarmer",
    "Decision",
    "evaluate",
    "is_replayable",
    "last_prompt_tokens",
    "prompt_cache_lifetime_ms",
    "warm_delay_ms",
]
