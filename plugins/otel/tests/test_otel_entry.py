"""The entry point decides a run that exports nothing without the settings model or the
recording hooks, and always as :func:`pi_otel.config.load_config` does."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pi_otel import OtelDisabled, OtelPlugin, OtelRecorder
from pi_otel.plugin import recorder

ENVIRONMENTS = [
    {},
    {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
    {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"},
    {"OTEL_EXPORTER_OTLP_ENDPOINT": "  "},
    {"OTEL_SDK_DISABLED": "true"},
    {"OTEL_SDK_DISABLED": "false"},
    {"OTEL_TRACES_EXPORTER": "none"},
    {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"},
    {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
]

SETTINGS: list[str | None] = [
    None,  # no settings file
    "",  # an empty file
    json.dumps({"theme": "dark"}),
    json.dumps({"otel": {}}),
    json.dumps({"otel": {"enabled": False}}),
    json.dumps({"otel": {"endpoint": "http://collector:4318"}}),
    json.dumps({"otel": {"enabled": True}}),
    "{not json",
]


def _answer(plugin: object) -> tuple[str, str | None]:
    if isinstance(plugin, OtelDisabled):
        return "off", plugin.reason
    assert isinstance(plugin, OtelRecorder)
    return type(plugin).__name__, None


@pytest.mark.parametrize(
    ("env", "settings"),
    list(itertools.product(ENVIRONMENTS, SETTINGS)),
    ids=[f"env{e}-settings{s}" for e, s in itertools.product(range(len(ENVIRONMENTS)), range(len(SETTINGS)))],
)
def test_the_entry_point_answers_as_the_configuration_does(
    pi_agent_dir: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], settings: str | None
) -> None:
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if settings is not None:
        (pi_agent_dir / "settings.json").write_text(settings)
    assert _answer(OtelPlugin()) == _answer(recorder())


def test_a_run_without_an_endpoint_imports_neither_the_settings_model_nor_the_hooks(pi_agent_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    code = (
        "import sys\n"
        "from pi_otel import OtelPlugin\n"
        "plugin = OtelPlugin()\n"
        "print(plugin.reason, 'pi_otel.config' in sys.modules, 'pi_otel.plugin' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[0] == "no OTLP endpoint is configured False False"
