"""What pluggable-pi-otel exports, and where: the standard ``OTEL_*`` environment variables, then
the ``otel`` key of the USER settings (``<agent dir>/settings.json``).

The environment wins over the settings, as in every OpenTelemetry SDK. A project's
``.pi/settings.json`` is not consulted: a project must not be able to send an
organization's telemetry (prompts included, when content capture is on) to a collector
of its own. The agent directory and the file are found and read the way pi does it
(:mod:`pi_hookspecs.toolkit`)::

    {"otel": {"endpoint": "https://otel.example.com:4318",
              "headers": {"x-api-key": "..."},
              "resourceAttributes": {"team": "platform"}}}

Nothing here imports OpenTelemetry: reading the configuration costs a file read.
"""

from __future__ import annotations

import os
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from pi_hookspecs import camel_alias, toolkit
from pi_hookspecs.record import dataclass

from .entry import CAPTURE_ENV, ENDPOINT_ENVS, NO_ENDPOINT, SETTINGS_KEY
from .entry import truthy as _truthy

DEFAULT_EXIT_TIMEOUT_MS = 1000
"""How long ``pi`` waits at exit for telemetry to reach a collector that has answered."""
DEFAULT_ANSWER_GRACE_MS = 40
"""How long a collector that has not answered yet may hold up the exit."""
DEFAULT_EXPORT_TIMEOUT_MS = 10_000
"""``OTEL_EXPORTER_OTLP_TIMEOUT`` when unset: the OpenTelemetry specification's 10 s."""

Protocol = Literal["http/protobuf", "grpc"]


class OtelSettings(BaseModel):
    """The ``otel`` key of the user settings (camelCase keys, like pi's own)."""

    # defer_build: the validator is built only when a settings file has an ``otel`` key.
    model_config = ConfigDict(
        alias_generator=camel_alias, populate_by_name=True, extra="forbid", frozen=True, defer_build=True
    )

    enabled: bool | None = None
    """``false``: never export. ``true``: export even without an endpoint (to
    ``http://localhost:4318``). Unset: export when an endpoint is configured."""
    endpoint: str | None = None
    """The OTLP base URL, like ``OTEL_EXPORTER_OTLP_ENDPOINT`` (which wins)."""
    protocol: Protocol | None = None
    """Like ``OTEL_EXPORTER_OTLP_PROTOCOL``; ``grpc`` needs ``opentelemetry-exporter-otlp-proto-grpc``."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Sent with every export, like ``OTEL_EXPORTER_OTLP_HEADERS`` (which wins)."""
    service_name: str | None = None
    """``service.name`` unless ``OTEL_SERVICE_NAME`` or ``OTEL_RESOURCE_ATTRIBUTES`` set it; default ``pi``."""
    resource_attributes: dict[str, str | bool | int | float] = Field(default_factory=dict)
    """More resource attributes; ``OTEL_RESOURCE_ATTRIBUTES`` wins for the keys it sets."""
    agent_name: str | None = None
    """``gen_ai.agent.name``; the agent spans are then named ``invoke_agent {agentName}``."""
    capture_content: bool | None = None
    """Record prompts, answers, tool arguments and results (off unless this or
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` turns it on; the variable wins)."""
    traces: bool = True
    metrics: bool = True
    exit_timeout_ms: int = Field(default=DEFAULT_EXIT_TIMEOUT_MS, ge=0)
    """How long ``pi`` waits at exit for telemetry to reach a collector that has answered."""


class ConfigError(ValueError):
    """The settings cannot be read or are invalid (the message names the file).
    ``file_fault``: the whole settings file cannot be used, which pi reports itself."""

    def __init__(self, message: str, *, file_fault: bool = False) -> None:
        super().__init__(message)
        self.file_fault = file_fault


@dataclass(frozen=True)
class OtelConfig:
    """The effective configuration of one session runtime."""

    enabled: bool
    reason: str
    """Why telemetry is on or off, for ``pi extensions list`` and the docs."""
    settings: OtelSettings = field(default_factory=OtelSettings)
    settings_file: Path | None = None
    capture_content: bool = False
    traces: bool = True
    metrics: bool = True

    @property
    def agent_name(self) -> str | None:
        return self.settings.agent_name

    def key(self) -> tuple[Any, ...]:
        """What the export pipeline depends on (a change builds a new one)."""
        env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("OTEL_")))
        return (self.settings.model_dump_json(), env, self.traces, self.metrics)


def export_timeout(signal: str, env: dict[str, str] | None = None) -> float:
    """How long one export of ``signal`` (``traces``, ``metrics``) may take, in seconds:
    ``OTEL_EXPORTER_OTLP_<SIGNAL>_TIMEOUT``, else ``OTEL_EXPORTER_OTLP_TIMEOUT``, in
    milliseconds as the specification says (the Python SDK alone reads them as seconds:
    pluggable-pi-otel passes the value to its exporters itself), else 10 s. A value that
    is not a positive number is ignored."""
    environ = os.environ if env is None else env
    for name in (f"OTEL_EXPORTER_OTLP_{signal.upper()}_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"):
        raw = environ.get(name, "").strip()
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            continue
        if 0 < value < float("inf"):
            return value / 1000
    return DEFAULT_EXPORT_TIMEOUT_MS / 1000


agent_dir = toolkit.agent_dir


def read_settings(base: Path | None = None) -> tuple[OtelSettings, Path]:
    """The ``otel`` key of ``<agent dir>/settings.json`` (defaults when absent). Raises
    :class:`ConfigError` naming the file; ``file_fault`` is set when the whole file
    cannot be used (a fault pi itself reports)."""
    path = toolkit.user_settings_file(base)
    try:
        raw = toolkit.settings_section(SETTINGS_KEY, path)
    except toolkit.SettingsFileError as exc:
        if exc.key is not None:
            raise ConfigError(f"invalid settings in {path}: {exc.message}") from None
        raise ConfigError(f"the settings file {exc}", file_fault=True) from None
    if raw is None:
        return OtelSettings.model_construct(), path
    try:
        return OtelSettings.model_validate(raw), path
    except ValidationError as exc:
        problems = "; ".join(
            ".".join([SETTINGS_KEY, *(str(part) for part in error["loc"])]) + f": {error['msg']}"
            for error in exc.errors()
        )
        raise ConfigError(f"invalid settings in {path}: {problems}") from None


def load_config(base: Path | None = None) -> OtelConfig:
    """Decide whether this session runtime exports telemetry, and how."""
    env = os.environ
    if (_truthy(env.get("OTEL_SDK_DISABLED")) or False) is True:
        return OtelConfig(enabled=False, reason="OTEL_SDK_DISABLED is set")
    try:
        settings, path = read_settings(base)
    except ConfigError as exc:
        if not exc.file_fault:
            raise
        # pi reports what is wrong with the file; telemetry just stays off until it is fixed
        return OtelConfig(enabled=False, reason=str(exc))
    traces = settings.traces and env.get("OTEL_TRACES_EXPORTER", "").strip().lower() != "none"
    metrics = settings.metrics and env.get("OTEL_METRICS_EXPORTER", "").strip().lower() != "none"
    capture = _truthy(env.get(CAPTURE_ENV))

    def result(enabled: bool, reason: str) -> OtelConfig:
        return OtelConfig(
            enabled=enabled,
            reason=reason,
            settings=settings,
            settings_file=path,
            capture_content=capture if capture is not None else bool(settings.capture_content),
            traces=traces,
            metrics=metrics,
        )

    if settings.enabled is False:
        return result(False, f"otel.enabled is false in {path}")
    if not (traces or metrics):
        return result(False, "neither traces nor metrics are exported")
    named = next((name for name in ENDPOINT_ENVS if env.get(name, "").strip()), None)
    if named is not None:
        return result(True, f"{named} is set")
    if settings.endpoint:
        return result(True, f"otel.endpoint in {path}")
    if settings.enabled:
        return result(True, f"otel.enabled in {path}")
    return result(False, NO_ENDPOINT)
