"""``models``: the sandboxed script's view of the session's model catalogue.

Scripts list models and run the ones that do not chat — classifiers and image models —
with the session's credentials, through ``ctx.model_registry``
(:class:`~pi_hookspecs.ModelRegistryView`)::

    jev = models.get_model_of_type("classifier", "typesafe", "jev-latest")
    result = models.classify(jev, {"state": {...}, "questions": {...}})
    if result["stop_reason"] == "stop":
        text(result["answers"])

Models are plain dicts (``type``, ``provider``, ``id``, ``name``, ``api``, ``input`` …);
``classify()`` and ``generate_images()`` read only their ``provider`` and ``id``. They never
raise for a provider's error: the result's ``stop_reason`` is ``error`` and
``error_message`` says why. At most :data:`MAX_CONCURRENT` such calls of one script run
at once (``classify_async`` / ``generate_images_async`` under ``asyncio.gather`` wait for
a slot); their usage is added to the ``codemode`` result, so it counts toward the
session's cost.
"""

from __future__ import annotations

import asyncio
from typing import Any

from pi_hookspecs import Usage

__all__ = ["ASYNC_FUNCTIONS", "FUNCTIONS", "MAX_CONCURRENT", "MODELS_STUBS", "ModelsApi"]

MAX_CONCURRENT = 4
TYPES = ("chat", "classifier", "image")

FUNCTIONS = (
    "get_models_of_type",
    "get_available_of_type",
    "get_model_of_type",
    "classify",
    "generate_images",
    "classify_async",
    "generate_images_async",
)
ASYNC_FUNCTIONS = frozenset({"classify_async", "generate_images_async"})

MODELS_STUBS = '''from typing import Any

def get_models_of_type(type: str, provider: str | None = None) -> list[dict[str, Any]]:
    """Every known model of a type ("chat", "classifier" or "image"), optionally of one provider."""
def get_available_of_type(type: str, provider: str | None = None) -> list[dict[str, Any]]:
    """The models of a type whose provider has working credentials."""
def get_model_of_type(type: str, provider: str, id: str) -> Any:
    """One model (a dict), or None."""
def classify(model: dict[str, Any] | None, context: dict[str, Any]) -> dict[str, Any]:
    """Answer context["questions"] about context["state"]; answers are in result["answers"] by question id."""
def generate_images(model: dict[str, Any] | None, context: dict[str, Any]) -> dict[str, Any]:
    """Make images from context["input"] text and image blocks; show result["output"] images with image()."""
async def classify_async(model: dict[str, Any] | None, context: dict[str, Any]) -> dict[str, Any]: ...
async def generate_images_async(model: dict[str, Any] | None, context: dict[str, Any]) -> dict[str, Any]: ...
'''

DESCRIPTION = """Models (`models`): classifiers and image models, with the session's credentials.
- `models.get_available_of_type("classifier")` / `("image")` list usable models (dicts with provider, id, \
name, api, input); `models.get_model_of_type(type, provider, id)` finds one.
- `models.classify(model, {"state": {...}, "questions": {id: question}, "images": [image blocks]})` where a \
question is `{"type": "choice", "instructions": str, "criteria": {label: meaning}}`, `{"type": "score", \
"instructions": str, "criteria": [levels, lowest first]}` or `{"type": "bool", "instructions": str, \
"criteria": {"true": str, "false": str}}`. Answers by question id: choice `{choice, probabilities, \
confidence}`, score `{score, confidence}` (expected level index), bool `{probability}` (of true).
- `models.generate_images(model, {"input": [{"type": "text", "text": ...}, image blocks]})`: show \
`result["output"]` image blocks with `image(block)`; can take minutes.
- Neither raises on provider errors: check `result["stop_reason"] == "stop"`, else `result["error_message"]`. \
`classify_async` / `generate_images_async` run up to four calls at once under asyncio.gather."""


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json", exclude_none=True) if hasattr(value, "model_dump") else value


def model_info(model: Any) -> dict[str, Any]:
    """A model as scripts see it (snake_case fields; ``type`` always set)."""
    info: dict[str, Any] = _dump(model)
    info["type"] = getattr(model, "model_type", None) or info.get("type") or "chat"
    for heavy in ("thinking_level_map", "sampling_params", "sampling_params_by_thinking_level"):
        info.pop(heavy, None)
    return info


class ModelsApi:
    """The ``models`` functions of one script run."""

    def __init__(self, ctx: Any) -> None:
        self.ctx = ctx
        self.usages: list[Usage] = []
        self.calls = 0
        self._slots = asyncio.Semaphore(MAX_CONCURRENT)

    def _registry(self) -> Any:
        try:
            return self.ctx.model_registry
        except (AttributeError, RuntimeError) as error:
            raise ValueError(f"models are not available here: {error}") from None

    @staticmethod
    def _type(value: Any) -> str:
        if value not in TYPES:
            raise ValueError(f"unknown model type {value!r}: use 'chat', 'classifier' or 'image'")
        return str(value)

    @staticmethod
    def _provider(value: Any) -> str | None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"provider must be a string or None, got {type(value).__name__}")
        return value

    async def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``models.<name>(*args, **kwargs)`` from the script."""
        if name in ("get_models_of_type", "get_available_of_type"):
            return self._list(name, *args, **kwargs)
        if name == "get_model_of_type":
            return self._one(*args, **kwargs)
        if name in ("classify", "classify_async"):
            return await self._run("classify", *args, **kwargs)
        if name in ("generate_images", "generate_images_async"):
            return await self._run("generate_images", *args, **kwargs)
        raise NameError(f"name 'models.{name}' is not defined")

    def _list(self, name: str, type: Any, provider: Any = None) -> list[dict[str, Any]]:
        registry = self._registry()
        method = registry.get_models_of_type if name == "get_models_of_type" else registry.get_available_of_type
        return [model_info(m) for m in method(self._type(type), self._provider(provider))]

    def _one(self, type: Any, provider: Any, id: Any) -> dict[str, Any] | None:
        if not isinstance(provider, str) or not isinstance(id, str):
            raise TypeError("get_model_of_type(type, provider, id) takes strings")
        found = self._registry().get_model_of_type(self._type(type), provider, id)
        return model_info(found) if found is not None else None

    async def _run(self, operation: str, model: Any, context: Any) -> dict[str, Any]:
        if model is None:
            raise ValueError(f"models.{operation}() got None for the model: get_model_of_type() found no such model")
        if not isinstance(model, dict):
            raise TypeError(f"models.{operation}() takes the model as a dict with provider and id")
        if not isinstance(context, dict):
            raise TypeError(f"models.{operation}() takes the request as a dict")
        registry = self._registry()
        options = None
        signal = getattr(self.ctx, "signal", None)
        if signal is not None:
            from pi_hookspecs import StreamOptions

            options = StreamOptions(signal=signal)
        ref = {"provider": model.get("provider"), "id": model.get("id")}
        async with self._slots:
            self.calls += 1
            result = await getattr(registry, operation)(ref, _plain_images(context), options)
        if result.usage is not None:
            self.usages.append(result.usage)
        out: dict[str, Any] = _dump(result)
        out.setdefault("stop_reason", "stop")
        return out

    def usage(self) -> Usage | None:
        """The summed usage of the script's classifier and image calls (``None``: none)."""
        if not self.usages:
            return None
        total = Usage()
        for usage in self.usages:
            total.input += usage.input
            total.output += usage.output
            total.cache_read += usage.cache_read
            total.cache_write += usage.cache_write
            total.total_tokens += usage.total_tokens
            for name in ("input", "output", "cache_read", "cache_write", "total"):
                setattr(total.cost, name, getattr(total.cost, name) + getattr(usage.cost, name))
        total.cost.total_from_provider = False
        return total


def _plain_images(context: dict[str, Any]) -> dict[str, Any]:
    """Image blocks as ``tools.read()`` returns them carry a ``note``; the request takes
    ``type``, ``data`` and ``mime_type`` only."""
    out = dict(context)
    for key in ("images", "input"):
        blocks = out.get(key)
        if isinstance(blocks, list):
            out[key] = [
                {k: v for k, v in b.items() if k != "note"} if isinstance(b, dict) and b.get("type") == "image" else b
                for b in blocks
            ]
    return out
