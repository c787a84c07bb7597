"""The ``google-vertex`` API: Gemini on Vertex AI (``streamGenerateContent`` over HTTP
and SSE), with the request and stream of :mod:`pi_core.ai.apis.google_shared`.

Two ways to authenticate, as in pi 1.6.0:

* a Google Cloud API key (the request's key, else ``GOOGLE_CLOUD_API_KEY``), sent in
  ``x-goog-api-key`` to the global endpoint (Vertex AI express mode);
* a Google Cloud access token in ``Authorization: Bearer``, to the endpoint of the
  project and location (``GOOGLE_CLOUD_PROJECT`` or ``GCLOUD_PROJECT``,
  ``GOOGLE_CLOUD_LOCATION``, or ``project`` / ``location`` in ``StreamOptions.extra``).
  pi itself cannot mint the token: Application Default Credentials need
  ``google-auth``, which the ``pluggable-pi-vertex`` plugin brings and lends to this API through
  a :class:`~pi_hookspecs.CredentialSource` (any other source of a bearer token, a
  ``models.json`` header included, works the same way).

A model ``baseUrl`` without ``{location}`` is a custom endpoint, used as given
(``…/v1/publishers/google/models/ID:streamGenerateContent``); the catalogue's
``https://{location}-aiplatform.googleapis.com`` means Google's own endpoints.
"""

from __future__ import annotations

import os
import re
from urllib.parse import urlsplit

from pi_hookspecs import LlmContext, Model, StreamOptions

from ..errors import NoApiKeyError, ProviderError
from ..message_stream import MessageBuilder
from . import _common, google_shared

DEFAULT_BASE_URL = "https://{location}-aiplatform.googleapis.com"
GLOBAL_ENDPOINT = "https://aiplatform.googleapis.com"
MULTI_REGIONS = frozenset({"us", "eu"})
API_VERSION = "v1"
CREDENTIALS_MARKER = "gcp-vertex-credentials"
"""An ``apiKey`` that means "no key: use Google Cloud credentials" (as in pi 1.6.0)."""

_PLACEHOLDER = re.compile(r"^<[^>]+>$")
_VERSION_SEGMENT = re.compile(r"^v\d+(?:beta\d*)?$")


class VertexCredentialsError(NoApiKeyError):
    """Neither an API key nor a Google Cloud access token for a Vertex AI request."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        ProviderError.__init__(
            self,
            f"No API key for provider: {provider}. Set GOOGLE_CLOUD_API_KEY, or install the pluggable-pi-vertex plugin "
            "(pi install pluggable-pi-vertex) to use Google Cloud Application Default Credentials "
            "(gcloud auth application-default login) with GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION.",
        )


def vertex_api_key(options: StreamOptions) -> str | None:
    """The request's Google Cloud API key, else ``GOOGLE_CLOUD_API_KEY``; ``None`` for
    none, :data:`CREDENTIALS_MARKER` or a ``<placeholder>``."""
    key = (options.api_key or os.environ.get("GOOGLE_CLOUD_API_KEY") or "").strip()
    if not key or key == CREDENTIALS_MARKER or _PLACEHOLDER.match(key):
        return None
    return key


def _setting(options: StreamOptions, name: str, *variables: str) -> str | None:
    value = options.extra.get(name)
    if isinstance(value, str) and value.strip():
        return value.strip()
    for variable in variables:
        value = os.environ.get(variable, "").strip()
        if value:
            return value
    return None


def endpoint(model: Model, options: StreamOptions, *, express: bool) -> str:
    """The ``streamGenerateContent`` URL of a request."""
    base = (model.base_url or "").strip()
    path = google_shared.model_path(model, vertex=True) + google_shared.STREAM_SUFFIX
    if base and "{location}" not in base:  # a custom endpoint, used as given
        versioned = any(_VERSION_SEGMENT.match(part) for part in urlsplit(base).path.split("/"))
        return _common.join_url(base, path if versioned else f"{API_VERSION}/{path}")
    if express:
        return f"{GLOBAL_ENDPOINT}/{API_VERSION}/{path}"
    project = _setting(options, "project", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT")
    if not project:
        raise ProviderError(
            f"Vertex AI ({model.provider}) needs a Google Cloud project: set GOOGLE_CLOUD_PROJECT (or GCLOUD_PROJECT)"
        )
    location = _setting(options, "location", "GOOGLE_CLOUD_LOCATION")
    if not location:
        raise ProviderError(
            f"Vertex AI ({model.provider}) needs a location: set GOOGLE_CLOUD_LOCATION (e.g. us-central1 or global)"
        )
    if base and base != DEFAULT_BASE_URL:
        host = base.replace("{location}", location)
    elif location == "global":
        host = GLOBAL_ENDPOINT
    elif location in MULTI_REGIONS:
        host = f"https://aiplatform.{location}.rep.googleapis.com"
    else:
        host = DEFAULT_BASE_URL.replace("{location}", location)
    if not path.startswith("projects/"):
        path = f"projects/{project}/locations/{location}/{path}"
    return _common.join_url(host, f"{API_VERSION}/{path}")


async def stream_google_vertex(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
    """Run one streaming Vertex AI request, reporting it through ``out``."""
    payload = google_shared.build_request(model, context, options, flash_lite=False)
    headers = _common.base_headers(model, options)
    api_key = vertex_api_key(options)
    if api_key is not None:
        _common.set_default_header(headers, "x-goog-api-key", api_key)
    elif not _common.has_header(headers, "authorization") and not _common.has_header(headers, "x-goog-api-key"):
        raise VertexCredentialsError(model.provider)
    url = endpoint(model, options, express=api_key is not None)
    await google_shared.stream_gemini(model, options, out, url=url, payload=payload, headers=headers)
