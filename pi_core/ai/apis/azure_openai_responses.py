"""The ``azure-openai-responses`` API: the OpenAI Responses API of an Azure OpenAI
(Azure AI Foundry) resource, over HTTP and SSE.

The request and the stream are OpenAI's (:mod:`.openai_responses`); what differs is
where it goes and how it authenticates:

* the endpoint is ``<base>/responses?api-version=<version>``; the base comes from
  ``options.extra["azure_base_url"]``, ``AZURE_OPENAI_BASE_URL``,
  ``https://<AZURE_OPENAI_RESOURCE_NAME>.openai.azure.com/openai/v1`` or the model's
  ``baseUrl``, in that order (an Azure host without a path gets ``/openai/v1``); the
  version from ``options.extra["azure_api_version"]``, ``AZURE_OPENAI_API_VERSION``,
  else ``v1``;
* the key goes in an ``api-key`` header (``AZURE_OPENAI_API_KEY``);
* ``model`` in the body is the deployment: ``options.extra["azure_deployment_name"]``,
  the model's entry in ``AZURE_OPENAI_DEPLOYMENT_NAME_MAP``
  (``model-id=deployment,...``), else the model id.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from pi_hookspecs import LlmContext, Model, StreamOptions

from ..errors import ProviderError
from ..message_stream import MessageBuilder
from . import _common
from .openai_responses import ResponsesDecoder, build_payload

DEFAULT_API_VERSION = "v1"
_AZURE_HOST_SUFFIXES = (".openai.azure.com", ".cognitiveservices.azure.com", ".ai.azure.com")


class AzureConfigError(ProviderError):
    """The Azure endpoint cannot be worked out."""


def _option(options: StreamOptions, key: str, variable: str) -> str | None:
    value = options.extra.get(key)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return (os.environ.get(variable) or "").strip() or None


def deployment_name(model: Model, options: StreamOptions) -> str:
    """The deployment a request of ``model`` goes to."""
    explicit = options.extra.get("azure_deployment_name")
    if isinstance(explicit, str) and explicit:
        return explicit
    for entry in (os.environ.get("AZURE_OPENAI_DEPLOYMENT_NAME_MAP") or "").split(","):
        model_id, sep, deployment = entry.strip().partition("=")
        if sep and model_id.strip() == model.id and deployment.strip():
            return deployment.strip()
    return model.id


def base_url(model: Model, options: StreamOptions) -> str:
    """The resource's Responses base URL (without ``/responses``)."""
    url = _option(options, "azure_base_url", "AZURE_OPENAI_BASE_URL")
    if url is None:
        resource = _option(options, "azure_resource_name", "AZURE_OPENAI_RESOURCE_NAME")
        if resource:
            url = f"https://{resource}.openai.azure.com/openai/v1"
    if url is None and model.base_url:
        url = model.base_url
    if not url:
        raise AzureConfigError(
            "Azure OpenAI base URL is required: set AZURE_OPENAI_BASE_URL or AZURE_OPENAI_RESOURCE_NAME, "
            "or the provider's baseUrl in models.json"
        )
    return normalize_base_url(url)


def normalize_base_url(url: str) -> str:
    """``url`` without trailing slashes; an Azure host whose path is empty, ``/openai``
    or ``/openai/v1/responses`` gets the ``/openai/v1`` base path."""
    trimmed = url.strip().rstrip("/")
    parts = urlsplit(trimmed)
    if not parts.scheme or not parts.netloc:
        raise AzureConfigError(f"Invalid Azure OpenAI base URL: {url}")
    host = (parts.hostname or "").lower()
    path = parts.path.rstrip("/")
    if host.endswith(_AZURE_HOST_SUFFIXES) and path in ("", "/openai", "/openai/v1/responses"):
        return urlunsplit((parts.scheme, parts.netloc, "/openai/v1", "", ""))
    return trimmed


def api_version(options: StreamOptions) -> str:
    return _option(options, "azure_api_version", "AZURE_OPENAI_API_VERSION") or DEFAULT_API_VERSION


def request_url(model: Model, options: StreamOptions) -> str:
    """``<base>/responses?api-version=<version>`` (a query already in the base is kept)."""
    parts = urlsplit(_common.join_url(base_url(model, options), "responses"))
    query = "&".join(q for q in (parts.query, urlencode({"api-version": api_version(options)})) if q)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def build_azure_payload(model: Model, context: LlmContext, options: StreamOptions) -> dict[str, Any]:
    """OpenAI's Responses body with the deployment as ``model`` and no long-retention
    field (Azure does not take ``prompt_cache_retention``)."""
    payload = build_payload(model, context, options)
    payload["model"] = deployment_name(model, options)
    payload.pop("prompt_cache_retention", None)
    return payload


async def stream_azure_openai_responses(
    model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder
) -> None:
    url = request_url(model, options)
    payload = build_azure_payload(model, context, options)
    headers = _common.base_headers(model, options)
    api_key = _common.require_api_key(model, options, headers, "api-key", "authorization")
    if api_key != "unused":
        _common.set_default_header(headers, "api-key", api_key)
    decoder = ResponsesDecoder(out)
    await _common.post_sse(
        url,
        payload=payload,
        headers=headers,
        options=options,
        out=out,
        on_event=decoder,
        error_events=_common.openai_error_event,
    )
    if not decoder.terminal:
        raise ProviderError("Azure OpenAI Responses stream ended without a stop reason")
