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
from .models import (
    DEFAULT_THINKING_BUDGETS,
    calculate_cost,
    clamp_thinking_level,
    combine_usage,
    supported_thinking_levels,
    thinking_budget,
)
from .registry import ModelRegistry, ModelResolutionError, ModelSelection
from .stream import AssistantMessageStream, MessageBuilder, describe_error
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
