"""The base model every contract type derives from.

Python code uses snake_case field names; the files pi shares with the TypeScript pi
(session JSONL, settings, RPC and JSON streams) use camelCase. Every model therefore
accepts both spellings on input and writes camelCase with :meth:`PiModel.to_json`.
"""

import time
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, SerializationInfo, model_serializer


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
