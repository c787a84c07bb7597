"""``dataclass``: the standard library's dataclasses, made without compiling code for
each class; for pi's records and any plugin's.

On Python 3.11 ``dataclasses.dataclass`` writes the source of each generated method
(``__init__``, ``__repr__``, ``__eq__``, and for frozen classes ``__setattr__``,
``__delattr__`` and ``__hash__``) and compiles it, ≈0.15-0.3 ms a class, paid by every
run that imports the module: pi_core's sixty records on the ``pi -p`` path cost ≈20 ms,
a tenth of a run. This decorator lets ``dataclasses`` do everything it does without
compiling (fields, defaults, ``slots``, ``__match_args__``, ``fields()``, ``replace()``,
``asdict()``) and gives the class methods that behave as the generated ones, shared
functions parameterised by the class's fields (≈0.02 ms a class). The price is an
``__init__`` about 1 µs slower per call: a class made in bulk (one instance per session
entry, per search match) is better left to ``dataclasses.dataclass``.

A plugin imported on every run may use it for its own records the same way::

    from pi_hookspecs.record import dataclass

    @dataclass(frozen=True)
    class Limits:
        '''What the plugin allows.'''

        max_bytes: int = 1 << 20

It takes the options ``frozen``, ``slots`` and ``eq``; a class it cannot make exactly as
``dataclasses`` would (no docstring, whose generated text the standard library derives
from the signature; ``__post_init__``; ``InitVar`` or keyword-only fields;
``field(init=False)``; fields inherited from another dataclass) is handed to
``dataclasses.dataclass`` unchanged. ``tests/test_record.py`` holds every record of pi,
its contract and its plugins made this way to the class the standard library makes from
the same fields.
"""

from __future__ import annotations

import dataclasses
import inspect
import reprlib
from collections.abc import Callable
from dataclasses import MISSING, FrozenInstanceError
from typing import Any, TypeVar, dataclass_transform, overload

__all__ = ["dataclass"]

_T = TypeVar("_T")


@overload
def dataclass(cls: type[_T], /) -> type[_T]: ...


@overload
def dataclass(*, frozen: bool = False, slots: bool = False, eq: bool = True) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(
    cls: type[_T] | None = None, /, *, frozen: bool = False, slots: bool = False, eq: bool = True
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """``dataclasses.dataclass(cls, frozen=..., slots=..., eq=...)`` without compiling."""

    def wrap(target: type[_T]) -> type[_T]:
        return _make(target, frozen=frozen, slots=slots, eq=eq)

    return wrap if cls is None else wrap(cls)


def _plain(cls: type) -> bool:
    """Whether the class uses only what this module reproduces (checked before
    ``dataclasses`` sees the class, which it changes)."""
    if not cls.__dict__.get("__doc__") or hasattr(cls, "__post_init__"):
        return False
    if any(name in cls.__dict__ for name in ("__init__", "__setattr__", "__delattr__")):
        return False
    if any(hasattr(base, "__dataclass_fields__") for base in cls.__mro__[1:]):
        return False  # fields inherited from another dataclass: left to dataclasses
    for name, annotation in inspect.get_annotations(cls).items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if "InitVar" in text or "KW_ONLY" in text:
            return False
        value = cls.__dict__.get(name)
        if isinstance(value, dataclasses.Field) and (not value.init or value.kw_only is True):
            return False
    return True


def _make(cls: type[_T], *, frozen: bool, slots: bool, eq: bool) -> type[_T]:
    if not _plain(cls):
        return dataclasses.dataclass(cls, frozen=frozen, slots=slots, eq=eq)
    own = frozenset(cls.__dict__)
    made: type[_T] = dataclasses.dataclass(cls, init=False, repr=False, eq=False, slots=slots)
    fields = dataclasses.fields(made)  # type: ignore[arg-type]
    _add(made, "__init__", _init(made, fields, frozen), own)
    _add(made, "__repr__", _repr(tuple(f.name for f in fields if f.repr)), own)
    if eq:
        _add(made, "__eq__", _eq(tuple(f.name for f in fields if f.compare)), own)
    # __hash__ as dataclasses decides it (its _hash_action table, without unsafe_hash)
    class_hash = cls.__dict__.get("__hash__", MISSING)
    explicit = not (class_hash is MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    if eq and not explicit:
        if frozen:
            made.__hash__ = _hash(tuple(f.name for f in fields if (f.compare if f.hash is None else f.hash)))  # type: ignore[method-assign,assignment]
        else:
            made.__hash__ = None  # type: ignore[assignment]
    if frozen:
        names = frozenset(f.name for f in fields)
        made.__setattr__ = _frozen_setattr(made, names)  # type: ignore[method-assign]
        made.__delattr__ = _frozen_delattr(made, names)  # type: ignore[method-assign]
        if slots:  # as dataclasses does for frozen classes with slots (pickle, copy)
            if "__getstate__" not in own:
                made.__getstate__ = _getstate  # type: ignore[method-assign]
            if "__setstate__" not in own:
                made.__setstate__ = _setstate  # type: ignore[attr-defined]
    params = made.__dataclass_params__  # type: ignore[attr-defined]
    params.init, params.repr, params.eq, params.frozen = True, True, eq, frozen
    return made


def _add(cls: type, name: str, function: Callable[..., Any], own: frozenset[str]) -> None:
    if name in own:
        return  # the class's own method stays, as dataclasses leaves it
    function.__qualname__ = f"{cls.__qualname__}.{name}"
    setattr(cls, name, function)


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...], frozen: bool) -> Callable[..., None]:
    names = tuple(f.name for f in fields)
    known = frozenset(names)
    specs = tuple((f.name, f.default, f.default_factory) for f in fields)
    count = len(names)
    required = sum(1 for f in fields if f.default is MISSING and f.default_factory is MISSING)
    # the generated __init__ of a frozen class sets fields through object.__setattr__, the
    # generated one of any other class assigns them
    put = object.__setattr__ if frozen else setattr
    where = f"{cls.__qualname__}.__init__()"
    takes = f"{count + 1}" if required == count else f"from {required + 1} to {count + 1}"

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > count:
            given = len(args) + 1
            raise TypeError(f"{where} takes {takes} positional arguments but {given} were given")
        values = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key in values:
                raise TypeError(f"{where} got multiple values for argument '{key}'")
            if key not in known:
                raise TypeError(f"{where} got an unexpected keyword argument '{key}'")
            values[key] = value
        missing = []
        for name, default, factory in specs:
            if name in values:
                value = values[name]
            elif factory is not MISSING:
                value = factory()
            elif default is not MISSING:
                value = default
            else:
                missing.append(name)
                continue
            put(self, name, value)
        if missing:
            quoted = [repr(n) for n in missing]
            if len(quoted) == 1:
                listed = quoted[0]
            elif len(quoted) == 2:
                listed = f"{quoted[0]} and {quoted[1]}"
            else:
                listed = ", ".join(quoted[:-1]) + f", and {quoted[-1]}"
            plural = "s" if len(missing) > 1 else ""
            raise TypeError(f"{where} missing {len(missing)} required positional argument{plural}: {listed}")

    return __init__


def _repr(shown: tuple[str, ...]) -> Callable[[Any], str]:
    @reprlib.recursive_repr()
    def __repr__(self: Any) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in shown)
        return f"{self.__class__.__qualname__}({inner})"

    return __repr__


def _eq(compared: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return tuple(getattr(self, n) for n in compared) == tuple(getattr(other, n) for n in compared)
        return NotImplemented

    return __eq__


def _hash(hashed: tuple[str, ...]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(tuple(getattr(self, n) for n in hashed))

    return __hash__


def _frozen_setattr(cls: type, names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]  # any class

    return __setattr__


def _frozen_delattr(cls: type, names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]  # any class

    return __delattr__


def _getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for field, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, field.name, value)
