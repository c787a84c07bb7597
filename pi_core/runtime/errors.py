"""The errors a session raises to its host (re-exported by :mod:`pi_core.runtime`)."""

from __future__ import annotations

import os


class SessionBusyError(RuntimeError):
    """A prompt while the session runs, without saying whether to steer or follow up."""


class NoModelError(RuntimeError):
    """No usable model: none configured, its API's plugin missing, or no credentials."""


def no_model_message(models_path: str | os.PathLike[str]) -> str:
    """The one line pi shows when it has no model to run (no ``--model``, no settings
    default, no provider with a credential): the ways to configure one, naming the
    real ``models.json`` (``$PI_CODING_AGENT_DIR`` when set)."""
    return (
        "No model available: set an API key variable such as ANTHROPIC_API_KEY or OPENAI_API_KEY, "
        f"run `pi auth login <provider>` (/login in interactive mode), or add a provider to {os.fspath(models_path)}"
    )


class MissingSessionCwdError(FileNotFoundError):
    """A session whose working directory no longer exists (moved or deleted): interactive
    mode offers to continue it in the current folder or to fork it there."""

    def __init__(self, session_file: str, cwd: str) -> None:
        super().__init__(f"the session's working directory no longer exists: {cwd}")
        self.session_file = session_file
        self.cwd = cwd


__all__ = ["MissingSessionCwdError", "NoModelError", "SessionBusyError", "no_model_message"]
