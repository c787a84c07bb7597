"""pi's provider-neutral LLM layer.

One async stream API over every provider::

    from pi_core.ai import ModelRegistry, stream
    from pi_hookspecs import LlmContext, UserMessage

    registry = ModelRegistry()
    model = registry.resolve("sonnet:high").model
    async for event in registry.stream(model, LlmContext(messages=[UserMessage(content="hi")])):
        ...

The wire APIs speak HTTP and server-sent events themselves (``apis._transport``,
``apis._sse``); no provider SDK or HTTP library is imported (tests/ai/conformance holds
them to the official SDKs' accumulators; httpx2 serves requests through a proxy).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Each name is imported from its module when first used: importing one part of this
# package (``pi_core.ai.builtin``, the provider plugin every plugin host loads) does not
# import the others (the registry, the wire APIs, the transcript rules).
_EXPORTS: dict[str, str] = {
    "ApiImplementation": "apis",
    "get_api": "apis",
    "known_apis": "apis",
    "preload": "apis",
    "register_api": "apis",
    "AuthStore": "auth",
    "ENV_API_KEYS": "auth",
    "env_api_key": "auth",
    "resolve_config_value": "auth",
    "BUILTIN_PROVIDERS": "catalog",
    "DEFAULT_MODELS": "catalog",
    "ModelsConfigError": "config",
    "ModelsFile": "config",
    "load_models_json": "config",
    "parse_models_json": "config",
    "complete": "dispatch",
    "stream": "dispatch",
    "stream_function": "dispatch",
    "ErrorKind": "errors",
    "NoApiKeyError": "errors",
    "ProviderError": "errors",
    "classify_error": "errors",
    "is_auth_error": "errors",
    "is_context_overflow": "errors",
    "is_retryable_error": "errors",
    "FauxResponse": "faux",
    "FauxScript": "faux",
    "FauxScriptExhausted": "faux",
    "faux_model": "faux",
    "faux_script_for": "faux",
    "offline_demo_model": "faux",
    "offline_demo_script": "faux",
    "DEFAULT_THINKING_BUDGETS": "models",
    "calculate_cost": "models",
    "clamp_thinking_level": "models",
    "combine_usage": "models",
    "supported_thinking_levels": "models",
    "thinking_budget": "models",
    "ModelRegistry": "registry",
    "ModelResolutionError": "registry",
    "ModelSelection": "registry",
    "AssistantMessageStream": "message_stream",
    "MessageBuilder": "message_stream",
    "describe_error": "message_stream",
    "PreparedContext": "transform",
    "current_system_prompt": "transform",
    "current_tools": "transform",
    "prepare_context": "transform",
    "to_llm_messages": "transform",
    "transform_messages": "transform",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:
    from .apis import ApiImplementation, get_api, known_apis, preload, register_api
    from .auth import ENV_API_KEYS, AuthStore, env_api_key, resolve_config_value
    from .catalog import BUILTIN_PROVIDERS, DEFAULT_MODELS
    from .config import ModelsConfigError, ModelsFile, load_models_json, parse_models_json
    from .dispatch import complete, stream, stream_function
    from .errors import (
        ErrorKind,
        NoApiKeyError,
        ProviderError,
        classify_error,
        is_auth_error,
        is_context_overflow,
        is_retryable_error,
    )
    from .faux import (
        FauxResponse,
        FauxScript,
        FauxScriptExhausted,
        faux_model,
        faux_script_for,
        offline_demo_model,
        offline_demo_script,
    )
    from .message_stream import AssistantMessageStream, MessageBuilder, describe_error
    from .models import (
        DEFAULT_THINKING_BUDGETS,
        calculate_cost,
        clamp_thinking_level,
        combine_usage,
        supported_thinking_levels,
        thinking_budget,
    )
    from .registry import ModelRegistry, ModelResolutionError, ModelSelection
    from .transform import (
        PreparedContext,
        current_system_prompt,
        current_tools,
        prepare_context,
        to_llm_messages,
        transform_messages,
    )

__all__ = [
    "BUILTIN_PROVIDERS",
    "DEFAULT_MODELS",
    "DEFAULT_THINKING_BUDGETS",
    "ENV_API_KEYS",
    "ApiImplementation",
    "AssistantMessageStream",
    "AuthStore",
    "ErrorKind",
    "FauxResponse",
    "FauxScript",
    "FauxScriptExhausted",
    "MessageBuilder",
    "ModelRegistry",
    "ModelResolutionError",
    "ModelSelection",
    "ModelsConfigError",
    "ModelsFile",
    "NoApiKeyError",
    "PreparedContext",
    "ProviderError",
    "calculate_cost",
    "clamp_thinking_level",
    "classify_error",
    "combine_usage",
    "complete",
    "current_system_prompt",
    "current_tools",
    "describe_error",
    "env_api_key",
    "faux_model",
    "faux_script_for",
    "get_api",
    "is_auth_error",
    "is_context_overflow",
    "is_retryable_error",
    "known_apis",
    "load_models_json",
    "offline_demo_model",
    "offline_demo_script",
    "parse_models_json",
    "preload",
    "prepare_context",
    "register_api",
    "resolve_config_value",
    "stream",
    "stream_function",
    "supported_thinking_levels",
    "thinking_budget",
    "to_llm_messages",
    "transform_messages",
]
