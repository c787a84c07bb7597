"""``pi_hookspecs.record.dataclass`` makes the classes ``dataclasses.dataclass`` makes.

Each class of a matrix of options (frozen, slots, eq) and field kinds (required,
defaults, factories, ``repr=False``, ``compare=False``) is made twice from the same
body, by each decorator, and the two are compared on everything a caller can see:
fields, construction (positional, keyword, defaults, fresh factory values, and the
``TypeError`` of a wrong call, message included), ``repr``, equality, hashing, frozen
assignment, ``replace``/``asdict``/``astuple``, copies and pickling. Then every record
made by it in pi_core, the contract and the workspace's plugins is compared with the
class ``dataclasses`` makes from its fields.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import pickle
import pkgutil
import sys
from dataclasses import FrozenInstanceError, field
from typing import Any

import pytest

from pi_hookspecs import record as _record

OPTIONS = [
    {"frozen": frozen, "slots": slots, "eq": eq}
    for frozen in (False, True)
    for slots in (False, True)
    for eq in (True, False)
]


def _body(decorate: Any) -> Any:
    @decorate
    class Record:
        """A record."""

        a: int
        b: str = "b"
        c: list[int] = field(default_factory=list)
        d: int = field(default=0, repr=False)
        e: int = field(default=1, compare=False)

    return Record


def _outcome(call: Any) -> tuple[str, Any]:
    try:
        return "ok", call()
    except Exception as exc:
        return type(exc).__name__, str(exc)


def _same_class(ours: Any, theirs: Any) -> None:
    assert [
        (f.name, f.default, f.default_factory, f.repr, f.compare, f.hash, f.init) for f in dataclasses.fields(ours)
    ] == [(f.name, f.default, f.default_factory, f.repr, f.compare, f.hash, f.init) for f in dataclasses.fields(theirs)]
    assert ours.__match_args__ == theirs.__match_args__
    for name in ("init", "repr", "eq", "order", "unsafe_hash", "frozen"):
        assert getattr(ours.__dataclass_params__, name) == getattr(theirs.__dataclass_params__, name), name
    assert getattr(ours, "__slots__", None) == getattr(theirs, "__slots__", None)
    assert (ours.__hash__ is None) == (theirs.__hash__ is None)


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: "-".join(k for k, v in o.items() if v) or "plain")
def test_the_same_class_as_dataclasses(options: dict[str, bool]) -> None:
    ours, theirs = _body(_record.dataclass(**options)), _body(dataclasses.dataclass(**options))
    assert ours.__init__.__module__ == "pi_hookspecs.record"  # made the fast way
    _same_class(ours, theirs)
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
        ((1,), {}),
        ((1, "x", [2], 3, 4), {}),
        ((), {"a": 1, "e": 9}),
        ((1,), {"c": [5]}),
        ((), {}),  # missing a
        ((1, "x", [2], 3, 4, 5), {}),  # too many
        ((1,), {"z": 1}),  # unknown keyword
        ((1,), {"a": 2}),  # a twice
    ]
    for args, kwargs in calls:
        kind, made = _outcome(lambda a=args, k=kwargs: ours(*a, **k))
        their_kind, their_made = _outcome(lambda a=args, k=kwargs: theirs(*a, **k))
        assert kind == their_kind
        if kind != "ok":
            assert made == their_made  # the TypeError's message
            continue
        assert repr(made) == repr(their_made)
        assert dataclasses.asdict(made) == dataclasses.asdict(their_made)
        assert dataclasses.astuple(made) == dataclasses.astuple(their_made)
        twin = ours(*args, **kwargs)
        assert (made == twin) == (their_made == theirs(*args, **kwargs))
        assert (made == dataclasses.replace(made, e=99)) == (their_made == dataclasses.replace(their_made, e=99))
        assert (made == dataclasses.replace(made, b="other")) == (
            their_made == dataclasses.replace(their_made, b="other")
        )
        assert made.__eq__(their_made) is NotImplemented or not options["eq"]
        if ours.__hash__ is None:
            with pytest.raises(TypeError):
                hash(made)
        assert made.c is not ours(1).c or kwargs.get("c") is not None or args[2:3]  # a fresh list per instance
        copied = copy.deepcopy(made)
        assert dataclasses.astuple(copied) == dataclasses.astuple(made)
        for change in (
            lambda obj: setattr(obj, "b", "new"),
            lambda obj: delattr(obj, "d"),
            lambda obj: setattr(obj, "other", 1),
        ):
            mine, stdlib = _outcome(lambda c=change, o=made: c(o)), _outcome(lambda c=change, o=their_made: c(o))
            if options["frozen"] and options["slots"] and stdlib[0] == "TypeError":
                # Python 3.11's own __setattr__ of a frozen class with slots refers to the class
                # before slots were added, so super() fails with a TypeError; refused either way
                assert mine[0] == "FrozenInstanceError"
            else:
                assert mine == stdlib


def test_frozen_records_hash_as_dataclasses_does() -> None:
    ours, theirs = _body(_record.dataclass(frozen=True)), _body(dataclasses.dataclass(frozen=True))
    one, other = ours(1, "x", (), 3, 4), theirs(1, "x", (), 3, 4)  # type: ignore[arg-type]
    assert hash(one) == hash(other)
    assert hash(one) == hash(ours(1, "x", (), 3, 5))  # type: ignore[arg-type]  # compare=False is not hashed
    with pytest.raises(FrozenInstanceError, match="cannot assign to field 'a'"):
        one.a = 2  # type: ignore[misc]


def test_recursive_repr_and_own_methods() -> None:
    @_record.dataclass
    class Node:
        """A node."""

        children: list[Any] = field(default_factory=list)

        def __eq__(self, other: object) -> bool:  # its own: kept
            return True

    node = Node()
    node.children.append(node)
    assert repr(node) == "test_recursive_repr_and_own_methods.<locals>.Node(children=[...])"
    assert node == object()
    assert Node.__hash__ is None  # as dataclasses: an own __eq__ without __hash__


class Picklable:
    """Module-level so that pickle finds it."""


@_record.dataclass(frozen=True, slots=True)
class FrozenSlots:
    """Frozen with slots: pickled and copied through __getstate__ / __setstate__."""

    a: int
    b: list[int] = field(default_factory=list)


def test_frozen_slots_records_pickle_and_copy() -> None:
    value = FrozenSlots(1, [2])
    assert pickle.loads(pickle.dumps(value)) == value
    assert copy.copy(value) == value and copy.deepcopy(value) == value


def test_classes_it_cannot_make_exactly_are_left_to_dataclasses() -> None:
    @_record.dataclass
    class NoDoc:
        a: int

    @_record.dataclass
    class PostInit:
        """Has __post_init__."""

        a: int

        def __post_init__(self) -> None:
            self.a += 1

    @_record.dataclass
    class Child(PostInit):
        """Inherits fields."""

        b: int = 0

    for cls in (NoDoc, PostInit, Child):
        assert cls.__init__.__module__ != "pi_hookspecs.record"
    assert NoDoc.__doc__ == "NoDoc(a: 'int')"
    assert PostInit(1).a == 2


PACKAGES = ("pi_core", "pi_hookspecs", "pi_mcp", "pi_codemode", "pi_toolindex", "pi_otel", "pi_sandbox", "pi_llama")
"""The packages whose records are checked: pi_core, the contract, and the plugins that use it."""


def _records() -> list[type]:
    for name in PACKAGES:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if info.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(info.name)
            except ImportError:
                continue
    found = []
    for module in list(sys.modules.values()):
        if not getattr(module, "__name__", "").startswith(PACKAGES):
            continue
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and value.__module__ == module.__name__
                and getattr(value.__init__, "__module__", None) == "pi_hookspecs.record"
            ):
                found.append(value)
    return sorted(set(found), key=lambda cls: f"{cls.__module__}.{cls.__qualname__}")


RECORDS = _records()


def test_pi_core_the_contract_and_the_plugins_use_it() -> None:
    names = {f"{cls.__module__.split('.')[0]}.{cls.__qualname__}" for cls in RECORDS}
    assert {"pi_core.Settings", "pi_core.Registered", "pi_core.ProviderState", "pi_core.TurnInfo"} <= names
    assert {"pi_hookspecs.Step", "pi_otel.SpanRecord", "pi_sandbox.Policy", "pi_mcp.ServerEntry"} <= names


@pytest.mark.parametrize("cls", RECORDS, ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_record_is_the_dataclass_of_its_fields(cls: type) -> None:
    fields = dataclasses.fields(cls)
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    twin = dataclasses.make_dataclass(
        cls.__name__,
        [
            (
                f.name,
                f.type,
                dataclasses.field(
                    default=f.default, default_factory=f.default_factory, repr=f.repr, compare=f.compare, hash=f.hash
                ),
            )
            for f in fields
        ],
        frozen=params.frozen,
        eq=params.eq,
        slots="__slots__" in cls.__dict__,
    )
    twin.__qualname__ = cls.__qualname__
    _same_class(cls, twin)
    required = [
        object() for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    given = [object() for _ in fields]  # every field given: no clock or fresh object in a factory's default
    for args in (required, given):
        ours, theirs = cls(*args), twin(*args)
        if args is given:
            assert repr(ours) == repr(theirs)
        assert [type(getattr(ours, f.name)) for f in fields] == [type(getattr(theirs, f.name)) for f in fields]
        assert (ours == cls(*args)) == (theirs == twin(*args))
    assert _outcome(lambda: cls(*given, 0)) == _outcome(lambda: twin(*given, 0))  # one too many, same message
    if required:
        assert _outcome(lambda: cls()) == _outcome(lambda: twin())
