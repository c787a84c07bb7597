"""What a wire API keeps for a session between requests (Codex's open WebSocket), and
its release when the session is disposed.

A module that keeps such a resource registers a release function when it is imported;
:func:`release_session` calls each (``/new``, ``/resume``, a fork, a switch, quitting),
so a module never imported costs nothing here.
"""

from __future__ import annotations

from collections.abc import Callable

_releases: list[Callable[[str], None]] = []


def on_session_released(release: Callable[[str], None]) -> None:
    """Call ``release(session_id)`` whenever a session is disposed."""
    if release not in _releases:
        _releases.append(release)


def release_session(session_id: str) -> list[BaseException]:
    """Release what the wire APIs keep for ``session_id``; every release runs, and the
    errors they raised are returned (a disposed session never fails on them)."""
    errors: list[BaseException] = []
    for release in list(_releases):
        try:
            release(session_id)
        except Exception as error:  # reported to the caller, never raised
            errors.append(error)
    return errors
