"""The errors a session raises to its host (re-exported by :mod:`pi_core.runtime`)."""

from __future__ import annotations


class SessionBusyError(RuntimeError):
    """A prompt while the session runs, without saying whether to steer or follow up."""


class NoModelError(RuntimeError):
    """No usable model: none configured, its API's plugin missing, or no credentials."""


__all__ = ["NoModelError", "SessionBusyError"]
