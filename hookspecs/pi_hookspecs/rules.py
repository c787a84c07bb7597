"""How the results of several handlers of one event combine, and the decorators that
declare it, once, on each hookspec.

A hookspec in :mod:`pi_hookspecs.specs` is the single source of everything pi knows about
its hook: the signature names the event model and the result model, the decorator the
composition rule and the section of the hook reference::

    @event_spec(Rule.GATE, group="Tools", fail_closed=True)
    def tool_call(event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        \"\"\"A tool is about to run: the policy gate. ...\"\"\"

The decorator checks the signature at import (the event model's ``type`` is the hook's
name, the result is ``Model | None`` or ``None`` as the rule requires), records an
:class:`EventSpec` on the function (:func:`contract_of`) and applies pluggy's
``hookspec`` marker. ``EVENTS``, ``REGISTRATION_HOOKS`` (in :mod:`pi_hookspecs.specs`), the
hook reference's sections
and the tests' list of hooks are derived from these records.

Handlers run one at a time, in pluggy's call order: ``tryfirst`` implementations
first, then the others from the most recently loaded plugin to the earliest, then
``trylast`` ones (pi loads plugins in the order built-in, installed, user files,
settings, project files, ``-e``, SDK). Built-in behaviour is ``trylast``.
"""

import types
import typing
from collections.abc import Callable
from enum import StrEnum
from typing import Any, TypeVar

from pydantic import BaseModel

from . import events as ev
from ._event import OCCASIONAL
from .compose import Aggregate, Cancellable, Composition
from .markers import hookspec
from .record import dataclass

__all__ = [
    "EventSpec",
    "RegistrationSpec",
    "Rule",
    "contract_of",
    "event_spec",
    "registration_spec",
]


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
    the event (those declared ``fail_closed``: ``tool_call``, ``user_bash``,
    ``bash_spawn`` and ``file_access``, block the operation)."""
    CANCELLABLE = "cancellable"
    """The first ``cancel: True`` stops the walk and cancels the operation; otherwise
    the last non-empty result replaces the whole result. An exception is reported."""
    AGGREGATE = "aggregate"
    """Results are collected in call order. An exception is reported."""
    BOUNDARY = "boundary"
    """Each handler sees the entries and the continuation proposed so far and may
    replace either. An exception is reported and that handler's draft is dropped."""


_RESULTLESS = frozenset({Rule.NOTIFICATION, Rule.MUTATION})
"""Rules whose handlers return nothing."""

_DECLARED = frozenset({Rule.CHAINED, Rule.GATE})
"""Rules whose hookspec must say how results combine (``compose=``)."""


def _default_composition(name: str, rule: Rule) -> Composition:
    """The composition a rule implies; the rules in :data:`_DECLARED` imply none."""
    if rule in _DECLARED:
        raise TypeError(f"hookspec {name}: a {rule.value} hook declares how its results combine (compose=...)")
    if rule is Rule.CANCELLABLE:
        return Cancellable()
    if rule is Rule.AGGREGATE:
        return Aggregate()
    return Composition()


class EventSpec:
    """What the hookspec of one event declares (recorded by :func:`event_spec`): its
    ``name``, ``event`` and ``result`` models, composition ``rule`` and how it combines
    results (``compose``, a :class:`~pi_hookspecs.compose.Composition`), whether an
    exception in a handler blocks the operation instead of being skipped
    (``fail_closed``), whether handlers may change the event in place (``in_place``:
    pi validates it after each and undoes an invalid change), and the section of the
    hook reference (``docs/hooks.md``) it is listed in (``group``).

    The models of an occasional event (``pi_hookspecs.events.OCCASIONAL``) are looked up
    the first time ``event`` or ``result`` is read, so that declaring its hookspec does
    not create them."""

    __slots__ = ("_models", "_resolve", "compose", "fail_closed", "group", "in_place", "name", "rule")

    def __init__(
        self,
        name: str,
        event: type[ev.Event] | None,
        result: type[BaseModel] | None,
        rule: Rule,
        fail_closed: bool = False,
        group: str = "",
        *,
        resolve: Callable[[], tuple[type[ev.Event], type[BaseModel] | None]] | None = None,
        compose: Composition | None = None,
        in_place: bool = False,
    ) -> None:
        self.name = name
        self.rule = rule
        self.fail_closed = fail_closed
        self.group = group
        self.compose = compose if compose is not None else _default_composition(name, rule)
        self.in_place = in_place
        if fail_closed and not self.compose.fails_closed:
            raise TypeError(f"hookspec {name}: fail_closed needs a composition that says what a failure answers")
        self._resolve = resolve
        self._models: tuple[type[ev.Event], type[BaseModel] | None] | None = None
        if resolve is None:
            if event is None:
                raise TypeError("EventSpec needs an event model or a resolve function")
            self._models = (event, result)

    def _get(self) -> tuple[type[ev.Event], type[BaseModel] | None]:
        if self._models is None:
            assert self._resolve is not None
            self._models = self._resolve()
        return self._models

    @property
    def event(self) -> type[ev.Event]:
        return self._get()[0]

    @property
    def result(self) -> type[BaseModel] | None:
        return self._get()[1]

    def _key(self) -> tuple[Any, ...]:
        return (
            self.name,
            self.event,
            self.result,
            self.rule,
            self.fail_closed,
            self.group,
            self.compose,
            self.in_place,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EventSpec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.name, self.rule))

    def __repr__(self) -> str:
        event = self.event.__name__ if self._models is not None else "(not looked up yet)"
        return f"EventSpec({self.name!r}, {event}, rule={self.rule.value!r}, group={self.group!r})"


@dataclass(frozen=True, slots=True)
class RegistrationSpec:
    """What a registration hookspec declares (recorded by :func:`registration_spec`):
    the hook is called once per plugin, in load order, with one callback."""

    name: str
    argument: str
    """The name of the callback argument (``register`` or ``add``)."""
    callback: Any
    """The callback's protocol (:class:`~pi_hookspecs.RegisterTool` …)."""
    group: str = "Registration"


Contract = EventSpec | RegistrationSpec
_ATTRIBUTE = "pi_contract"
F = TypeVar("F", bound=Callable[..., Any])


def contract_of(function: object) -> EventSpec | RegistrationSpec | None:
    """The contract recorded on a hookspec function, or ``None`` (not one of pi's own)."""
    found = getattr(function, _ATTRIBUTE, None)
    return found if isinstance(found, EventSpec | RegistrationSpec) else None


def _bad(function: Callable[..., Any], problem: str) -> TypeError:
    return TypeError(f"hookspec {function.__name__}: {problem}")


class _Deferred(Exception):
    """An annotation names an occasional event that is not made yet."""


class _Occasional(dict[str, Any]):
    """The local namespace string annotations are evaluated in: an occasional event's
    name is looked up in :mod:`pi_hookspecs.events` (which makes it) when ``make``, else
    raises :class:`_Deferred`; any other name falls through to the module's globals."""

    def __init__(self, make: bool) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, name: str) -> Any:
        if name in OCCASIONAL:
            if not self.make:
                raise _Deferred(name)
            return getattr(ev, name)
        raise KeyError(name)


def _signature(function: Callable[..., Any], *, make: bool = False) -> tuple[list[str], dict[str, Any]]:
    """The parameter names and the evaluated annotations (cheaper than ``inspect``:
    this runs for every hookspec when pi_hookspecs is imported). A string annotation
    naming an occasional event raises :class:`_Deferred` unless ``make``."""
    code = function.__code__
    params = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    hints = dict(function.__annotations__)
    if any(isinstance(hint, str) for hint in hints.values()):  # quoted, or `from __future__ import annotations`
        names = _Occasional(make)
        hints = {k: eval(v, function.__globals__, names) if isinstance(v, str) else v for k, v in hints.items()}
    if "return" in hints and hints["return"] is None:
        hints["return"] = type(None)
    return params, hints


def hookspec_hints(function: Callable[..., Any]) -> dict[str, Any]:
    """A hookspec's evaluated annotations, like ``typing.get_type_hints``, which cannot
    resolve the quoted name of an occasional event (``pi_hookspecs.events.OCCASIONAL``)
    before it is made: this makes it."""
    return _signature(function, make=True)[1]


def _result_model(function: Callable[..., Any], hint: Any) -> type[BaseModel] | None:
    """``None`` for ``-> None``; ``Model`` for ``-> Model | None``."""
    if hint is type(None):
        return None
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (types.UnionType, typing.Union) and len(args) == 2 and type(None) in args:
        model = args[0] if args[1] is type(None) else args[1]
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model
    raise _bad(function, f"return annotation must be `Model | None` or `None`, not {hint!r}")


def event_spec(
    rule: Rule,
    *,
    group: str,
    fail_closed: bool = False,
    compose: Composition | None = None,
    in_place: bool = False,
) -> Callable[[F], F]:
    """Declare the hookspec of an event: ``(event: XEvent, ctx: ...) -> XResult | None``
    (``-> None`` for notification and mutation rules), its composition ``rule`` and,
    for a chained event or a gate, how its results combine (``compose``, see
    :mod:`pi_hookspecs.compose`), whether a failing handler blocks the operation
    (``fail_closed``), whether handlers may change the event in place (``in_place``)
    and its ``group`` in the hook reference. Records an :class:`EventSpec` and applies
    pluggy's marker. This is all pi's runner needs: a new event is its hookspec."""

    def mark(function: F) -> F:
        options: dict[str, Any] = {"fail_closed": fail_closed, "group": group, "compose": compose, "in_place": in_place}
        try:
            event, result = _event_models(function, rule)
            spec = EventSpec(function.__name__, event, result, rule, **options)
        except _Deferred:  # an occasional event: checked when its models are first read
            spec = EventSpec(
                function.__name__, None, None, rule, resolve=lambda: _event_models(function, rule, make=True), **options
            )
        setattr(function, _ATTRIBUTE, spec)
        return hookspec(function)

    return mark


def _event_models(
    function: Callable[..., Any], rule: Rule, *, make: bool = False
) -> tuple[type[ev.Event], type[BaseModel] | None]:
    """The event and result models a hookspec's signature declares, checked."""
    params, hints = _signature(function, make=make)
    if params != ["event", "ctx"]:
        raise _bad(function, "an event hookspec takes (event, ctx)")
    event = hints.get("event")
    if not (isinstance(event, type) and issubclass(event, ev.Event)):
        raise _bad(function, f"`event` must be annotated with an Event model, not {event!r}")
    if event.model_fields["type"].default != function.__name__:
        raise _bad(function, f"{event.__name__}.type is not {function.__name__!r}")
    result = _result_model(function, hints.get("return"))
    if (result is None) != (rule in _RESULTLESS):
        expected = "-> None" if rule in _RESULTLESS else "-> Model | None"
        raise _bad(function, f"a {rule.value} hook is declared {expected}")
    return event, result


def registration_spec(*, group: str = "Registration") -> Callable[[F], F]:
    """Declare a registration hookspec: ``(register: RegisterX) -> None`` (one callback
    argument, annotated with its protocol). Records a :class:`RegistrationSpec` and
    applies pluggy's marker."""

    def mark(function: F) -> F:
        params, hints = _signature(function)
        if len(params) != 1 or params[0] not in hints:
            raise _bad(function, "a registration hookspec takes one annotated callback argument")
        if hints.get("return") is not type(None):
            raise _bad(function, "a registration hookspec returns None")
        spec = RegistrationSpec(function.__name__, params[0], hints[params[0]], group=group)
        setattr(function, _ATTRIBUTE, spec)
        return hookspec(function)

    return mark
