"""The router's catalogue as pi models, and its snapshot in the agent folder.

pi starts without waiting for the network, so the models ``register_providers`` gives
come from ``<agent>/llama/models.json``, written after every look at the router (the
background refresh of ``session_start``, ``/llama``). Without a snapshot for the
configured URL, registration asks the router once with a short timeout.

Which models are offered (as pi 1.6.0): loaded and sleeping ones (a request wakes a
sleeping model), and unloaded *preset* models when the router loads models on first use
(``/props`` says ``models_autoload``). Decision-only models (``architecture.
output_modalities`` holds ``decisions`` and not ``text``) cannot chat and are left out.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from dataclasses import field
from pathlib import Path
from typing import Any

from pi_hookspecs import toolkit
from pi_hookspecs.record import dataclass

from .client import LlamaClient, LlamaError, inference_url, status_of
from .config import PROVIDER

DEFAULT_CONTEXT_WINDOW = 128_000
"""The context window of a model the router says nothing about (pi 1.6.0's fallback)."""

SNAPSHOT_VERSION = 1


def snapshot_path() -> Path:
    return toolkit.agent_dir() / "llama" / "models.json"


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def configured_context(entry: dict[str, Any]) -> int | None:
    """``--ctx-size`` / ``-c`` / ``-ctx`` among the arguments the router started the model with."""
    status = entry.get("status")
    args = status.get("args") if isinstance(status, dict) else None
    if not isinstance(args, list):
        return None
    for flag, value in itertools.pairwise(args):
        if flag in ("--ctx-size", "-c", "-ctx"):
            try:
                return _positive_int(int(str(value)))
            except ValueError:
                return None
    return None


def context_window(entry: dict[str, Any], props: dict[str, Any] | None = None) -> int:
    """The runtime context (``meta.n_ctx``, ``/props``' ``n_ctx``), the configured one, the
    training context, else 128 000."""
    found = entry.get("meta")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    settings = (props or {}).get("default_generation_settings")
    from_props = settings.get("n_ctx") if isinstance(settings, dict) else (props or {}).get("n_ctx")
    return (
        _positive_int(meta.get("n_ctx"))
        or _positive_int(from_props)
        or configured_context(entry)
        or _positive_int(meta.get("n_ctx_train"))
        or DEFAULT_CONTEXT_WINDOW
    )


def _modalities(entry: dict[str, Any], key: str) -> list[str]:
    architecture = entry.get("architecture")
    values = architecture.get(key) if isinstance(architecture, dict) else None
    return [v for v in values if isinstance(v, str)] if isinstance(values, list) else []


def is_chat_model(entry: dict[str, Any]) -> bool:
    outputs = _modalities(entry, "output_modalities")
    return "decisions" not in outputs or "text" in outputs


def is_selectable(entry: dict[str, Any], autoload: bool) -> bool:
    status = status_of(entry)
    if status in ("loaded", "sleeping"):
        return True
    failed = isinstance(entry.get("status"), dict) and bool(entry["status"].get("failed"))
    return autoload and status == "unloaded" and not failed and entry.get("source") == "preset"


def to_model(entry: dict[str, Any], server_url: str, props: dict[str, Any] | None = None) -> dict[str, Any]:
    """A router model as a pi model (``openai-completions`` at ``<server>/v1``), the way
    pi 1.6.0 describes it: thinking when the chat template reads ``enable_thinking``."""
    window = context_window(entry, props)
    template = (props or {}).get("chat_template")
    reasoning = isinstance(template, str) and "enable_thinking" in template
    compat: dict[str, Any] = {
        "supportsStore": False,
        "supportsReasoningEffort": False,
        "supportsUsageInStreaming": True,
        "supportsStrictMode": False,
        "maxTokensField": "max_tokens",
    }
    model: dict[str, Any] = {
        "id": entry["id"],
        "name": entry["id"],
        "provider": PROVIDER,
        "api": "openai-completions",
        "base_url": inference_url(server_url),
        "reasoning": reasoning,
        "input": ["text", "image"] if "image" in _modalities(entry, "input_modalities") else ["text"],
        "context_window": window,
        "max_tokens": window,
        "compat": compat,
    }
    if reasoning:
        compat["thinkingFormat"] = "qwen-chat-template"
        model["thinking_level_map"] = {
            "off": "off",
            "minimal": None,
            "low": None,
            "medium": "medium",
            "high": None,
            "xhigh": None,
        }
    return model


def classifier_models(snapshot: Snapshot) -> list[dict[str, Any]]:
    """The router's models as classifiers (pi 1.6.0): every chat model offered also as a
    ``llama-cpp-classify`` classifier of the same id (answers read from next-token
    probabilities), and decision models (``architecture.output_modalities`` holds
    ``decisions``) as ``typesafe-system-one`` classifiers at llama.cpp's ``/v1/systemone``."""
    models = [
        {
            "id": chat["id"],
            "name": chat.get("name", chat["id"]),
            "provider": PROVIDER,
            "type": "classifier",
            "api": "llama-cpp-classify",
            "base_url": chat["base_url"],
            "input": ["text"],
            "context_window": chat.get("context_window", DEFAULT_CONTEXT_WINDOW),
        }
        for chat in snapshot.models
    ]
    for entry in snapshot.catalogue:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        if "decisions" not in _modalities(entry, "output_modalities"):
            continue
        if not is_selectable(entry, snapshot.autoload) and status_of(entry) != "unloaded":
            continue
        models.append(
            {
                "id": entry["id"],
                "name": entry["id"],
                "provider": PROVIDER,
                "type": "classifier",
                "api": "typesafe-system-one",
                "base_url": inference_url(snapshot.server_url),
                "input": ["text", "image"] if "image" in _modalities(entry, "input_modalities") else ["text"],
                "context_window": context_window(entry),
                "compat": {"imageInput": "assets", "sendImageOptInHeader": False},
            }
        )
    return models


@dataclass
class Snapshot:
    """What the router offered at ``checked_at`` (Unix ms): the raw ``catalogue`` (for
    ``/llama``) and the pi ``models`` made of it."""

    server_url: str
    catalogue: list[dict[str, Any]] = field(default_factory=list)
    models: list[dict[str, Any]] = field(default_factory=list)
    autoload: bool = False
    checked_at: int = 0

    def model_ids(self) -> list[str]:
        return [m["id"] for m in self.models]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": SNAPSHOT_VERSION,
            "serverUrl": self.server_url,
            "checkedAt": self.checked_at,
            "autoload": self.autoload,
            "catalogue": self.catalogue,
            "models": self.models,
        }

    @classmethod
    def from_json(cls, data: Any) -> Snapshot | None:
        if not isinstance(data, dict) or data.get("version") != SNAPSHOT_VERSION:
            return None
        url, models, catalogue = data.get("serverUrl"), data.get("models"), data.get("catalogue")
        if not isinstance(url, str) or not isinstance(models, list) or not isinstance(catalogue, list):
            return None
        good = [m for m in models if isinstance(m, dict) and isinstance(m.get("id"), str)]
        checked = data.get("checkedAt")
        return cls(url, catalogue, good, data.get("autoload") is True, checked if isinstance(checked, int) else 0)


def read_snapshot(server_url: str) -> Snapshot | None:
    """The snapshot of the router at ``server_url`` (``None``: none, another router's, unreadable)."""
    try:
        data = json.loads(snapshot_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    snapshot = Snapshot.from_json(data)
    return snapshot if snapshot is not None and snapshot.server_url == server_url else None


def write_snapshot(snapshot: Snapshot) -> None:
    """Replace the snapshot atomically (a failure to write is not an error: the next look
    at the router tries again)."""
    path = snapshot_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(snapshot.to_json(), indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        pass


def fetch_snapshot(client: LlamaClient, *, timeout: float | None = None) -> Snapshot:
    """Ask the router (blocking: call it in a worker thread from async code): ``/models``,
    ``/props`` for autoload when unloaded presets exist, and ``/props?model=`` of each
    loaded chat model (its chat template and context size). Raises :class:`LlamaError`."""
    catalogue = client.list_sync(timeout=timeout)
    autoload = False
    if any(status_of(e) == "unloaded" and e.get("source") == "preset" for e in catalogue):
        try:
            autoload = client.props_sync(timeout=timeout).get("models_autoload") is True
        except LlamaError:
            autoload = False
    models = []
    for entry in catalogue:
        if not is_selectable(entry, autoload) or not is_chat_model(entry):
            continue
        props = None
        if status_of(entry) == "loaded":
            try:
                props = client.props_sync(entry["id"], timeout=timeout)
            except LlamaError:
                props = None
        models.append(to_model(entry, client.server_url, props))
    return Snapshot(client.server_url, catalogue, models, autoload, int(time.time() * 1000))


__all__ = [
    "Snapshot",
    "classifier_models",
    "context_window",
    "fetch_snapshot",
    "is_chat_model",
    "is_selectable",
    "read_snapshot",
    "snapshot_path",
    "to_model",
    "write_snapshot",
]
