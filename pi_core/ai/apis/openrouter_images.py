"""OpenRouter's image models (``openrouter-images``): one chat completion, not streamed.

The request is ``POST <baseUrl>/chat/completions`` with one user message whose content
is the prompt's text parts and its input images as ``image_url`` data URLs, and
``modalities`` ``["image"]`` (``["image", "text"]`` for a model whose ``output`` lists
text). The answer's first choice carries the text (``message.content``) and the images
(``message.images``, each an ``image_url`` data URL); images given by remote URL are left
out. Usage is priced at the model's catalogue price, cached prompt tokens apart.
"""

from __future__ import annotations

import re
from typing import Any

from pi_hookspecs import ImagesContext, ImagesResult, Model, StreamOptions, Usage

from ..errors import ProviderError
from ..models import calculate_cost
from ._classifier import post_json
from ._common import join_url

_DATA_URL = re.compile(r"^data:([^;,]+);base64,(.+)$", re.DOTALL)


def _count(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else 0


def image_usage(raw: Any, model: Model) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    found = raw.get("prompt_tokens_details")
    details: dict[str, Any] = found if isinstance(found, dict) else {}
    cached = _count(details.get("cached_tokens"))
    written = _count(details.get("cache_write_tokens"))
    read = max(0, cached - written) if written else cached
    usage = Usage(
        input=max(0, _count(raw.get("prompt_tokens")) - read - written),
        output=_count(raw.get("completion_tokens")),
        cache_read=read,
        cache_write=written,
    )
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
    return calculate_cost(model, usage)


async def generate_openrouter_images(model: Model, context: ImagesContext, options: StreamOptions) -> ImagesResult:
    content: list[dict[str, Any]] = []
    for block in context.input:
        if block.type == "text":
            content.append({"type": "text", "text": block.text})
        else:
            content.append({"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}})
    payload = {
        "model": model.id,
        "messages": [{"role": "user", "content": content}],
        "stream": False,
        "modalities": ["image", "text"] if "text" in (model.output or []) else ["image"],
    }
    body = await post_json(join_url(model.base_url or "", "chat/completions"), payload, model=model, options=options)
    if not isinstance(body, dict):
        raise ProviderError("OpenRouter returned an unexpected response")
    output: list[dict[str, Any]] = []
    choices = body.get("choices")
    message = (
        choices[0].get("message") if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    )
    if isinstance(message, dict):
        text = message.get("content")
        if isinstance(text, str) and text:
            output.append({"type": "text", "text": text})
        for image in message.get("images") or []:
            url = image.get("image_url") if isinstance(image, dict) else None
            if isinstance(url, dict):
                url = url.get("url")
            match = _DATA_URL.match(url) if isinstance(url, str) else None
            if match:
                output.append({"type": "image", "mime_type": match.group(1), "data": match.group(2)})
    return ImagesResult.model_validate(
        {
            "api": model.api,
            "provider": model.provider,
            "model": model.id,
            "output": output,
            "response_id": body.get("id") if isinstance(body.get("id"), str) else None,
            "usage": image_usage(body.get("usage"), model),
        }
    )


__all__ = ["generate_openrouter_images", "image_usage"]
