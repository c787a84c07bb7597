"""The llama.cpp router's HTTP API, as pi 1.6.0's llama.cpp extension speaks it.

* ``GET /models`` (``?reload=1`` rescans the model folder): the catalogue, each entry
  ``{"id", "status": {"value": "loaded" | "sleeping" | "loading" | "unloaded" |
  "downloading", "failed", "exit_code", "args", "progress"}, "source", "meta",
  "architecture"}``;
* ``GET /props`` (``?model=ID&autoload=false`` for one loaded model): ``models_autoload``,
  ``chat_template`` and ``default_generation_settings.n_ctx``;
* ``POST /models/load`` and ``POST /models/unload`` with ``{"model": ID}``;
* ``POST /models`` with ``{"model": "owner/repository[:quant]"}``: the router downloads
  the model from Hugging Face (``/models/unload`` of the same name stops it).

Requests run with :mod:`urllib` in a worker thread (nothing to import at startup, no
dependency); :meth:`LlamaClient.load_and_wait` and :meth:`LlamaClient.download_and_wait`
poll the catalogue, which is authoritative, and report progress through a callback.
An abort ``signal`` (a command's ``ctx.signal``) ends the wait with :class:`Stopped`
between two polls; cancelling the awaiting task ends it too. Either way the caller then
asks the router to stop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from pi_hookspecs.record import dataclass

REQUEST_TIMEOUT = 15.0
"""Seconds one request to the router may take (as pi 1.6.0)."""

LOAD_POLL = 0.25
UNLOAD_POLL = 0.1
DOWNLOAD_POLL = 0.5


class LlamaError(Exception):
    """A failed request to the router; the message is one line for the user."""


class RouterUnreachable(LlamaError):
    """The router could not be reached at all (refused, timed out, unknown host)."""


class Stopped(Exception):
    """The user stopped a load or a download (its abort signal fired)."""


async def _pause(seconds: float, signal: Any) -> None:
    """Sleep between two polls; :class:`Stopped` as soon as ``signal`` fires."""
    if signal is None:
        await asyncio.sleep(seconds)
        return
    if signal.aborted:
        raise Stopped
    try:
        await asyncio.wait_for(signal.wait(), seconds)
    except TimeoutError:
        return
    raise Stopped


def normalize_server_url(value: str) -> str:
    """``http(s)://host:port[/path]`` without a trailing ``/`` or ``/v1``, query or fragment."""
    text = value.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"llama.cpp server URL must be an http or https URL, got {text!r}")
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return urlunsplit((parts.scheme, parts.netloc, path.rstrip("/"), "", ""))


def inference_url(server_url: str) -> str:
    """The OpenAI-compatible base URL of the router (``<server>/v1``)."""
    return f"{normalize_server_url(server_url)}/v1"


def model_is_loaded(entry: dict[str, Any]) -> bool:
    return status_of(entry) in ("loaded", "sleeping")


def status_of(entry: dict[str, Any]) -> str:
    status = entry.get("status")
    value = status.get("value") if isinstance(status, dict) else None
    return value if isinstance(value, str) else "unknown"


def _failed(entry: dict[str, Any]) -> bool:
    status = entry.get("status")
    return isinstance(status, dict) and bool(status.get("failed"))


def _error_message(payload: Any, fallback: str) -> str:
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"]:
            return str(error["message"])
        if isinstance(error, str) and error:
            return error
    return fallback


@dataclass
class Progress:
    """What a load or a download reports: a message, a ratio (0..1) when known, a detail."""

    message: str
    ratio: float | None = None
    detail: str | None = None

    def line(self) -> str:
        parts = [self.message]
        if self.ratio is not None:
            parts.append(f"{round(self.ratio * 100)}%")
        if self.detail:
            parts.append(self.detail)
        return " · ".join(parts)


ProgressCallback = Callable[[Progress], None]


def format_bytes(size: float) -> str:
    """``1536`` -> ``1.50 KiB`` (as pi 1.6.0 shows sizes)."""
    if size < 1024:
        return f"{int(size)} B"
    value = size / 1024
    unit = "KiB"
    for next_unit in ("MiB", "GiB", "TiB"):
        if value < 1024:
            break
        value /= 1024
        unit = next_unit
    return f"{value:.1f} {unit}" if value >= 10 else f"{value:.2f} {unit}"


def load_progress(data: Any) -> Progress | None:
    """A load's progress from ``status.progress`` (``{"stage"|"current", "stages", "value"}``)."""
    if not isinstance(data, dict):
        return None
    stage = data.get("current") if isinstance(data.get("current"), str) else data.get("stage")
    stage = stage if isinstance(stage, str) else None
    stages = [s for s in data.get("stages", []) if isinstance(s, str)] if isinstance(data.get("stages"), list) else []
    value = data.get("value")
    ratio = max(0.0, min(1.0, float(value))) if isinstance(value, int | float) else None
    if stage and stage in stages:
        ratio = (stages.index(stage) + (ratio or 0.0)) / len(stages)
    return Progress(f"Loading {stage.replace('_', ' ')}" if stage else "Loading model", ratio)


def download_progress(data: Any) -> Progress | None:
    """A download's progress: ``{file: {"done", "total"}}`` (possibly under ``progress``)."""
    if not isinstance(data, dict):
        return None
    nested = data.get("progress")
    files: dict[str, Any] = nested if isinstance(nested, dict) else data
    done = total = 0
    for value in files.values():
        if (
            isinstance(value, dict)
            and isinstance(value.get("done"), int | float)
            and isinstance(value.get("total"), int | float)
        ):
            done += value["done"]
            total += value["total"]
    if total <= 0:
        return None
    return Progress("Downloading model", done / total, f"{format_bytes(done)} / {format_bytes(total)}")


class LlamaClient:
    """One llama.cpp router: ``server_url`` (without ``/v1``) and an optional API key."""

    def __init__(self, server_url: str, api_key: str | None = None, *, timeout: float = REQUEST_TIMEOUT) -> None:
        self.server_url = normalize_server_url(server_url)
        self.api_key = api_key or None
        self.timeout = timeout

    # ------------------------------------------------------------------ blocking requests

    def request_sync(self, path: str, body: Any = None, *, timeout: float | None = None) -> Any:
        """One request (``POST`` with ``body``); its JSON, or :class:`LlamaError`."""
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        # imported here: urllib.request brings http.client and email (a dozen modules),
        # which a start that sends no request to llama.cpp does not need
        import urllib.error
        import urllib.request

        request = urllib.request.Request(
            f"{self.server_url}{path}", data=data, headers=headers, method="POST" if body is not None else "GET"
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            try:
                payload = json.loads(error.read() or b"null")
            except ValueError:
                payload = None
            raise LlamaError(_error_message(payload, f"llama.cpp returned HTTP {error.code}")) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            detail = getattr(reason, "strerror", None) or str(reason) or type(error).__name__
            raise RouterUnreachable(f"Could not reach llama.cpp server at {self.server_url}: {detail}") from None
        try:
            return json.loads(raw) if raw.strip() else None
        except ValueError:
            return None

    def list_sync(self, *, reload: bool = False, timeout: float | None = None) -> list[dict[str, Any]]:
        payload = self.request_sync(f"/models{'?reload=1' if reload else ''}", timeout=timeout)
        data = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(data, list):
            raise LlamaError("llama.cpp returned an invalid model catalogue")
        if not all(isinstance(e, dict) and isinstance(e.get("id"), str) and status_of(e) != "unknown" for e in data):
            raise LlamaError("Server is not running in llama.cpp router mode")
        return data

    def props_sync(self, model: str | None = None, *, timeout: float | None = None) -> dict[str, Any]:
        query = f"?{urlencode({'model': model, 'autoload': 'false'})}" if model else ""
        payload = self.request_sync(f"/props{query}", timeout=timeout)
        return payload if isinstance(payload, dict) else {}

    # ------------------------------------------------------------------ async (worker thread)

    async def catalogue(self, *, reload: bool = False) -> list[dict[str, Any]]:
        """``GET /models``."""
        return await asyncio.to_thread(self.list_sync, reload=reload)

    async def props(self, model: str | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.props_sync, model)

    async def post(self, path: str, model: str) -> None:
        await asyncio.to_thread(self.request_sync, path, {"model": model})

    async def load(self, model: str) -> None:
        await self.post("/models/load", model)

    async def unload(self, model: str) -> None:
        await self.post("/models/unload", model)

    async def download(self, model: str) -> None:
        await self.post("/models", model)

    async def _entry(self, model: str) -> dict[str, Any] | None:
        return next((e for e in await self.catalogue() if e.get("id") == model), None)

    async def unload_and_wait(self, model: str) -> None:
        await self.unload(model)
        while True:
            entry = await self._entry(model)
            if entry is None or status_of(entry) == "unloaded":
                return
            await asyncio.sleep(UNLOAD_POLL)

    async def load_and_wait(self, model: str, on_progress: ProgressCallback, signal: Any = None) -> dict[str, Any]:
        """Load ``model`` and wait until the router reports it loaded (:class:`Stopped`
        when ``signal`` fires first)."""
        await self.load(model)
        on_progress(Progress("Loading model"))
        while True:
            entry = await self._entry(model)
            if entry is not None and status_of(entry) == "loaded":
                return entry
            if entry is not None and (_failed(entry) or status_of(entry) == "unloaded"):
                status = entry.get("status") or {}
                code = status.get("exit_code") if isinstance(status, dict) else None
                raise LlamaError(f"Model exited with code {code}" if code is not None else "Model failed to load")
            if entry is not None:
                status = entry.get("status")
                progress = load_progress(status.get("progress") if isinstance(status, dict) else None)
                if progress is not None:
                    on_progress(progress)
            await _pause(LOAD_POLL, signal)

    async def download_and_wait(
        self, model: str, on_progress: ProgressCallback, signal: Any = None
    ) -> list[dict[str, Any]]:
        """Have the router download ``model``; the catalogue (rescanned) once it is done
        (:class:`Stopped` when ``signal`` fires first)."""
        await self.download(model)
        on_progress(Progress("Downloading model"))
        saw_downloading = False
        polls = 0
        while True:
            entry = await self._entry(model)
            polls += 1
            if entry is not None and status_of(entry) == "downloading":
                saw_downloading = True
                status = entry.get("status")
                progress = download_progress(status.get("progress") if isinstance(status, dict) else None)
                if progress is not None:
                    on_progress(progress)
            elif entry is not None and _failed(entry):
                raise LlamaError(f"Download of {model} failed")
            elif entry is not None and (saw_downloading or polls >= 2):
                return await self.catalogue(reload=True)
            await _pause(DOWNLOAD_POLL, signal)


__all__ = [
    "LlamaClient",
    "LlamaError",
    "Progress",
    "RouterUnreachable",
    "Stopped",
    "download_progress",
    "format_bytes",
    "inference_url",
    "load_progress",
    "model_is_loaded",
    "normalize_server_url",
    "status_of",
]
