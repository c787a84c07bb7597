"""The base model every contract type derives from.

Python code uses snake_case field names; the files pi shares with the TypeScript pi
(session JSONL, settings, RPC and JSON streams) use camelCase. Every model therefore
accepts both spellings on input and writes camelCase with :meth:`PiModel.to_json`.
"""

import time
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, SerializationInfo, model_serializer
from pydantic_core import PydanticUndefined


def camel_alias(name: str) -> str:
    """``tool_call_id`` -> ``toolCallId``; ``cache_write_1h`` -> ``cacheWrite1h``;
    ``continue_`` -> ``continue`` (a trailing underscore only dodges a keyword)."""
    name = name.rstrip("_")
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def now_ms() -> int:
    """Unix time in milliseconds, the timestamp unit of messages."""
    return int(time.time() * 1000)


def _new_list() -> list[Any]:
    """A new empty list (the ``default_factory`` of list fields, see ``PiModel``)."""
    return []


def _shared(default: Any) -> bool:
    """Whether :meth:`PiModel.model_construct` may give every instance this default
    itself (pydantic copies all others)."""
    return isinstance(default, (int, float, str, bytes, type(None))) or (
        type(default) in (tuple, frozenset) and not default
    )


_Plan = tuple[tuple[str, str | None, bool, Any, Any], ...]
_PLANS: dict[type, _Plan | None] = {}
"""Per model class: how :meth:`PiModel.model_construct` fills each field (see
``_construct_plan``), or ``None`` where pydantic's own method must do it."""


def _construct_plan(cls: type["PiModel"]) -> _Plan | None:
    """``(name, alias, required, default, factory)`` for each field of ``cls``; ``None``
    when a feature the fast constructor does not handle is used (alias choices or
    paths, a factory taking the validated data, ``model_post_init`` or private
    attributes, a default that is not immutable)."""
    if cls.__pydantic_post_init__ or cls.__pydantic_root_model__:
        return None
    plan = []
    for name, info in cls.__pydantic_fields__.items():
        if info.validation_alias is not None and info.validation_alias != info.alias:
            return None
        factory = info.default_factory
        if factory is not None and factory not in (_new_list, dict, set, now_ms, time.monotonic):
            # a factory of the contract's own that may take the validated data: ask once
            if info.default_factory_takes_validated_data:
                return None
        default = info.default
        if factory is None and default is not PydanticUndefined and not _shared(default):
            return None
        plan.append((name, info.alias, info.is_required(), default, factory))
    return tuple(plan)


class PiModel(BaseModel):
    """Base of every pydantic model of the contract.

    * input accepts ``snake_case`` and ``camelCase`` keys alike;
    * unknown keys are kept (files written by a newer pi round-trip unchanged);
    * serialisation drops ``None`` values except for the fields a subclass lists in
      ``_keep_none`` (e.g. ``parentId: null`` of session entries).
    """

    model_config = ConfigDict(
        alias_generator=camel_alias,
        populate_by_name=True,
        extra="allow",
        arbitrary_types_allowed=True,
        protected_namespaces=(),
        defer_build=True,
    )

    _keep_none: ClassVar[frozenset[str]] = frozenset()
    _whole_numbers_as_int: ClassVar[bool] = False
    """Amounts (costs, prices) written to JSON as the TypeScript pi writes numbers: a
    whole float without ``.0`` (``0``, not ``0.0``)."""

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        # ``Field(default_factory=list)``: when pydantic builds the validator it asks
        # ``inspect.signature`` whether the factory takes the validated data, and for
        # the built-in ``list`` that means parsing its text signature (≈ 0.2 ms a field,
        # ≈ 50 fields of the contract per start). An equivalent Python function answers
        # at once. The validator is built later (``defer_build``), so it sees this one.
        for info in cls.__pydantic_fields__.values():
            if info.default_factory is list:
                info.default_factory = _new_list

    @classmethod
    def model_construct(cls, _fields_set: set[str] | None = None, **values: Any) -> Self:  # type: ignore[override]  # pydantic's mypy plugin types it per class
        """pydantic's ``model_construct`` (an instance from trusted values, no
        validation) without its per-call field inspection: what pydantic works out per
        field and call (aliases, whether a default factory takes the validated data,
        which costs an ``inspect.signature``) is worked out once per class. The result
        is the same instance pydantic's method makes; models using a feature this does
        not handle take pydantic's method."""
        try:
            plan = _PLANS[cls]
        except KeyError:
            plan = _PLANS[cls] = _construct_plan(cls)
        if plan is None:
            return super().model_construct(_fields_set, **values)
        m = cls.__new__(cls)
        fields_values: dict[str, Any] = {}
        fields_set: set[str] = set()
        for name, alias, required, default, factory in plan:
            if alias is not None and alias in values:
                fields_values[name] = values.pop(alias)
                fields_set.add(name)
            elif name in values:
                fields_values[name] = values.pop(name)
                fields_set.add(name)
            elif not required:
                fields_values[name] = default if factory is None else factory()
        object.__setattr__(m, "__dict__", fields_values)
        object.__setattr__(m, "__pydantic_fields_set__", fields_set if _fields_set is None else _fields_set)
        object.__setattr__(m, "__pydantic_extra__", values if cls.model_config.get("extra") == "allow" else None)
        object.__setattr__(m, "__pydantic_private__", None)
        return m

    @model_serializer(mode="wrap")
    def _drop_none(self, handler: Any, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        keep = self._keep_none
        if keep and info.by_alias:
            keep = frozenset(camel_alias(k) for k in keep)
        if self._whole_numbers_as_int and info.mode == "json":
            return {
                k: int(v) if type(v) is float and v.is_integer() else v
                for k, v in data.items()
                if v is not None or k in keep
            }
        return {k: v for k, v in data.items() if v is not None or k in keep}

    def to_json(self) -> dict[str, Any]:
        """The JSON-ready dict in the TypeScript pi's spelling (camelCase)."""
        return self.model_dump(mode="json", by_alias=True)


class StrictModel(PiModel):
    """A model that rejects unknown keys: used for handler *results*, so that a typo
    such as ``{"blok": True}`` is an error instead of a silently ignored key."""

    model_config = ConfigDict(extra="forbid")
