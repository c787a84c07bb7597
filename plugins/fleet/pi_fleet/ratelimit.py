"""Provider rate limits shared by every worker of a run.

One Ray actor per provider (:class:`ProviderLimit`) holds the moment before which no
request to that provider should start: a ``429`` (or a response saying a token or
request budget is used up) moves it to when the provider said to come back
(``retry-after``, ``retry-after-ms``, the ``x-ratelimit-reset-*`` and
``anthropic-ratelimit-*-reset`` headers), or, when it said nothing, to a back-off that
doubles with each consecutive ``429`` (1 s up to 30 s). Every session of the run asks
its provider's actor before each model request (``before_provider_request``) and waits
that long; it reports every ``429`` and used-up budget (``after_provider_response``).
The actors live as long as the run: :class:`Limits`, created by the driver, makes them
(and names them) on first use. Delays travel as seconds, never as clock times, so the
clocks of the machines need not agree.

This module imports Ray: only ``pi fleet`` loads it.
"""

from __future__ import annotations

import asyncio
import re
import time
from datetime import datetime
from typing import Any

import ray

from pi_hookspecs import AfterProviderResponseEvent, BeforeProviderRequestEvent, hookimpl
from pi_hookspecs.streaming import retry_after_seconds

MAX_BACKOFF_S = 30.0


class ProviderLimit:
    """The shared budget of one provider (a Ray actor: see :func:`limits_actor`)."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.not_before = 0.0
        self.strikes = 0
        self.limited = 0
        """How many 429 answers were reported."""
        self.waited = 0.0
        """Seconds the workers were told to wait, summed."""

    def delay(self) -> float:
        """Seconds to wait before the next request (0: go)."""
        wait = max(0.0, self.not_before - time.monotonic())
        self.waited += wait
        return wait

    def report(self, status: int, wait: float | None) -> float:
        """A response of the provider: ``status`` and the delay it asked for (``None``:
        none). Returns the delay now in force."""
        now = time.monotonic()
        if status == 429:
            self.strikes += 1
            self.limited += 1
            if wait is None:
                wait = min(MAX_BACKOFF_S, 2.0 ** (self.strikes - 1))
        elif status < 400:
            self.strikes = 0
        if wait is not None and wait > 0:
            self.not_before = max(self.not_before, now + wait)
        return max(0.0, self.not_before - now)

    def stats(self) -> dict[str, Any]:
        return {"provider": self.provider, "limited": self.limited, "waited_s": round(self.waited, 3)}


class Limits:
    """Makes one :class:`ProviderLimit` actor per provider and hands it out (a Ray actor
    created by the driver: the provider actors live as long as it)."""

    def __init__(self) -> None:
        self.actors: dict[str, Any] = {}

    def get(self, provider: str) -> list[Any]:
        actor = self.actors.get(provider)
        if actor is None:
            actor = ray.remote(num_cpus=0)(ProviderLimit).remote(provider)
            self.actors[provider] = actor
        return [actor]  # a list: the handle itself would be resolved as an object reference

    def stats(self) -> list[dict[str, Any]]:
        return [ray.get(actor.stats.remote()) for actor in self.actors.values()]


def limits_actor() -> Any:
    """A new :class:`Limits` actor (in the driver)."""
    return ray.remote(num_cpus=0)(Limits).remote()


# --------------------------------------------------------------------------- headers

_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|ns|h|m|s)")
_UNIT = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def _reset_seconds(value: str) -> float | None:
    """``6m0s`` / ``1.5s`` (OpenAI), an RFC 3339 time (Anthropic) or plain seconds."""
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parts = _GO_DURATION.findall(value)
    if parts and "".join(n + u for n, u in parts) == value:
        return sum(float(n) * _UNIT[u] for n, u in parts)
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(0.0, moment.timestamp() - time.time())


def budget_wait(headers: dict[str, str]) -> float | None:
    """When a response says a request or token budget is used up (``…remaining…: 0``),
    the seconds until it resets (the latest of those); else ``None``."""
    lowered = {k.lower(): v for k, v in headers.items()}
    waits: list[float] = []
    for name, value in lowered.items():
        match = re.fullmatch(r"x-ratelimit-remaining-([a-z-]+)", name)
        if match is not None:
            reset = lowered.get(f"x-ratelimit-reset-{match.group(1)}")
        else:
            match = re.fullmatch(r"anthropic-ratelimit-([a-z-]+)-remaining", name)
            reset = lowered.get(f"anthropic-ratelimit-{match.group(1)}-reset") if match else None
        if match is None or value.strip() != "0" or reset is None:
            continue
        seconds = _reset_seconds(reset)
        if seconds is not None:
            waits.append(seconds)
    return max(waits) if waits else None


def requested_wait(status: int, headers: dict[str, str]) -> float | None:
    direct = retry_after_seconds(headers)
    if direct is not None:
        return direct
    return budget_wait(headers)


# --------------------------------------------------------------------------- the session's side


class SharedRateLimit:
    """A plugin of every fleet session: asks the provider's actor before each model
    request and reports what the provider answered."""

    def __init__(self, limits: Any) -> None:
        self.limits = limits
        self.actors: dict[str, Any] = {}
        self.waited = 0.0

    async def _actor(self, provider: str) -> Any:
        actor = self.actors.get(provider)
        if actor is None:
            (actor,) = await self.limits.get.remote(provider)
            self.actors[provider] = actor
        return actor

    @hookimpl
    async def before_provider_request(self, event: BeforeProviderRequestEvent) -> None:
        actor = await self._actor(event.provider)
        while True:
            wait = float(await actor.delay.remote())
            if wait <= 0:
                return
            self.waited += wait
            await asyncio.sleep(wait)

    @hookimpl
    async def after_provider_response(self, event: AfterProviderResponseEvent) -> None:
        wait = requested_wait(event.status, event.headers)
        if event.status == 429 or wait is not None:
            actor = await self._actor(event.provider)
            await actor.report.remote(event.status, wait)
