"""How the results of one event's handlers combine — declared on each hookspec.

An event's hookspec names its :class:`~pi_hookspecs.Rule` and, where the rule leaves
room, a :class:`Composition` (``@event_spec(Rule.CHAINED, compose=Chained("messages"))``):
which event field the handlers' results replace in turn, how a gate's result decides,
what a gate that failed closed answers, what the event's caller gets back. pi's event
runner has no table of hook names: it walks the handlers and asks the composition.

A composition is stateless; what it keeps during one dispatch lives in the ``state`` its
:meth:`Composition.start` returns. For each handler's (validated, non-``None``) result
the runner calls :meth:`Composition.apply`, which changes the event where the result
chains and returns a :class:`Step`: what the result did (for ``hook_outcome``) and
whether it ends the walk. A result that is invalid in a way its model cannot say raises
:class:`ValueError`: the runner reports the handler as failed with that message.
"""

from __future__ import annotations

from typing import Any, Literal

from .record import dataclass

__all__ = [
    "Actions",
    "Aggregate",
    "Blocked",
    "BlockingGate",
    "Cancellable",
    "Chained",
    "Composition",
    "DecidingGate",
    "Outcome",
    "Patched",
    "Step",
]

Outcome = Literal["transformed", "handled", "blocked", "cancelled"]
"""What a handler's result did, as ``hook_outcome`` reports it."""


@dataclass(frozen=True, slots=True)
class Step:
    """What one handler's result did: its ``outcome`` (``None``: nothing to report),
    whether it ends the walk (``stop``) and, then, what the dispatch returns (``value``;
    ``reason`` is the message ``hook_outcome`` carries)."""

    outcome: Outcome | None = None
    stop: bool = False
    value: Any = None
    reason: str | None = None


GO_ON = Step()
CHANGED = Step("transformed")


@dataclass(frozen=True, slots=True)
class Blocked:
    """What a fail-closed gate whose operation is pi's own (``user_bash``,
    ``bash_spawn``, ``file_access``) returns when a handler blocked it or failed: do not
    proceed. ``plugin`` names the handler's plugin."""

    plugin: str
    reason: str


class Composition:
    """The behaviour of a rule that leaves none to declare: nothing chains, results are
    not looked at, the dispatch returns ``None``."""

    chains: str | None = None
    """The event field handlers' results replace in turn (for the hook reference)."""

    def start(self, event: Any) -> Any:
        """The state of one dispatch (``None`` unless the composition keeps some)."""
        return None

    def apply(self, state: Any, event: Any, result: Any, plugin: str) -> Step:
        """What the handler of ``plugin`` returning ``result`` does to ``event``."""
        return GO_ON

    def finish(self, state: Any, event: Any) -> Any:
        """What the dispatch returns when no handler ended it (also without handlers)."""
        return None

    def refuse(self, event: Any, plugin: str, message: str, result: type[Any] | None) -> Any:
        """What a fail-closed event returns when a handler of ``plugin`` failed
        (``message`` says how; it may reach the model, so it names no local path;
        ``result`` is the hook's result model)."""
        raise NotImplementedError(f"{type(self).__name__} does not fail closed")

    @property
    def fails_closed(self) -> bool:
        return type(self).refuse is not Composition.refuse

    def describe(self) -> str:
        """One line for the hook reference."""
        return ""


class Chained(Composition):
    """Each result's ``field`` replaces the event's: the next handler sees it, the
    dispatch returns its final value. ``keep`` names attributes of the field's value a
    replacement may not change (``message_end``: the message's role)."""

    def __init__(self, field: str, *, keep: tuple[str, ...] = ()) -> None:
        self.field = self.chains = field
        self.keep = keep

    def apply(self, state: Any, event: Any, result: Any, plugin: str) -> Step:
        new = getattr(result, self.field)
        old = getattr(event, self.field)
        for attribute in self.keep:
            before, after = getattr(old, attribute, None), getattr(new, attribute, None)
            if before != after:
                raise ValueError(
                    f"handler replaced a {before!r} {self.field} with a {after!r} {self.field}; "
                    f"a replacement must keep the {attribute}"
                )
        setattr(event, self.field, new)
        return CHANGED

    def finish(self, state: Any, event: Any) -> Any:
        return getattr(event, self.field)

    def describe(self) -> str:
        kept = f" (keeping its {', '.join(self.keep)})" if self.keep else ""
        return f"each result's `{self.field}` replaces the event's{kept}; the caller gets the last"


class Patched(Composition):
    """Each result is a patch: a field it sets (``model_fields_set``) replaces the
    event's — ``None`` only for the fields in ``nullable`` — and the dispatch returns
    the patched event. ``clears`` maps a field to one a replacement of it resets
    (``tool_result``: new ``content`` drops the old ``structured_content``)."""

    def __init__(self, *fields: str, nullable: tuple[str, ...] = (), clears: dict[str, str] | None = None) -> None:
        self.fields = fields
        self.nullable = frozenset(nullable)
        self.clears = clears or {}
        self.chains = ", ".join(fields)

    def apply(self, state: Any, event: Any, result: Any, plugin: str) -> Step:
        given = result.model_fields_set
        for name in self.fields:
            if name not in given:
                continue
            value = getattr(result, name)
            if value is None and name not in self.nullable:
                continue
            setattr(event, name, list(value) if isinstance(value, list) else value)
            cleared = self.clears.get(name)
            if cleared is not None and cleared not in given:
                setattr(event, cleared, None)
        return CHANGED

    def finish(self, state: Any, event: Any) -> Any:
        return event

    def describe(self) -> str:
        return f"each result patches the event ({', '.join(f'`{f}`' for f in self.fields)}); the caller gets the event"


class Actions(Composition):
    """A result's ``action`` says what it does: ``"handled"`` ends the walk (the
    dispatch returns a result with that action and the event's ``fields``);
    ``"transform"`` replaces the event's ``fields`` the result gives (the next handler
    sees them); ``"continue"`` does nothing. Without a handler that handled it, the
    dispatch returns the result model with ``"transform"`` (something changed) or
    ``"continue"`` and the fields' final values (``input``)."""

    def __init__(self, result: type[Any], *fields: str) -> None:
        self.result = result
        self.fields = fields
        self.chains = ", ".join(fields)

    def start(self, event: Any) -> Any:
        return [False]

    def _answer(self, action: str, event: Any) -> Any:
        values = {name: _copy(getattr(event, name)) for name in self.fields}
        return self.result(action=action, **values)

    def apply(self, state: Any, event: Any, result: Any, plugin: str) -> Step:
        if result.action == "handled":
            return Step("handled", True, self._answer("handled", event))
        if result.action != "transform":
            return GO_ON
        for name in self.fields:
            value = getattr(result, name)
            if value is not None:
                setattr(event, name, _copy(value))
        state[0] = True
        return CHANGED

    def finish(self, state: Any, event: Any) -> Any:
        return self._answer("transform" if state and state[0] else "continue", event)

    def describe(self) -> str:
        fields = ", ".join(f"`{name}`" for name in self.fields)
        return f"`action: transform` replaces {fields} for the next handler; `handled` ends the walk"


def _copy(value: Any) -> Any:
    return list(value) if isinstance(value, list) else value


class BlockingGate(Composition):
    """The first result with ``block`` set ends the walk: the dispatch returns it (its
    ``reason`` defaulting to one naming the plugin), or a :class:`Blocked` when
    ``blocked`` is set (the event guards pi's own operation). A failing handler blocks
    too when the hookspec is ``fail_closed``."""

    def __init__(self, *, blocked: bool = False) -> None:
        self.blocked = blocked

    def apply(self, state: Any, event: Any, result: Any, plugin: str) -> Step:
        if not result.block:
            return GO_ON
        reason = result.reason or f"Blocked by plugin {plugin!r}"
        if self.blocked:
            value: Any = Blocked(plugin, result.reason or f"blocked by plugin {plugin!r}")
        elif result.reason:
            value = result
        else:
            value = result.model_copy(update={"reason": reason})
        return Step("blocked", True, value, reason)

    def refuse(self, event: Any, plugin: str, message: str, result: type[Any] | None) -> Any:
        reason = f"the {event.type} handler of plugin {plugin!r} failed ({message})"
        if self.blocked or result is None:
            return Blocked(plugin, reason)
        return result.model_validate({"block": True, "reason": f"Blocked: {reason}"})

    def describe(self) -> str:
        return "the first result that blocks ends the walk" + (" (pi's operation is not run)" if self.blocked else "")


class DecidingGate(Composition):
    """The first result that ``decides`` ends the walk and is returned (with the
    ``outcome`` it reports); ``check`` may refuse a result (a ``ValueError``). A
    ``block`` in a result of ``blocks`` events returns a :class:`Blocked`. A failing
    handler returns a :class:`Blocked` when the hookspec is ``fail_closed``."""

    def __init__(
        self,
        decides: Any,
        *,
        outcome: Outcome | None = "handled",
        check: Any = None,
        blocks: bool = False,
        summary: str = "",
    ) -> None:
        self.decides = decides
        self.outcome = outcome
        self.check = check
        self.blocks = blocks
        self.summary = summary

    def apply(self, state: Any, event: Any, result: Any, plugin: str) -> Step:
        if self.blocks and result.block:
            reason = result.reason or f"blocked by plugin {plugin!r}"
            return Step("blocked", True, Blocked(plugin, reason), reason)
        if self.check is not None:
            self.check(event, result)
        if not self.decides(event, result):
            return GO_ON
        return Step(self.outcome, True, result)

    def refuse(self, event: Any, plugin: str, message: str, result: type[Any] | None) -> Any:
        return Blocked(plugin, f"the {event.type} handler of plugin {plugin!r} failed ({message})")

    def describe(self) -> str:
        return self.summary


class Cancellable(Composition):
    """The first result with ``cancel`` set ends the walk (and cancels the operation);
    otherwise the dispatch returns the last result."""

    def start(self, event: Any) -> Any:
        return [None]

    def apply(self, state: Any, event: Any, result: Any, plugin: str) -> Step:
        state[0] = result
        if result.cancel:
            return Step("cancelled", True, result)
        return CHANGED

    def finish(self, state: Any, event: Any) -> Any:
        return state[0] if state is not None else None


class Aggregate(Composition):
    """The results are collected in call order; the dispatch returns the list. With
    ``chains``, a result's value of that field (when not ``None``) also replaces the
    event's, so later handlers see it; ``changes`` names the result fields that make a
    result count as a transformation for ``hook_outcome``."""

    def __init__(self, *, chains: str | None = None, changes: tuple[str, ...] = ()) -> None:
        self.chains = chains
        self.changes = changes

    def start(self, event: Any) -> Any:
        return []

    def apply(self, state: Any, event: Any, result: Any, plugin: str) -> Step:
        if self.chains is not None:
            value = getattr(result, self.chains)
            if value is not None:
                setattr(event, self.chains, value)
        state.append(result)
        return CHANGED if any(getattr(result, name) is not None for name in self.changes) else GO_ON

    def finish(self, state: Any, event: Any) -> Any:
        return state if state is not None else []

    def describe(self) -> str:
        chained = f"; each `{self.chains}` also replaces the event's" if self.chains else ""
        return f"the caller gets every result, in call order{chained}"
