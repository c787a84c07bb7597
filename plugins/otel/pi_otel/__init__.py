"""pluggable-pi-otel: what every pi agent run did, as OpenTelemetry GenAI traces and metrics.

Install it next to pi and point it at a collector::

    pi install pluggable-pi-otel
    export OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318
    pi -p "what is in this folder?"

Spans ``invoke_agent`` > ``chat {model}`` / ``execute_tool {name}`` (nested tool calls
nest), events for hooks that blocked, transformed or failed, and the
``gen_ai.client.token.usage`` / ``gen_ai.client.operation.duration`` metrics. See
``docs/telemetry.md``. Importing this package does not import OpenTelemetry (nor, until
the plugin class is asked for, pi's contract: the export process stays light).
"""

from __future__ import annotations

__version__ = "1.0.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import OtelConfig, OtelSettings, load_config
    from .entry import OtelDisabled, OtelPlugin
    from .plugin import OtelRecorder

__all__ = ["OtelConfig", "OtelDisabled", "OtelPlugin", "OtelRecorder", "OtelSettings", "load_config"]


def __getattr__(name: str) -> Any:
    if name in ("OtelPlugin", "OtelDisabled"):
        from . import entry

        return getattr(entry, name)
    if name == "OtelRecorder":
        from . import plugin

        return plugin.OtelRecorder
    if name in ("OtelConfig", "OtelSettings", "load_config"):
        from . import config

        return getattr(config, name)
    raise AttributeError(f"module 'pi_otel' has no attribute {name!r}")
