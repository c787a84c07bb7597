"""In-memory entries: the raw JSON object of each line plus its model, validated lazily.

Opening a session only parses JSON; an entry is validated into its pydantic model the
first time it is needed (for the context, ``get_entry``, ``get_branch`` ...). Building
the context validates the entries it reads all at once (:func:`validate_entries`), with
validators that skip the contract's discriminator functions; whatever they refuse gets
the full validator, so the models and the error reported are the same either way.
Entries appended in this process carry their model from the start.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator

from pi_hookspecs import MessageEntry, SessionEntry, UnknownEntry
from pi_hookspecs.entries import _entry_tag
from pi_hookspecs.messages import _block_tag, _role_tag

from .._schema_cache import model_json


@functools.cache
def entry_adapter() -> TypeAdapter[SessionEntry]:
    """The validator of session entries, built on first use (about 25 ms): a run that
    only writes a new session never needs it."""
    return TypeAdapter(SessionEntry)


_LIST_CONTENT_ROLES = frozenset({"user", "assistant", "toolResult"})


class Record:
    """One session entry (never the header).

    ``raw`` is the parsed JSON object until the entry is validated; then only ``model``
    is kept (it round-trips every field), halving the memory of a large session.
    """

    __slots__ = ("id", "line", "model", "parent_id", "raw", "type")

    def __init__(
        self,
        entry_id: str,
        parent_id: str | None,
        kind: str,
        raw: dict[str, Any] | None,
        model: SessionEntry | None = None,
        line: int = 0,
    ) -> None:
        self.id = entry_id
        self.parent_id = parent_id
        self.type = kind
        self.raw = raw
        self.model = model
        self.line = line

    @property
    def role(self) -> str | None:
        """The message role of a ``message`` entry (read when asked: loading a session
        does not look into its messages)."""
        if self.type != "message":
            return None
        raw = self.raw
        if raw is not None:
            message = raw.get("message")
            return message.get("role") if isinstance(message, dict) else None
        model = self.model
        if type(model) is MessageEntry or isinstance(model, MessageEntry):
            return getattr(model.message, "role", None)
        return None

    def field(self, camel: str, snake: str) -> Any:
        """A top-level field, read from the raw object or the model."""
        if self.raw is not None:
            return self.raw.get(camel)
        return getattr(self.model, snake, None)

    def to_json(self) -> dict[str, Any]:
        if self.raw is not None:
            return self.raw
        assert self.model is not None
        return entry_json(self.model)


def entry_json(entry: SessionEntry) -> dict[str, Any]:
    """An entry's JSON record. A message entry is put together from its message's own
    JSON: the same record, without building the serializer of the whole entry union
    (about 15 ms at the first message of a run)."""
    if type(entry) is MessageEntry and not entry.model_extra:
        return {
            "type": "message",
            "id": entry.id,
            "parentId": entry.parent_id,
            "timestamp": entry.timestamp,
            "message": model_json(entry.message),
        }
    return model_json(entry)  # type: ignore[no-any-return]


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector during bulk loading. Building tens of thousands
    of dicts and models triggers collections that rescan every object built so far, which
    triples the cost of opening a large session; nothing built here forms cycles."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _normalised(raw: dict[str, Any]) -> dict[str, Any]:
    """Old or hand-edited files can hold messages with ``null``/missing content."""
    kind = raw.get("type")
    if kind != "message":
        if kind == "custom_message" and raw.get("content") is None:
            return {**raw, "content": []}
        return raw
    message = raw.get("message")
    if not isinstance(message, dict) or message.get("content") is not None:
        return raw
    role = message.get("role")
    if role == "system":
        return {**raw, "message": {**message, "content": ""}}
    if role in _LIST_CONTENT_ROLES:
        return {**raw, "message": {**message, "content": []}}
    return raw


def validate_entry(raw: dict[str, Any]) -> tuple[SessionEntry, str | None]:
    """The model of a raw entry. An entry that does not match its type's format is kept
    as an :class:`UnknownEntry` (it round-trips, but takes no part in the context) and the
    validation error is returned."""
    normalised = _normalised(raw)
    try:
        return _fast_validators().entry(normalised), None
    except ValidationError:
        pass  # an unknown type or role, or an invalid entry: the full validator decides
    try:
        return entry_adapter().validate_python(normalised), None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return UnknownEntry.model_validate(raw), f"{where}: {first['msg']}"


def validate_entries(raws: list[dict[str, Any]]) -> list[tuple[SessionEntry, str | None]]:
    """:func:`validate_entry` of each raw entry, as one validation of the whole list
    when every entry is of a known type and valid (the usual file: a quarter faster
    than entry by entry); otherwise entry by entry."""
    out: list[tuple[SessionEntry, str | None]] = []
    for start in range(0, len(raws), CHUNK):
        chunk = raws[start : start + CHUNK]
        models = validate_chunk(chunk)
        if models is None:  # one entry or more needs the full validator: this chunk only
            out.extend(validate_entry(raw) for raw in chunk)
        else:
            out.extend((model, None) for model in models)
    return out


def validate_chunk(raws: list[dict[str, Any]]) -> list[SessionEntry] | None:
    """The models of ``raws`` when the fast validator accepts every one of them (then
    they are what :func:`validate_entry` gives, without error), else ``None``."""
    batch = []
    for raw in raws:
        if raw.get("type") == "message":
            message = raw.get("message")
            if type(message) is dict and message.get("content") is not None:
                batch.append(raw)  # what _normalised returns, without the call
                continue
        batch.append(_normalised(raw))
    try:
        return _fast_validators().entries(batch)
    except ValidationError:
        return None


CHUNK = 2048
"""Entries validated at once by :func:`validate_entries`: an entry the fast validator
refuses costs at most a chunk validated twice."""


# The entry, message and content-block unions are discriminated by functions (so that
# a type this version does not know becomes an Unknown* model), which pydantic calls
# from Rust for every entry, message and block. The fast validators look the ``type`` /
# ``role`` key up instead and leave the unknown tags out: an entry they refuse is
# validated again by the full validator, so both give the same model for every entry.
_TAG_KEYS = {_entry_tag: "type", _role_tag: "role", _block_tag: "type"}


def _keyed(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_keyed(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copy = {key: _keyed(value) for key, value in schema.items()}
    if copy.get("type") == "tagged-union":
        discriminator = copy.get("discriminator")
        key = _TAG_KEYS.get(discriminator) if callable(discriminator) else None
        if key is not None:
            copy["discriminator"] = key
            copy["choices"] = {tag: choice for tag, choice in copy["choices"].items() if tag != "unknown"}
    return copy


class _FastValidators(NamedTuple):
    entry: Callable[[Any], SessionEntry]
    """One raw entry (a dict)."""
    entries: Callable[[Any], list[SessionEntry]]
    """A list of raw entries."""
    line: Callable[[str | bytes], SessionEntry]
    """One entry's JSON line: parsing and validating at once costs about what
    validating the parsed dict alone does, and no dict is built."""


@functools.cache
def _fast_validators() -> _FastValidators:
    """The validators with key-discriminated unions, built in about 1 ms from their
    schema, which is derived from the full validator's and kept between runs
    (:mod:`pi_core._schema_cache`: generating it costs about 18 ms)."""
    from .._schema_cache import cached_schema

    def generate() -> Any:
        return _keyed(entry_adapter().core_schema)

    schema = cached_schema(__file__, generate)
    try:
        return _validators_of(schema)
    except Exception:  # a cached schema this pydantic-core refuses: generate it again
        return _validators_of(generate())


def _validators_of(schema: Any) -> _FastValidators:
    if schema.get("type") == "definitions":
        listed = {**schema, "schema": {"type": "list", "items_schema": schema["schema"]}}
    else:
        listed = {"type": "list", "items_schema": schema}
    one = SchemaValidator(schema)
    return _FastValidators(one.validate_python, SchemaValidator(listed).validate_python, one.validate_json)


def line_validator() -> Callable[[str | bytes], SessionEntry]:
    """The model of one session line when it is a valid entry of a known type, else
    a ``ValueError``: then the line takes the general way (parsed, and validated with
    the full validator when it is first needed, which decides and reports)."""
    return _fast_validators().line
