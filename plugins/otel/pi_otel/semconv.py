"""Names from the OpenTelemetry GenAI semantic conventions (``gen_ai.*``, development
status, as of semantic-conventions 1.41) and pi's own (``pi.*``).

Written out here rather than imported from ``opentelemetry-semantic-conventions``: the
hooks build plain dicts and never import OpenTelemetry on the agent's path.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

# ----------------------------------------------------------------------------- attributes

OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
TOKEN_TYPE = "gen_ai.token.type"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"

# pi's own
PI_PROVIDER = "pi.provider"
PI_API = "pi.api"
PI_THINKING_LEVEL = "pi.thinking_level"
PI_STOP_REASON = "pi.stop_reason"
PI_COST = "pi.cost.usd"
PI_TOOL_OUTCOME = "pi.tool.outcome"
PI_TOOL_PARENT_CALL_ID = "pi.tool.parent_call_id"
PI_TOOL_NESTED = "pi.tool.nested"
PI_HOOK_NAME = "pi.hook.name"
PI_HOOK_OUTCOME = "pi.hook.outcome"
PI_HOOK_MESSAGE = "pi.hook.message"
PI_PLUGIN_NAME = "pi.plugin.name"
PI_RETRY_ATTEMPT = "pi.retry.attempt"
PI_ERROR_MESSAGE = "pi.error.message"
PI_COMPACTION_REASON = "pi.compaction.reason"
PI_COMPACTION_TOKENS_BEFORE = "pi.compaction.tokens_before"
PI_COMPACTION_FROM_PLUGIN = "pi.compaction.from_plugin"
PI_COMPACTION_WILL_RETRY = "pi.compaction.will_retry"
PI_SESSION_FILE = "pi.session.file"
PI_CWD = "pi.cwd"
PI_TURNS = "pi.turns"

# ----------------------------------------------------------------------------- span names / operations

INVOKE_AGENT = "invoke_agent"
CHAT = "chat"
EXECUTE_TOOL = "execute_tool"
COMPACTION_SPAN = "pi.compaction"
HOOK_EVENT_PREFIX = "pi.hook."
RETRY_EVENT = "pi.retry"

# ----------------------------------------------------------------------------- metrics

METRIC_TOKEN_USAGE = "gen_ai.client.token.usage"
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"
METRIC_TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
METRIC_COST = "pi.cost.usage"
METRIC_TOOL_CALLS = "pi.tool.calls"
METRIC_HOOK_OUTCOMES = "pi.hook.outcomes"

TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
"""Bucket boundaries the conventions advise for ``gen_ai.client.token.usage``."""
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
"""Bucket boundaries the conventions advise for ``gen_ai.client.operation.duration``."""

# ----------------------------------------------------------------------------- values

_PROVIDERS = {
    "anthropic": "anthropic",
    "openai": "openai",
    "openai-codex": "openai",
    "azure": "azure.ai.openai",
    "azure-openai-responses": "azure.ai.openai",
    "amazon-bedrock": "aws.bedrock",
    "google": "gcp.gemini",
    "google-gemini-cli": "gcp.gemini",
    "google-vertex": "gcp.vertex_ai",
    "google-antigravity": "gcp.gen_ai",
    "groq": "groq",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "deepseek": "deepseek",
    "cohere": "cohere",
    "perplexity": "perplexity",
    "moonshotai": "moonshot_ai",
    "moonshotai-cn": "moonshot_ai",
}


def provider_name(provider: str) -> str:
    """``gen_ai.provider.name`` for a pi provider id: a well-known value where one
    applies, else pi's own id (custom values are allowed)."""
    return _PROVIDERS.get(provider, provider or "_OTHER")


_FINISH = {"stop": "stop", "length": "length", "toolUse": "tool_call", "error": "error", "aborted": "cancelled"}


def finish_reason(stop_reason: str, raw: str | None) -> str:
    """The provider's own finish reason when pi kept it, else pi's, in the conventions' words."""
    return raw or _FINISH.get(stop_reason, stop_reason)


_STATUS = re.compile(r"\b([45]\d\d)\b")


def error_type(stop_reason: str, message: str | None) -> str:
    """A low-cardinality ``error.type`` for a failed request: the HTTP status when the
    error names one, ``cancelled`` for an abort, else ``_OTHER``."""
    if stop_reason == "aborted":
        return "cancelled"
    found = _STATUS.search(message or "")
    return found.group(1) if found else "_OTHER"


def server(base_url: str | None) -> tuple[str | None, int | None]:
    """``server.address`` and ``server.port`` of a model's base URL."""
    if not base_url:
        return None, None
    try:
        parts = urlsplit(base_url)
        port = parts.port or (443 if parts.scheme == "https" else 80 if parts.scheme == "http" else None)
    except ValueError:
        return None, None
    return parts.hostname, port
