"""Prompt-cache warming of a session's requests (the ``cacheWarming`` setting): the
session's stream function starts warming each request's cache entry, a warm request's
usage is stored as a ``usage`` entry, and ``cache_warming_decision`` handlers may
overrule pi's decision."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pi_hookspecs
from pi_hookspecs import LlmContext, Model, StreamOptions, Usage

from ..agent import AgentState
from ..extensions import EventRunner
from ..resources.settings import Settings
from ..session import SessionManager
from . import events  # EntryAppendedEvent: made when a refresh is first recorded
from .cache_warmer import CacheWarmer
from .ports import Emit


class SessionWarming:
    """Owns the session's :class:`CacheWarmer` (:attr:`warmer`).

    * ``stream`` - the stream function warm requests use;
    * ``state()`` - the agent's state (a warm entry is kept only while the model and
      the messages a request sent are still current);
    * ``settings()`` - the settings (``cacheWarming``).
    """

    def __init__(
        self,
        stream: Callable[..., Any],
        sm: SessionManager,
        runner: EventRunner,
        *,
        state: Callable[[], AgentState],
        settings: Callable[[], Settings],
        emit: Emit,
    ) -> None:
        self.sm = sm
        self.runner = runner
        self._state = state
        self._emit = emit
        self.warmer = CacheWarmer(
            stream=stream,
            branch=lambda: list(sm.get_branch()),
            record=self._record,
            mode=lambda: settings().cache_warming,
            decide=self._decide,
        )

    def wrap(self, stream: Callable[..., Any]) -> Callable[..., Any]:
        """``stream`` that also starts warming the cache entry of each session request
        (summaries, marked ``summary`` in their options, do not replace it)."""

        def session_stream(model: Model, context: LlmContext, options: StreamOptions | None = None) -> Any:
            options = options or StreamOptions()
            if options.extra.pop("summary", False) is not True and options.session_id == self.sm.get_session_id():
                state = self._state()
                sent = list(state.messages)

                def is_current() -> bool:
                    current = state.model
                    messages = state.messages
                    return (
                        current is not None
                        and current.provider == model.provider
                        and current.id == model.id
                        and len(sent) <= len(messages)
                        and all(a is b for a, b in zip(sent, messages, strict=False))
                    )

                self.warmer.start(model, context, options, is_current)
            return stream(model, context, options)

        return session_stream

    def _record(self, provider: str, model: str, usage: Usage, note: str | None) -> None:
        entry_id = self.sm.append_usage("cache_warm", provider, model, usage, note)
        entry = self.sm.get_entry(entry_id)
        if entry is not None:
            self._emit(events.EntryAppendedEvent(entry=entry.to_json()))

    async def _decide(self, decision: Any) -> str:
        """pi's decision, unless a ``cache_warming_decision`` handler returns an action
        (the last one that does decides)."""
        action: str = decision.action
        if not self.runner.has_handlers("cache_warming_decision"):
            return action
        event = pi_hookspecs.CacheWarmingDecisionEvent(
            warm_cost=decision.warm_cost,
            miss_cost=decision.miss_cost,
            continuation_probability=decision.continuation_probability,
            action=decision.action,
        )
        for result in await self.runner.emit("cache_warming_decision", event) or []:
            if result is not None and result.action is not None:
                action = result.action
        return action


__all__ = ["SessionWarming"]
