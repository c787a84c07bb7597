"""The small interfaces the session's collaborators are given (instead of the session).

:class:`~pi_core.runtime.session.AgentSession` wires its parts together: each part
(retry, compaction, tree navigation, the tool binding, nested calls, user bash, the
event bridge, the agent hooks) receives the plugin runner, the session file and the
few callables below, never the session itself. See ``docs/architecture.md``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

Emit = Callable[[Any], None]
"""Deliver a session event to the host's listeners (``AgentSession.subscribe``)."""

Sync = Callable[[], None]
"""Bring the agent's messages up to date with the session file after it changed."""


class SummaryComplete(Protocol):
    """One summary request (compaction, branch summary), retried on transient errors;
    ``source`` names it in the ``summarization_retry_attempt_start`` event."""

    def __call__(
        self, model: Any, context: Any, options: Any, *, source: dict[str, Any] | None = None
    ) -> Awaitable[Any]: ...


SummaryTarget = Callable[[Any, str, Any], Awaitable[tuple[Any, str]]]
"""``(model, thinking level, signal)`` -> the model and level that write a summary
(under a virtual selection, where the router sends it)."""


def with_source(complete: SummaryComplete, source: dict[str, Any]) -> Callable[[Any, Any, Any], Awaitable[Any]]:
    """``complete`` as a plain three-argument summary function naming ``source``."""

    def call(model: Any, context: Any, options: Any) -> Awaitable[Any]:
        return complete(model, context, options, source=source)

    return call


class ToolContextFactory(Protocol):
    """Builds the ``ctx`` a tool's ``execute`` receives (a top-level or nested call)."""

    def __call__(
        self,
        tool_call_id: str,
        signal: Any,
        on_update: Any,
        *,
        owner: str | None,
        parent_tool_call_id: str | None = None,
    ) -> Any: ...


__all__ = ["Emit", "Sync", "ToolContextFactory"]
