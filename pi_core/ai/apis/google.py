"""The ``google-generative-ai`` API: the Gemini API's ``streamGenerateContent`` over
HTTP and SSE, authenticated with an API key (``GEMINI_API_KEY``) in ``x-goog-api-key``.

The request body and the stream are shared with ``google-vertex``
(:mod:`pi_core.ai.apis.google_shared`).
"""

from __future__ import annotations

from pi_hookspecs import LlmContext, Model, StreamOptions

from ..message_stream import MessageBuilder
from . import _common, google_shared

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"


async def stream_google(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
    """Run one streaming Gemini request, reporting it through ``out``."""
    payload = google_shared.build_request(model, context, options, flash_lite=True)
    headers = _common.base_headers(model, options)
    api_key = _common.require_api_key(model, options, headers, "x-goog-api-key", "authorization")
    if api_key != "unused":
        _common.set_default_header(headers, "x-goog-api-key", api_key)
    path = google_shared.model_path(model, vertex=False) + google_shared.STREAM_SUFFIX
    url = _common.join_url(model.base_url or DEFAULT_BASE_URL, path)
    await google_shared.stream_gemini(model, options, out, url=url, payload=payload, headers=headers)
