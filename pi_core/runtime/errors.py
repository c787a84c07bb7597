"""The errors a session raises to its host (re-exported by :mod:`pi_core.runtime`)."""

from __future__ import annotations


class SessionBusyError(RuntimeError):
    """A prompt while the session runs, without saying whether to steer or follow up."""


class NoModelError(RuntimeError):
    """No usable model: none configured, its API's plugin missing, or no credentials."""


class MissingSessionCwdError(FileNotFoundError):
    """A session whose working directory no longer exists (moved or deleted): interactive
    mode offers to continue it in the current folder or to fork it there."""

    def __init__(self, session_file: str, cwd: str) -> None:
        super().__init__(f"the session's working directory no longer exists: {cwd}")
        self.session_file = session_file
        self.cwd = cwd


__all__ = ["MissingSessionCwdError", "NoModelError", "SessionBusyError"]
