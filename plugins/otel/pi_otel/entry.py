"""The entry point of pluggable-pi-otel (``pi_otel:OtelPlugin``), light to import.

pi makes the plugin once per session runtime, on every run. Most runs of a machine with
the plugin installed export nothing (no endpoint is configured), and deciding that needs
neither the settings model (:mod:`pi_otel.config`) nor the recording hooks
(:mod:`pi_otel.plugin`): :class:`OtelPlugin` answers that case from the environment and
whether the user settings have an ``otel`` key at all, and leaves every other case to
:func:`pi_otel.config.load_config`. ``tests/test_otel_entry.py`` holds the two to the
same answer.
"""

from __future__ import annotations

import os
from typing import Any

from pi_hookspecs import hookimpl, toolkit

SETTINGS_KEY = "otel"
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
ENDPOINT_ENVS = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
)
NO_ENDPOINT = "no OTLP endpoint is configured"


def truthy(value: str | None) -> bool | None:
    """An ``OTEL_*`` switch: ``None`` when unset or blank."""
    if value is None or not value.strip():
        return None
    text = value.strip().lower()
    # The GenAI instrumentations also accept SPAN_ONLY / SPAN_AND_EVENT / EVENT_ONLY / NO_CONTENT.
    if text in ("true", "1", "yes", "on", "span_only", "span_and_event", "event_only"):
        return True
    return False


def quiet_reason(env: Any = None) -> str | None:
    """Why nothing is exported, when that is clear without the settings model: no
    endpoint in the environment, no ``otel`` key in the user settings (so every setting
    has its default) and at least one signal not turned off. ``None``: ask
    :func:`~pi_otel.config.load_config`."""
    env = os.environ if env is None else env
    if truthy(env.get("OTEL_SDK_DISABLED")) is not None:
        return None  # load_config words it
    if any(env.get(name, "").strip() for name in ENDPOINT_ENVS):
        return None
    if all(env.get(f"OTEL_{signal}_EXPORTER", "").strip().lower() == "none" for signal in ("TRACES", "METRICS")):
        return None
    try:
        if toolkit.settings_section(SETTINGS_KEY) is not None:
            return None
    except toolkit.SettingsFileError:
        return None  # load_config decides what a broken file means
    return NO_ENDPOINT


def register_cli(register: Any) -> None:
    from .cli import HELP, main

    register("otel", main, help=HELP)


class OtelCommand:
    """The ``pi otel`` subcommand, which every form of the plugin offers (pi asks for it
    only on its command line)."""

    @hookimpl
    def register_cli_commands(self, register: Any) -> None:
        register_cli(register)


class OtelDisabled(OtelCommand):
    """pluggable-pi-otel when nothing is to be exported: an object without hooks but the
    ``pi otel`` subcommand."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"<pluggable-pi-otel: off, {self.reason}>"


class OtelPlugin(OtelCommand):
    """Record every agent run as OpenTelemetry GenAI traces and metrics: the plugin pi
    makes per session runtime. Without an endpoint it is an :class:`OtelDisabled` (no
    hooks but the subcommand, so no event is dispatched to it); otherwise a
    :class:`pi_otel.plugin.OtelRecorder`."""

    def __new__(cls) -> Any:
        reason = quiet_reason()
        if reason is not None:
            return OtelDisabled(reason)
        from .plugin import recorder

        return recorder()
