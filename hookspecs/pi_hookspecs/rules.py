"""How the results of several handlers of one event combine: declared once, here.

Handlers run one at a time, in pluggy's call order: ``tryfirst`` implementations
first, then the others from the most recently loaded plugin to the earliest, then
``trylast`` ones (pi loads plugins in the order built-in, installed, user files,
settings, project files, ``-e``, SDK). Built-in behaviour is ``trylast``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from pydantic import BaseModel

from . import events as ev


class Rule(StrEnum):
    NOTIFICATION = "notification"
    """Results are ignored (a handler returns ``None``). An exception is reported and
    the next handler runs."""
    CHAINED = "chained"
    """Each handler receives the previous handler's output. An exception is reported
    and the previous value is kept."""
    MUTATION = "mutation"
    """Handlers change the event in place; later handlers see the changes. Return
    ``None``. An exception is reported and the next handler runs."""
    GATE = "gate"
    """The first decisive result stops the walk. What an exception does depends on
    the event (``tool_call``, ``user_bash`` and ``bash_spawn`` fail closed)."""
    CANCELLABLE = "cancellable"
    """The first ``cancel: True`` stops the walk and cancels the operation; otherwise
    the last non-empty result replaces the whole result. An exception is reported."""
    AGGREGATE = "aggregate"
    """Results are collected in call order. An exception is reported."""
    BOUNDARY = "boundary"
    """Each handler sees the entries and the continuation proposed so far and may
    replace either. An exception is reported and that handler's draft is dropped."""


@dataclass(frozen=True, slots=True)
class EventSpec:
    name: str
    event: type[ev.Event]
    result: type[BaseModel] | None
    rule: Rule
    fail_closed: bool = False
    """An exception in a handler blocks the operation instead of being skipped."""


def _spec(
    event: type[ev.Event],
    rule: Rule,
    result: type[BaseModel] | None = None,
    *,
    fail_closed: bool = False,
) -> EventSpec:
    name = event.model_fields["type"].default
    return EventSpec(name=name, event=event, result=result, rule=rule, fail_closed=fail_closed)


N, C, M, G, X, A, B = (
    Rule.NOTIFICATION,
    Rule.CHAINED,
    Rule.MUTATION,
    Rule.GATE,
    Rule.CANCELLABLE,
    Rule.AGGREGATE,
    Rule.BOUNDARY,
)

EVENTS: dict[str, EventSpec] = {
    spec.name: spec
    for spec in (
        _spec(ev.InputEvent, C, ev.InputResult),
        _spec(ev.ContextEvent, C, ev.ContextResult),
        _spec(ev.ContextWithSystemEvent, C, ev.ContextWithSystemResult),
        _spec(ev.ToolCallEvent, G, ev.ToolCallResult, fail_closed=True),
        _spec(ev.ToolResultEvent, C, ev.ToolResultPatch),
        _spec(ev.SessionBeforeCompactEvent, X, ev.SessionBeforeCompactResult),
        _spec(ev.ResourcesDiscoverEvent, A, ev.ResourcesDiscoverResult),
        _spec(ev.ProjectTrustEvent, G, ev.ProjectTrustResult),
        _spec(ev.SessionStartEvent, N),
        _spec(ev.SessionShutdownEvent, N),
        _spec(ev.SessionBeforeSwitchEvent, X, ev.SessionBeforeSwitchResult),
        _spec(ev.SessionBeforeForkEvent, X, ev.SessionBeforeForkResult),
        _spec(ev.SessionBeforeTreeEvent, X, ev.SessionBeforeTreeResult),
        _spec(ev.SessionTreeEvent, N),
        _spec(ev.SessionCompactEvent, N),
        _spec(ev.SessionCompactFailedEvent, N),
        _spec(ev.SessionInfoChangedEvent, N),
        _spec(ev.BeforeAgentStartEvent, A, ev.BeforeAgentStartResult),
        _spec(ev.AgentStartEvent, N),
        _spec(ev.AgentEndEvent, N),
        _spec(ev.AgentBeforeSettleEvent, B, ev.BoundaryResult),
        _spec(ev.AgentSettledEvent, N),
        _spec(ev.TurnStartEvent, N),
        _spec(ev.TurnEndEvent, B, ev.BoundaryResult),
        _spec(ev.MessageStartEvent, N),
        _spec(ev.MessageUpdateEvent, N),
        _spec(ev.MessageEndEvent, C, ev.MessageEndResult),
        _spec(ev.ToolExecutionStartEvent, N),
        _spec(ev.ToolExecutionUpdateEvent, N),
        _spec(ev.ToolExecutionEndEvent, N),
        _spec(ev.BeforeProviderHeadersEvent, M),
        _spec(ev.BeforeProviderRequestEvent, C, ev.BeforeProviderRequestResult),
        _spec(ev.AfterProviderResponseEvent, N),
        _spec(ev.ProviderStreamEvent, N),
        _spec(ev.ModelSelectEvent, N),
        _spec(ev.ThinkingLevelSelectEvent, N),
        _spec(ev.UserBashEvent, G, ev.UserBashResult, fail_closed=True),
        _spec(ev.BashSpawnEvent, G, ev.BashSpawnResult, fail_closed=True),
        _spec(ev.HookOutcomeEvent, N),
    )
}
"""Every event pi emits, with its event model, result model and composition rule."""

REGISTRATION_HOOKS: tuple[str, ...] = (
    "register_tools",
    "register_commands",
    "register_flags",
    "register_providers",
    "register_cli_commands",
    "add_hookspecs",
)
