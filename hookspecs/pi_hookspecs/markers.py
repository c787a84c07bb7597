"""pluggy markers for the project ``"pi"``."""

from __future__ import annotations

import pluggy

PROJECT_NAME = "pi"
ENTRY_POINT_GROUP = "pi.extensions"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
"""Marks a hook specification (plugins publish their own through ``add_hookspecs``)."""

hookimpl = pluggy.HookimplMarker(PROJECT_NAME)
"""Marks a hook implementation: ``@hookimpl`` or ``@hookimpl(tryfirst=True)``."""
