"""pluggable-pi-fleet: ``pi fleet run TASKS.jsonl --out DIR``.

One prompt across many repositories: every task is a headless pi session (pluggable-pi's
SDK, :func:`pi_core.runtime.create_agent_session`) in its own working copy, run as a Ray
task; provider rate limits are shared by all workers through one Ray actor per provider.
See ``docs/fleet.md``.

Importing this package is free: Ray, the runtime and rich are imported by ``pi fleet``
only, never by a ``pi -p`` that has this plugin installed.
"""

from __future__ import annotations

__version__ = "1.0.0"

from typing import Any

__all__ = ["FleetPlugin", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "FleetPlugin":
        from .plugin import FleetPlugin

        return FleetPlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
