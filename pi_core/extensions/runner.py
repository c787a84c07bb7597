"""The async event runner: dispatches one event to its handlers and combines results.

Handlers run one at a time in pluggy's call order (``reversed(hook.get_hookimpls())``:
``tryfirst`` first, then the most recently registered plugin first, ``trylast``
last). pluggy wrappers (``wrapper=True`` / ``hookwrapper=True``) of pi's hooks are
refused when plugins load (:class:`~pi_core.extensions.PluginHost`); one that reaches
the runner anyway (registered around the host) is reported, never skipped in silence.
A handler may be sync or async and may take any subset of ``(event, ctx)``. What a
handler returns is validated against the event's result model (a dict with the same
fields is accepted); a wrong type is a handler error that names the plugin, the hook
and the expected type. When a handler blocks, transforms,
handles or cancels an event, or fails, the ``hook_outcome`` handlers are told (only
when there are any, and never about a ``hook_outcome`` handler itself).

How results combine is the event's :class:`~pi_hookspecs.Rule`, declared on its hookspec
(``pi_hookspecs.EVENTS`` is derived from the hookspecs).
What :meth:`EventRunner.emit` returns, by event:

=======================  =========================================================
notification, mutation   ``None``
``input``                :class:`InputResult` — ``action`` and the chained text/images
``context``, ``context_with_system``   the (possibly replaced) message list
``message_end``          the (possibly replaced) message
``before_provider_request``  the (possibly replaced) payload
``tool_result``          the event, patched field by field
``tool_call``            :class:`ToolCallResult` when blocked, else ``None``
``user_bash``            :class:`UserBashResult`, :class:`Blocked`, or ``None``
``bash_spawn``           :class:`Blocked` (blocked, or a handler failed), or ``None``
``project_trust``        the first yes/no :class:`ProjectTrustResult`, or ``None``
cancellable              the first cancelling result, else the last result, or ``None``
aggregate                the list of results
boundary                 use :meth:`EventRunner.emit_boundary`
=======================  =========================================================

Plugins call pi's events through the same runner: ``ctx.hook.<event>(event)``
(:class:`PluginHooks`) returns an awaitable of what :meth:`EventRunner.call` returns;
hooks that plugins publish with ``add_hookspecs`` are pluggy's own hook callers.

``PI_TRACE_HOOKS=1`` traces every call the runner makes itself (the runner calls each
implementation, because it awaits coroutines and composes results between two handlers,
which pluggy's ``hook(...)`` cannot do, so pluggy's hook-call monitoring never sees
these calls), and installs pluggy's hook-call monitoring
(``PluginManager.add_hookcall_monitoring``) for the calls that do go through pluggy:
the hooks plugins publish.
"""

from __future__ import annotations

import enum
import inspect
import os
import sys
import time
from collections import deque
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from contextvars import ContextVar
from typing import Annotated, Any

import pluggy
from pydantic import BaseModel, TypeAdapter, ValidationError

import pi_hookspecs
from pi_hookspecs import (
    EVENTS,
    BoundaryResult,
    EventSpec,
    Rule,
)
from pi_hookspecs.compose import Blocked
from pi_hookspecs.record import dataclass
from pi_hookspecs.rules import contract_of

from .diagnostics import describe_exception, exception_location
from .guard import DEFAULT_HOOK_TIMEOUT, HandlerAbandoned, HandlerExit, HandlerGuard, HandlerTimeout


@dataclass(slots=True)
class HookError:
    """A handler failed (raised, or returned something invalid)."""

    plugin: str
    hook: str
    message: str
    """What went wrong, without paths of this machine: it may reach the model (a gate
    that failed closed says why)."""
    exception: BaseException | None = None
    location: str = ""
    """`` (file.py:12)`` where the handler raised, for the people reading pi's reports."""

    @property
    def detail(self) -> str:
        """The message with where it happened, for stderr, the terminal and clients."""
        return self.message + self.location

    def format(self) -> str:
        return f"plugin {self.plugin!r}, hook {self.hook}: {self.detail}"


CURRENT_PLUGIN: ContextVar[str | None] = ContextVar("pi_current_plugin", default=None)
"""The plugin whose hook handler (or command) is running; tasks it starts inherit it.
Run-time registrations (``ctx.register_tool``) are owned by it."""


def current_plugin() -> str | None:
    return CURRENT_PLUGIN.get()


class HookReturnError(TypeError):
    pass


class Takes(enum.Enum):
    """Which of ``(event, ctx)`` a handler takes, in its order (the value: its
    parameter names, joined)."""

    NOTHING = ""
    EVENT = "event"
    CTX = "ctx"
    EVENT_CTX = "event, ctx"
    CTX_EVENT = "ctx, event"


_READS_EVENT = frozenset({Takes.EVENT, Takes.EVENT_CTX, Takes.CTX_EVENT})


class _Impl:
    __slots__ = ("fn", "is_async", "plugin", "takes")

    def __init__(self, plugin: str, fn: Callable[..., Any], argnames: tuple[str, ...]) -> None:
        self.plugin = plugin
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn)
        try:
            self.takes = Takes(", ".join(argnames))
        except ValueError:
            raise TypeError(f"{plugin}: unsupported hook arguments {argnames}") from None

    def call(self, event: Any, ctx: Any) -> Any:
        takes = self.takes
        if takes is Takes.EVENT_CTX:
            return self.fn(event, ctx)
        if takes is Takes.EVENT:
            return self.fn(event)
        if takes is Takes.NOTHING:
            return self.fn()
        if takes is Takes.CTX:
            return self.fn(ctx)
        return self.fn(ctx, event)


def _short_validation(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', ())) or '(root)'}: {e.get('msg')}" for e in exc.errors()[:3]
    )


class EventRunner:
    """Dispatches events of one session runtime to the plugins of its plugin manager."""

    def __init__(
        self,
        pm: pluggy.PluginManager,
        *,
        ctx: Any = None,
        on_error: Callable[[HookError], None] | None = None,
        trace: bool | None = None,
    ) -> None:
        self.ctx = ctx
        self.errors: deque[HookError] = deque(maxlen=500)
        self._listeners: list[Callable[[HookError], None]] = [on_error] if on_error else []
        self._cache: dict[str, tuple[_Impl, ...]] = {}
        self._specs: dict[str, EventSpec] = dict(EVENTS)
        self._trace = os.environ.get("PI_TRACE_HOOKS") == "1" if trace is None else trace
        self._refused: set[tuple[str, str]] = set()
        self.guard = HandlerGuard(DEFAULT_HOOK_TIMEOUT)
        self.pm = pm
        self.attach(pm)

    @property
    def timeout(self) -> float | None:
        """Seconds each handler call may take (the ``hookTimeout`` setting); ``None``:
        no deadline. See :mod:`.guard`."""
        return self.guard.timeout

    @timeout.setter
    def timeout(self, value: float | None) -> None:
        self.guard.timeout = value

    # ------------------------------------------------------------------ handlers

    def attach(self, pm: pluggy.PluginManager) -> None:
        """Dispatch to ``pm`` from now on (the host builds a new manager for phase two).
        With tracing on, pluggy's hook-call monitoring traces the calls made through
        pluggy itself (the hooks plugins publish)."""
        self.pm = pm
        self._cache.clear()
        self._specs = dict(EVENTS)
        if self._trace:
            pm.add_hookcall_monitoring(_trace_before, _trace_after)

    def invalidate(self) -> None:
        """Forget cached handler lists (after plugins were registered or removed)."""
        self._cache.clear()

    def spec(self, name: str) -> EventSpec | None:
        """The spec of event ``name``: one of pi's (``pi_hookspecs.EVENTS``) or a
        hookspec a plugin published with ``add_hookspecs`` declaring itself an event
        (``@event_spec``), which the runner dispatches the same way."""
        spec = self._specs.get(name)
        if spec is None:
            caller = getattr(self.pm.hook, name, None)
            found = contract_of(caller.spec.function) if caller is not None and caller.spec is not None else None
            if isinstance(found, EventSpec):
                spec = self._specs[name] = found
        return spec

    def handlers(self, name: str) -> tuple[_Impl, ...]:
        impls = self._cache.get(name)
        if impls is None:
            caller = getattr(self.pm.hook, name, None)
            found: list[_Impl] = []
            if caller is not None:
                for impl in caller.get_hookimpls():
                    if getattr(impl.plugin, "__pi_stand_in__", False):
                        # an installed plugin not imported yet (pi_core.extensions.lazy):
                        # imported here, on the loop's thread, before its first event
                        impl.plugin._pi_import(name)
            for impl in reversed(caller.get_hookimpls()) if caller is not None else ():
                if impl.hookwrapper or impl.wrapper:
                    self._refuse_wrapper(impl.plugin_name, name)
                    continue
                found.append(_Impl(impl.plugin_name, impl.function, tuple(impl.argnames)))
            impls = self._cache[name] = tuple(found)
        return impls

    def _refuse_wrapper(self, plugin: str, hook: str) -> None:
        """A wrapper that was registered without the host's check: reported once."""
        if (plugin, hook) not in self._refused:
            self._refused.add((plugin, hook))
            self.report(plugin, hook, f"not called: {WRAPPERS_REFUSED}")

    def has_handlers(self, name: str) -> bool:
        """Whether any plugin handles ``name`` (build the event only if so)."""
        return bool(self._cache.get(name) or self.handlers(name))

    def reads_event(self, name: str) -> bool:
        """Whether a handler of ``name`` takes the event (one declared ``(ctx)`` or ``()``
        never sees it: what only the event carries need not be computed)."""
        return any(impl.takes in _READS_EVENT for impl in self.handlers(name))

    def trace(self, message: str) -> None:
        """Print ``pi trace: message`` to stderr when ``PI_TRACE_HOOKS=1``."""
        if self._trace:
            print(f"pi trace: {message}", file=sys.stderr)

    def add_error_listener(self, listener: Callable[[HookError], None]) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    # ------------------------------------------------------------------ errors

    def report(
        self, plugin: str, hook: str, message: str, exc: BaseException | None = None, location: str = ""
    ) -> HookError:
        error = HookError(plugin, hook, message, exc, location)
        self.errors.append(error)
        if self._listeners:
            for listener in list(self._listeners):
                try:
                    listener(error)
                except Exception:
                    pass
        else:
            print(f"pi: {error.format()}", file=sys.stderr)
        return error

    def _report_exc(self, impl: _Impl, hook: str, exc: BaseException) -> HookError:
        if isinstance(exc, HookReturnError | HandlerTimeout | HandlerAbandoned):
            return self.report(impl.plugin, hook, str(exc), exc)
        if isinstance(exc, HandlerExit):
            original = exc.original
            return self.report(
                impl.plugin,
                hook,
                f"handler raised {describe_exception(original, location=False)} (a plugin cannot end pi)",
                exc,
                exception_location(original),
            )
        return self.report(
            impl.plugin, hook, f"handler raised {describe_exception(exc, location=False)}", exc, exception_location(exc)
        )

    async def _outcome(self, plugin: str, hook: str, outcome: Any, message: str | None, event: Any, ctx: Any) -> None:
        """Tell ``hook_outcome`` handlers that a handler of ``hook`` acted. Never for
        ``hook_outcome`` itself (no recursion); nothing is built without handlers."""
        if hook == "hook_outcome" or not self.has_handlers("hook_outcome"):
            return
        tool_call_id = getattr(event, "tool_call_id", None)
        await self.emit(
            "hook_outcome",
            pi_hookspecs.HookOutcomeEvent(  # occasional: made when a plugin implements hook_outcome
                hook=hook,
                plugin=plugin,
                outcome=outcome,
                message=message,
                tool_call_id=tool_call_id if isinstance(tool_call_id, str) else None,
            ),
            ctx,
        )

    def _coerce(self, impl: _Impl, hook: str, expected: type[BaseModel], result: Any) -> Any:
        if isinstance(result, expected):
            return result
        if isinstance(result, dict):
            try:
                return expected.model_validate(result)
            except ValidationError as exc:
                raise HookReturnError(
                    f"handler returned an invalid {expected.__name__}: {_short_validation(exc)}"
                ) from exc
        raise HookReturnError(
            f"handler returned {type(result).__name__}; {hook} handlers return "
            f"{expected.__name__}, a dict with its fields, or None"
        )

    # ------------------------------------------------------------------ dispatch

    async def _call(self, impl: _Impl, hook: str, event: Any, ctx: Any) -> Any:
        # The caller (emit / emit_boundary) restores CURRENT_PLUGIN once afterwards.
        CURRENT_PLUGIN.set(impl.plugin)
        spec = self._specs.get(hook)
        before = _snapshot(event) if spec is not None and spec.in_place else None
        start = time.perf_counter() if self._trace else 0.0
        try:
            result = await self.guard.call(
                lambda: impl.call(event, ctx), impl.is_async, _abort_signal(ctx), (impl.plugin, hook)
            )
        except Exception as exc:
            if self._trace:
                print(f"pi trace: {hook} <- {impl.plugin}: raised {describe_exception(exc)}", file=sys.stderr)
            if before is not None:
                _undo_invalid(event, before)
            raise
        if self._trace:
            took = (time.perf_counter() - start) * 1000
            shown = repr(result)
            shown = shown if len(shown) < 200 else shown[:197] + "..."
            print(f"pi trace: {hook} <- {impl.plugin}: {shown} ({took:.2f} ms)", file=sys.stderr)
        if before is not None:
            problem = _undo_invalid(event, before)
            if problem is not None:
                raise HookReturnError(
                    f"handler changed the {hook} event in place to an invalid value ({problem}); the change was undone"
                )
        return result

    async def emit(self, name: str, event: Any, ctx: Any = None) -> Any:
        """Dispatch ``event`` to the handlers of ``name`` and combine their results as
        its hookspec declares (:attr:`EventSpec.compose <pi_hookspecs.EventSpec>`)."""
        impls = self._cache.get(name)
        if impls is None:
            impls = self.handlers(name)
        spec = self._specs.get(name) or self.spec(name)
        if spec is None:
            raise KeyError(f"{name!r} is not an event: no hookspec declares it with @event_spec")
        rule = spec.rule
        if rule is Rule.BOUNDARY:
            return await self.emit_boundary(name, event, None, ctx)
        if not impls:
            compose = spec.compose
            return compose.finish(compose.start(event), event)
        if ctx is None:
            ctx = self.ctx
        if self._trace:
            print(f"pi trace: {name} -> {[i.plugin for i in impls]}", file=sys.stderr)
        token = CURRENT_PLUGIN.set(None)
        try:
            if rule is Rule.NOTIFICATION or rule is Rule.MUTATION:
                # a mutation's handlers see each other's changes: one by one, never batched
                await self._notify(name, impls, event, ctx, batch=rule is Rule.NOTIFICATION and not self._trace)
                return None
            return await self._compose(spec, impls, event, ctx)
        finally:
            CURRENT_PLUGIN.reset(token)

    async def _compose(self, spec: EventSpec, impls: tuple[_Impl, ...], event: Any, ctx: Any) -> Any:
        """Walk the handlers; the spec's composition applies each result, says whether
        it ends the walk and what the dispatch returns. A handler that fails (or whose
        result the composition refuses) is reported; a ``fail_closed`` event then ends
        with what the composition answers for a failure."""
        name, compose, expected = spec.name, spec.compose, spec.result
        assert expected is not None, name  # the rules that compose results declare a result model
        state = compose.start(event)
        for impl in impls:
            try:
                result = await self._call(impl, name, event, ctx)
                if result is None:
                    continue
                result = self._coerce(impl, name, expected, result)
                try:
                    step = compose.apply(state, event, result, impl.plugin)
                except ValueError as exc:
                    raise HookReturnError(str(exc)) from exc
            except Exception as exc:
                error = self._report_exc(impl, name, exc)
                await self._outcome(impl.plugin, name, "failed", error.message, event, ctx)
                if spec.fail_closed:
                    return compose.refuse(event, impl.plugin, error.message, expected)
                continue
            if step.outcome is not None:
                await self._outcome(impl.plugin, name, step.outcome, step.reason, event, ctx)
            if step.stop:
                return step.value
        return compose.finish(state, event)

    async def _notify(self, name: str, impls: tuple[_Impl, ...], event: Any, ctx: Any, *, batch: bool) -> None:
        """Handlers whose results are ignored, in order. With ``batch``, consecutive
        synchronous handlers run in one worker job (:meth:`HandlerGuard.call_batch`: one
        thread hop, not one each); coroutine handlers run one by one. Failures are
        reported in handler order."""
        index = 0
        while index < len(impls):
            impl = impls[index]
            run = 1
            while batch and index + run < len(impls) and not impl.is_async and not impls[index + run].is_async:
                run += 1
            if run == 1:
                try:
                    await self._call(impl, name, event, ctx)
                except Exception as exc:
                    error = self._report_exc(impl, name, exc)
                    await self._outcome(impl.plugin, name, "failed", error.message, event, ctx)
                index += 1
                continue
            group = impls[index : index + run]
            outcomes = await self.guard.call_batch([_bound(i, event, ctx) for i in group], _abort_signal(ctx))
            for member, (ok, value) in zip(group, outcomes, strict=True):
                if not ok:
                    error = self._report_exc(member, name, value)
                    await self._outcome(member.plugin, name, "failed", error.message, event, ctx)
            index += run

    async def call(self, name: str, event: Any, ctx: Any = None) -> Any:
        """Dispatch a core event by name, as ``ctx.hook.<name>(event)`` does: ``event`` is
        the event's model or a dict of its fields; boundary events go through
        :meth:`emit_boundary`. Returns what :meth:`emit` returns."""
        spec = self.spec(name)
        if spec is None:
            raise AttributeError(f"{name!r} is not one of pi's events")
        if isinstance(event, Mapping):
            event = spec.event.model_validate(event)
        elif not isinstance(event, spec.event):
            raise TypeError(
                f"{name} takes a {spec.event.__name__} (or a dict of its fields), not {type(event).__name__}"
            )
        if spec.rule is Rule.BOUNDARY:
            return await self.emit_boundary(name, event, None, ctx)
        return await self.emit(name, event, ctx)

    async def emit_boundary(
        self,
        name: str,
        event: Any,
        build_context: Callable[[list[Any]], Any | Awaitable[Any]] | None = None,
        ctx: Any = None,
    ) -> BoundaryResult:
        """Dispatch ``turn_end`` / ``agent_before_settle``. Each handler sees the entries
        and continuation proposed so far (and ``event.context`` rebuilt from them by
        ``build_context``); a handler whose draft fails is reported and its draft
        dropped. Returns the final proposal."""
        entries = list(event.entries)
        cont = bool(event.continue_)
        impls = self.handlers(name)
        if ctx is None:
            ctx = self.ctx
        token = CURRENT_PLUGIN.set(None)
        try:
            return await self._boundary(name, event, impls, ctx, entries, cont, build_context)
        finally:
            CURRENT_PLUGIN.reset(token)

    async def _boundary(
        self,
        name: str,
        event: Any,
        impls: tuple[_Impl, ...],
        ctx: Any,
        entries: list[Any],
        cont: bool,
        build_context: Callable[[list[Any]], Any | Awaitable[Any]] | None,
    ) -> BoundaryResult:
        for impl in impls:
            event.entries = list(entries)
            event.continue_ = cont
            try:
                result = await self._call(impl, name, event, ctx)
                if result is None:
                    continue
                result = self._coerce(impl, name, BoundaryResult, result)
                new_entries = list(result.entries) if result.entries is not None else entries
                new_cont = result.continue_ if result.continue_ is not None else cont
                if build_context is not None and result.entries is not None:
                    context = build_context(new_entries)
                    if inspect.isawaitable(context):
                        context = await context
                    event.context = context
                entries, cont = new_entries, new_cont
            except Exception as exc:
                error = self._report_exc(impl, name, exc)
                await self._outcome(impl.plugin, name, "failed", error.message, event, ctx)
                continue
            if result.entries is not None or result.continue_ is not None:
                await self._outcome(impl.plugin, name, "transformed", None, event, ctx)
        event.entries = entries
        event.continue_ = cont
        # The entries are the event's drafts or a handler's validated ones: no new data.
        return BoundaryResult.model_construct(entries=entries, continue_=cont)


def _bound(impl: _Impl, event: Any, ctx: Any) -> Callable[[], Any]:
    """``impl`` called with ``event`` and ``ctx``, as its plugin (:data:`CURRENT_PLUGIN`)."""

    def call() -> Any:
        CURRENT_PLUGIN.set(impl.plugin)
        return impl.call(event, ctx)

    return call


def _abort_signal(ctx: Any) -> Any:
    """The run's abort signal as ``ctx`` sees it (``None`` when there is none)."""
    try:
        return getattr(ctx, "signal", None)
    except Exception:  # a stale context, or no session yet
        return None


def _snapshot(event: Any) -> Any:
    """A copy of ``event`` before a handler may change it (``None``: cannot copy): its
    models, lists and dicts are copied, every other value is shared (callables such as
    ``bash_spawn``'s ``launch`` and the objects behind them are never copied)."""
    try:
        return _copied(event)
    except Exception:
        return None


def _copied(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_copy(update={name: _copied(getattr(value, name)) for name in type(value).model_fields})
    if isinstance(value, list):
        return [_copied(item) for item in value]
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    return value


def _undo_invalid(event: Any, before: Any) -> str | None:
    """Validate ``event`` after a handler may have changed it in place; put every
    top-level field holding an invalid value back as it was (``before``) and return
    what was wrong (``None``: valid)."""
    if before is None:
        return None
    try:
        if event == before:
            return None
    except Exception:
        pass
    problems: list[str] = []
    for name in type(event).model_fields:
        found = _field_problems(type(event), name, getattr(event, name, None), name)
        if found:
            problems.extend(found)
            _put_back(event, name, getattr(before, name, None))
    return "; ".join(problems[:3]) or None


_ADAPTERS: dict[tuple[type[BaseModel], str], TypeAdapter[Any]] = {}


def _field_problems(model: type[BaseModel], name: str, value: Any, where: str) -> list[str]:
    """What is wrong with ``value`` as field ``name`` of ``model`` (nested models, also
    in lists, are checked field by field: pydantic accepts model instances as they are)."""
    adapter = _ADAPTERS.get((model, name))
    if adapter is None:
        info = model.model_fields[name]
        annotation: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        adapter = _ADAPTERS[(model, name)] = TypeAdapter(annotation)
    try:
        adapter.validate_python(value)
    except ValidationError as exc:
        return [
            f"{where}{''.join(f'.{part}' for part in error.get('loc', ()))}: {error.get('msg')}"
            for error in exc.errors()[:3]
        ]
    except Exception as exc:  # an annotation pydantic cannot check on its own
        return [f"{where}: {type(exc).__name__}: {exc}"]
    items = [value] if isinstance(value, BaseModel) else value if isinstance(value, list) else []
    problems: list[str] = []
    for index, item in enumerate(items):
        if isinstance(item, BaseModel):
            prefix = where if item is value else f"{where}.{index}"
            for field in type(item).model_fields:
                problems.extend(_field_problems(type(item), field, getattr(item, field, None), f"{prefix}.{field}"))
    return problems


def _put_back(target: Any, name: str, old: Any) -> None:
    """Restore field ``name`` to ``old``, keeping the identity of the model, list or dict
    it holds when it still holds one (pi keeps references, e.g. to the run's system
    prompt options)."""
    current = getattr(target, name, None)
    if isinstance(current, BaseModel) and type(current) is type(old):
        for field in type(current).model_fields:
            _put_back(current, field, getattr(old, field, None))
    elif isinstance(current, list) and isinstance(old, list):
        current[:] = old
    elif isinstance(current, dict) and isinstance(old, dict):
        current.clear()
        current.update(old)
    else:
        setattr(target, name, old)


# --------------------------------------------------------------------------- wrappers, tracing

WRAPPERS_REFUSED = (
    "pi calls its own hooks through an async runner that does not run pluggy wrappers "
    "(wrapper=True / hookwrapper=True); use tryfirst / trylast implementations instead, "
    "and the hook_outcome hook to observe what other plugins' handlers did"
)


def _trace_before(hook_name: str, hook_impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, Any]) -> None:
    print(f"pi trace: {hook_name} -> {[i.plugin_name for i in reversed(hook_impls)]} (pluggy)", file=sys.stderr)


def _trace_after(
    outcome: pluggy.Result[Any], hook_name: str, hook_impls: Sequence[pluggy.HookImpl], kwargs: Mapping[str, Any]
) -> None:
    if outcome.exception is not None:
        shown = f"raised {describe_exception(outcome.exception)}"
    else:
        shown = repr(outcome.get_result())
        shown = shown if len(shown) < 200 else shown[:197] + "..."
    print(f"pi trace: {hook_name} <- {shown} (pluggy)", file=sys.stderr)


# --------------------------------------------------------------------------- ctx.hook


class EventCaller:
    """``ctx.hook.<event>``: one of pi's events, called through the runner, so its
    composition rule applies and coroutine handlers are awaited.
    ``await ctx.hook.tool_call(event)`` returns what :meth:`EventRunner.call` returns."""

    __slots__ = ("_runner", "name", "spec")

    def __init__(self, runner: EventRunner, spec: EventSpec) -> None:
        self._runner = runner
        self.name = spec.name
        self.spec = spec

    def __call__(self, event: Any, ctx: Any = None) -> Awaitable[Any]:
        return self._runner.call(self.name, event, ctx)

    def get_hookimpls(self) -> list[pluggy.HookImpl]:
        """The implementations, as pluggy lists them (the runner calls them reversed)."""
        caller = getattr(self._runner.pm.hook, self.name, None)
        return list(caller.get_hookimpls()) if caller is not None else []

    def __repr__(self) -> str:
        return f"<EventCaller {self.name} ({self.spec.rule.value})>"


class HookResults(list[Any]):
    """What a hook a plugin published returns through ``ctx.hook``: pluggy's list of
    results, which can also be awaited — ``await ctx.hook.x(...)`` gives the list with
    every coroutine a handler returned awaited, as ``await ctx.hook.<event>(...)`` gives
    an event's outcome."""

    def __await__(self) -> Generator[Any, None, list[Any]]:
        return self._resolved().__await__()

    async def _resolved(self) -> list[Any]:
        return [await item if inspect.isawaitable(item) else item for item in self]


class PublishedHook:
    """``ctx.hook.<name>`` of a hook a plugin published with ``add_hookspecs``: pluggy's
    hook caller, called pluggy's way (keyword arguments); the result is a
    :class:`HookResults`, so ``await`` works on it as on pi's events."""

    __slots__ = ("_caller",)

    def __init__(self, caller: Any) -> None:
        self._caller = caller

    def __call__(self, **kwargs: Any) -> HookResults:
        return HookResults(self._caller(**kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._caller, name)

    def __repr__(self) -> str:
        return f"<PublishedHook {self._caller.name}>"


class PluginHooks:
    """``ctx.hook``: pi's events — and hooks plugins publish declared with
    ``@event_spec`` — through the runner (:class:`EventCaller`); every other hook
    (those plugins publish with plain hookspecs, the registration hooks) through
    pluggy (:class:`PublishedHook`). Either way the call can be awaited."""

    __slots__ = ("_callers", "_runner")

    def __init__(self, runner: EventRunner) -> None:
        self._runner = runner
        self._callers: dict[str, EventCaller] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        caller = self._callers.get(name)
        if caller is not None:
            return caller
        spec = self._runner.spec(name)
        if spec is not None:
            caller = self._callers[name] = EventCaller(self._runner, spec)
            return caller
        return PublishedHook(getattr(self._runner.pm.hook, name))

    def __dir__(self) -> list[str]:
        return sorted(set(EVENTS) | {n for n in vars(self._runner.pm.hook) if not n.startswith("_")})

    def __repr__(self) -> str:
        return f"<PluginHooks {len(EVENTS)} events + pluggy's {self._runner.pm.project_name!r} hooks>"


__all__ = [
    "WRAPPERS_REFUSED",
    "Blocked",
    "EventCaller",
    "EventRunner",
    "HookError",
    "HookResults",
    "PluginHooks",
    "PublishedHook",
]
