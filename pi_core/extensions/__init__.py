"""The plugin system: discovery, two-phase loading, registration and the event runner."""

from .context import (
    CommandContextImpl,
    ContextHost,
    ExtensionContextImpl,
    Liveness,
    ProjectTrustContextImpl,
    ToolContextImpl,
)
from .diagnostics import Diagnostic, ExtensionLoadError
from .host import LoadOptions, PluginHost, PluginRecord
from .registry import Registered, RegistrationError, Registry
from .runner import Blocked, EventRunner, HookError
from .sources import SOURCE_ORDER, PluginLoadError, PluginSource
from .ui import NoUI

__all__ = [
    "SOURCE_ORDER",
    "Blocked",
    "CommandContextImpl",
    "ContextHost",
    "Diagnostic",
    "EventRunner",
    "ExtensionContextImpl",
    "ExtensionLoadError",
    "HookError",
    "Liveness",
    "LoadOptions",
    "NoUI",
    "PluginHost",
    "PluginLoadError",
    "PluginRecord",
    "PluginSource",
    "ProjectTrustContextImpl",
    "Registered",
    "RegistrationError",
    "Registry",
    "ToolContextImpl",
]
