"""Hugging Face search for ``/llama download``: GGUF repositories and their quantizations.

The endpoint is ``HF_ENDPOINT`` (as ``huggingface_hub`` reads it), else
``https://huggingface.co``. The token, as pi 1.6.0 finds it: ``HF_TOKEN``, then the
files ``$HF_TOKEN_PATH``, ``$HF_HOME/token``, ``$XDG_CACHE_HOME/huggingface/token`` and
``~/.cache/huggingface/token``. Search works without one (with lower rate limits).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

DEFAULT_ENDPOINT = "https://huggingface.co"
TIMEOUT = 15.0

QUANTIZATION = re.compile(
    r"(?:^|[-_.])((?:UD-)?(?:IQ\d(?:_[A-Z0-9]+)+|Q\d(?:_[A-Z0-9]+)+|BF16|F16|F32|MXFP\d(?:_[A-Z0-9]+)*))$", re.I
)
SHARD_SUFFIX = re.compile(r"-\d{5}-of-\d{5}$")


class HuggingFaceError(Exception):
    """A failed Hugging Face request; the message is one line."""


def find_token(env: Mapping[str, str] | None = None) -> str | None:
    env = os.environ if env is None else env
    token = (env.get("HF_TOKEN") or "").strip()
    if token:
        return token
    candidates = [
        env.get("HF_TOKEN_PATH"),
        str(Path(env["HF_HOME"]) / "token") if env.get("HF_HOME") else None,
        str(Path(env["XDG_CACHE_HOME"]) / "huggingface" / "token") if env.get("XDG_CACHE_HOME") else None,
        str(Path.home() / ".cache" / "huggingface" / "token"),
    ]
    seen: set[str] = set()
    for candidate in candidates:
        if not candidate or candidate in seen:
            continue
        seen.add(candidate)
        try:
            text = Path(candidate).expanduser().read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if text:
            return text
    return None


@dataclass
class SearchResult:
    id: str
    downloads: int = 0


@dataclass
class Quantization:
    name: str
    size: int | None = None


@dataclass
class Details:
    id: str
    gated: str | None = None
    """``"auto"`` or ``"manual"`` for a gated repository."""
    quantizations: list[Quantization] = field(default_factory=list)


class HuggingFaceClient:
    def __init__(self, token: str | None = None, endpoint: str | None = None, *, timeout: float = TIMEOUT) -> None:
        self.token = token
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
        self.timeout = timeout

    def _get(self, path: str) -> Any:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(f"{self.endpoint}{path}", headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            if error.code == 429:
                delay = error.headers.get("retry-after")
                raise HuggingFaceError(
                    f"Hugging Face rate limit reached; retry in {delay}s"
                    if delay
                    else "Hugging Face rate limit reached"
                ) from None
            try:
                payload = json.loads(error.read() or b"null")
            except ValueError:
                payload = None
            message = payload.get("error") if isinstance(payload, dict) else None
            raise HuggingFaceError(
                message if isinstance(message, str) and message else f"Hugging Face returned HTTP {error.code}"
            ) from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            detail = getattr(reason, "strerror", None) or str(reason) or type(error).__name__
            raise HuggingFaceError(f"Hugging Face is not reachable at {self.endpoint}: {detail}") from None
        except ValueError:
            raise HuggingFaceError("Hugging Face returned invalid JSON") from None

    def search_sync(self, query: str) -> list[SearchResult]:
        params = urlencode({"search": query, "filter": "gguf", "sort": "downloads", "direction": "-1", "limit": "20"})
        payload = self._get(f"/api/models?{params}")
        if not isinstance(payload, list):
            raise HuggingFaceError("Hugging Face returned invalid search results")
        return [
            SearchResult(item["id"], item["downloads"] if isinstance(item.get("downloads"), int) else 0)
            for item in payload
            if isinstance(item, dict) and isinstance(item.get("id"), str)
        ]

    def details_sync(self, repository: str) -> Details:
        encoded = "/".join(quote(part, safe="") for part in repository.split("/"))
        payload = self._get(f"/api/models/{encoded}?blobs=true")
        if not isinstance(payload, dict):
            raise HuggingFaceError("Hugging Face returned invalid model details")
        sizes: dict[str, list[int | None]] = {}
        for sibling in payload.get("siblings") or []:
            if not isinstance(sibling, dict) or not isinstance(sibling.get("rfilename"), str):
                continue
            filename = sibling["rfilename"].split("/")[-1]
            if not filename.lower().endswith(".gguf") or filename.lower().startswith("mmproj"):
                continue
            match = QUANTIZATION.search(SHARD_SUFFIX.sub("", filename[:-5]))
            if not match:
                continue
            size = sibling.get("size")
            sizes.setdefault(match.group(1).upper(), []).append(size if isinstance(size, int) else None)
        quantizations = [
            Quantization(name, None if any(s is None for s in parts) else sum(s for s in parts if s is not None))
            for name, parts in sizes.items()
        ]
        quantizations.sort(key=lambda q: (q.name != "Q4_K_M", q.size if q.size is not None else float("inf"), q.name))
        gated = payload.get("gated")
        return Details(
            payload["id"] if isinstance(payload.get("id"), str) else repository,
            gated if gated in ("auto", "manual") else None,
            quantizations,
        )

    async def search(self, query: str) -> list[SearchResult]:
        return await asyncio.to_thread(self.search_sync, query)

    async def details(self, repository: str) -> Details:
        return await asyncio.to_thread(self.details_sync, repository)


def split_reference(value: str) -> tuple[str, str | None]:
    """``owner/repository[:quant]`` -> ``(repository, quant)``."""
    colon = value.find(":", value.find("/") + 1)
    return (value, None) if colon < 0 else (value[:colon], value[colon + 1 :] or None)


__all__ = [
    "Details",
    "HuggingFaceClient",
    "HuggingFaceError",
    "Quantization",
    "SearchResult",
    "find_token",
    "split_reference",
]
