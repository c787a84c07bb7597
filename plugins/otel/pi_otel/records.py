"""What the hooks record on the agent's path: plain Python objects, no OpenTelemetry.

A :class:`SpanRecord` tree (an ``invoke_agent`` run with its ``chat``, ``execute_tool``
and compaction spans, nested tool calls under their callers) is handed to the exporter
when its root ends; the exporter turns it into OpenTelemetry spans with the recorded
start and end times, off the agent's path. :class:`Point` is one metric measurement.
"""

from __future__ import annotations

import time
from dataclasses import field
from typing import Any, Literal

from pi_hookspecs.record import dataclass

Kind = Literal["internal", "client"]
AttributeValue = str | bool | int | float | list[str] | list[int] | list[float] | list[bool]


def now_ns() -> int:
    return time.time_ns()


def clean(attributes: dict[str, Any]) -> dict[str, AttributeValue]:
    """Attributes without ``None`` values (OpenTelemetry rejects them)."""
    return {key: value for key, value in attributes.items() if value is not None}


@dataclass(slots=True)
class SpanEvent:
    """Something that happened during a span, at ``time_ns``."""

    name: str
    time_ns: int
    attributes: dict[str, AttributeValue]


@dataclass(slots=True, eq=False)
class SpanRecord:
    """One span as the hooks record it: its times, attributes, events and children."""

    name: str
    kind: Kind
    start_ns: int
    attributes: dict[str, Any] = field(default_factory=dict)
    parent: SpanRecord | None = None
    children: list[SpanRecord] = field(default_factory=list)
    events: list[SpanEvent] = field(default_factory=list)
    end_ns: int | None = None
    error: str | None = None
    """The status description when the operation failed (``None``: unset status)."""

    def child(self, name: str, kind: Kind, start_ns: int, attributes: dict[str, Any]) -> SpanRecord:
        record = SpanRecord(name, kind, start_ns, attributes, parent=self)
        self.children.append(record)
        return record

    @property
    def ended(self) -> bool:
        return self.end_ns is not None

    def end(self, at_ns: int | None = None) -> None:
        if self.end_ns is None:
            self.end_ns = max(at_ns if at_ns is not None else now_ns(), self.start_ns)

    def event(self, name: str, attributes: dict[str, Any], at_ns: int | None = None) -> None:
        self.events.append(SpanEvent(name, at_ns if at_ns is not None else now_ns(), clean(attributes)))

    def fail(self, error_type: str, description: str | None) -> None:
        self.attributes["error.type"] = error_type
        self.error = description or error_type

    def close_open(self, at_ns: int, reason: str) -> None:
        """End descendants that never ended (an abort, a shutdown) as failed."""
        for child in self.children:
            if not child.ended:
                child.close_open(at_ns, reason)
                child.fail("unfinished", reason)
                child.end(at_ns)
            else:
                child.close_open(at_ns, reason)

    def root(self) -> SpanRecord:
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def walk(self) -> list[SpanRecord]:
        out = [self]
        for child in self.children:
            out.extend(child.walk())
        return out


@dataclass(frozen=True, slots=True)
class Point:
    """One measurement: ``instrument`` is a metric name of :mod:`pi_otel.semconv`."""

    instrument: str
    value: float
    attributes: dict[str, AttributeValue]
