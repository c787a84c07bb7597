"""Work done once per finished message, not once per request.

A conversation grows by a few messages a turn while every request sends all of them:
converting each message to the provider's form again (tool-call arguments to JSON,
content blocks to dicts, character counts for the token estimate) made a turn's cost
grow with the length of the history. A finished message does not change — the
runtime replaces a message rather than editing it, and context hooks work on copies —
so its conversion is kept, keyed by the message object and by what else the
conversion depends on (the target model, the API's options).

An entry lives exactly as long as its message: a weak reference drops it when the
message is collected (compacted away, branched away, replaced).
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
    key replaces the previous one (one target model at a time is the common case)."""

    __slots__ = ("__weakref__", "_entries")

    def __init__(self) -> None:
        self._entries: dict[int, tuple[weakref.ref[Any], Any, Any]] = {}

    def get(self, obj: Any, key: Any) -> Any:
        """The value stored for ``obj`` under ``key``, else :data:`MISSING`."""
        entry = self._entries.get(id(obj))
        if entry is None or entry[1] != key or entry[0]() is not obj:
            return MISSING
        return entry[2]

    def put(self, obj: Any, key: Any, value: Any) -> Any:
        """Store ``value`` for ``obj`` under ``key``; returns ``value``. Objects that
        cannot be weakly referenced are not stored."""
        ident = id(obj)
        entry = self._entries.get(ident)
        if entry is not None and entry[0]() is obj:
            self._entries[ident] = (entry[0], key, value)
            return value
        entries = self._entries
        memo_ref = weakref.ref(self)

        def forget(_ref: weakref.ref[Any], ident: int = ident) -> None:
            memo = memo_ref()
            if memo is not None:
                current = memo._entries.get(ident)
                if current is not None and current[0] is _ref:
                    del memo._entries[ident]

        try:
            ref = weakref.ref(obj, forget)
        except TypeError:
            return value
        entries[ident] = (ref, key, value)
        return value

    def __len__(self) -> int:
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
