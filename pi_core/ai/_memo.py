"""Work done once per finished message, not once per request.

A conversation grows by a few messages a turn while every request sends all of them:
converting each message to the provider's form again (tool-call arguments to JSON,
content blocks to dicts, character counts for the token estimate) made a turn's cost
grow with the length of the history. A finished message does not change — the
runtime replaces a message rather than editing it, and context hooks work on copies —
so its conversion is kept, keyed by the message object and by what else the
conversion depends on (the target model, the API's options).

An entry lives as long as its message: it holds a weak reference, and entries whose
message was collected (compacted away, branched away, replaced) are swept out.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Sequence
from typing import Any, Final

MISSING: Final = object()


class MessageMemo:
    """Values computed from an object and a hashable ``key``, found again by the
    object's identity for as long as the object lives. A value stored under another
    key replaces the previous one (one target model at a time is the common case).

    Entries hold a weak reference to their object; those whose object is gone are
    swept out once the table has doubled since the last sweep (amortised constant
    time per entry, no callback per object)."""

    __slots__ = ("_entries", "_sweep_at")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], Any, Any]] = {}
        self._sweep_at = 1024

    def get(self, obj: Any, key: Any) -> Any:
        """The value stored for ``obj`` under ``key``, else :data:`MISSING`."""
        entry = self._entries.get(id(obj))
        if entry is None or entry[1] != key or entry[0]() is not obj:
            return MISSING
        return entry[2]

    def put(self, obj: Any, key: Any, value: Any) -> Any:
        """Store ``value`` for ``obj`` under ``key``; returns ``value``. Objects that
        cannot be weakly referenced are not stored."""
        try:
            ref = weakref.ref(obj)
        except TypeError:
            return value
        entries = self._entries
        entries[id(obj)] = (ref, key, value)
        if len(entries) >= self._sweep_at:
            self._sweep()
        return value

    def _sweep(self) -> None:
        live = {ident: entry for ident, entry in self._entries.items() if entry[0]() is not None}
        self._entries = live
        self._sweep_at = max(1024, 2 * len(live))

    def __len__(self) -> int:
        self._sweep()
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()


class PrefixReuse:
    """The last result of a list conversion, for a next call whose input starts with
    the same objects (a conversation that grew at its end).

    The conversion records a *mark*: an input position from which it can start again
    with an empty output state — ``(input index, output length, state)``, the output
    up to that length being final whatever follows. :meth:`resume` checks that the
    new input holds the same objects up to and including the marked one and returns
    where to continue; anything else starts from the beginning. The inputs and the
    output are kept as copies, so callers may change their lists afterwards.
    """

    __slots__ = ("_inputs", "_key", "_mark", "_outputs")

    def __init__(self) -> None:
        self._key: Any = None
        self._inputs: list[Any] = []
        self._outputs: list[Any] = []
        self._mark: tuple[int, int, Any] | None = None

    def resume(self, key: Any, inputs: Sequence[Any]) -> tuple[int, list[Any], Any]:
        """``(start index, output so far as a new list, state at the start)``;
        ``(0, [], None)`` when nothing can be reused."""
        mark = self._mark
        if mark is None or key != self._key:
            return 0, [], None
        index, length, state = mark
        old = self._inputs
        if len(inputs) <= index or inputs[index] is not old[index]:
            return 0, [], None
        if not all(map(operator.is_, old[:index], inputs[:index])):
            return 0, [], None
        return index, self._outputs[:length], state

    def save(self, key: Any, inputs: Sequence[Any], outputs: list[Any], mark: tuple[int, int, Any] | None) -> None:
        """Remember this call; ``mark`` ``None``: nothing to reuse next time."""
        self._key = key
        self._mark = mark
        if mark is None:
            self._inputs, self._outputs = [], []
            return
        head = inputs[: mark[0] + 1]
        self._inputs = head if isinstance(head, list) else list(head)
        self._outputs = outputs[: mark[1]]
