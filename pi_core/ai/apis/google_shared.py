"""What the two Gemini APIs share: the ``generateContent`` request and the decoding of
its ``streamGenerateContent?alt=sse`` stream.

``google-generative-ai`` (the Gemini API, an API key) and ``google-vertex`` (Vertex AI,
an API key or a Google Cloud access token) send the same JSON body and stream the same
``GenerateContentResponse`` chunks; only the endpoint and the credential differ.

Rules pi 1.6.0 applies and that are kept here:

* thinking arrives as parts with ``thought: true``; a ``thoughtSignature`` may ride on
  any part (text, thinking, function call) and is sent back as it came, on the same
  part, to the same provider and model only (and only when it is valid base64);
* Gemini 3 and later (and Claude / gpt-oss behind Vertex) need the tool-call ``id`` on
  function calls and responses; older models get none;
* Gemini 3 and later take images inside ``functionResponse.parts``; older models get a
  separate user turn with them;
* consecutive tool results are answered in one user turn;
* string and number ``const`` in tool schemas become one-value ``enum`` (Gemini ignores
  ``const``);
* on Gemini 3 and later a tool that asks for JSON-schema constrained sampling
  (``constrainedSampling: {"type": "json_schema", …}``) is sent with its strict schema
  and function calling in ``VALIDATED`` mode.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from typing import Any

from pi_hookspecs import (
    AssistantMessage,
    ImageContent,
    LlmContext,
    Model,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDeclaration,
    ToolResultMessage,
    UserMessage,
)

from .._memo import MISSING, MessageMemo, PrefixReuse
from ..errors import ProviderError
from ..message_stream import MessageBuilder
from ..models import clamp_thinking_level
from ..token_budget import clamp_max_tokens
from ..transform import prepare_context
from . import _common

# --------------------------------------------------------------------------- model traits

_GEMINI_VERSION = re.compile(r"^gemini(?:-live)?-(\d+)")
_THINKING_LEVEL_MODELS = (
    re.compile(r"gemini-3(?:\.\d+)?-(?:pro|flash)"),
    re.compile(r"gemini-(?:[4-9]|[1-9]\d)"),
    re.compile(r"gemma-?4"),
)
_GOOGLE_LEVELS = ("minimal", "low", "medium", "high")


def gemini_major_version(model_id: str) -> int | None:
    match = _GEMINI_VERSION.match(model_id.lower())
    return int(match.group(1)) if match else None


def requires_tool_call_id(model_id: str) -> bool:
    """Whether function calls and responses carry the tool-call ``id``."""
    version = gemini_major_version(model_id)
    return model_id.startswith(("claude-", "gpt-oss-")) or (version is not None and version >= 3)


def multimodal_function_responses(model_id: str) -> bool:
    """Whether tool-result images go inside ``functionResponse.parts``."""
    version = gemini_major_version(model_id)
    return version is None or version >= 3


def uses_thinking_level(model: Model) -> bool:
    """Whether the model takes ``thinkingLevel`` (Gemini 3+) rather than a token budget."""
    model_id = model.id.lower()
    return model_id in ("gemini-flash-latest", "gemini-flash-lite-latest") or any(
        pattern.search(model_id) for pattern in _THINKING_LEVEL_MODELS
    )


# --------------------------------------------------------------------------- thinking


def google_thinking_level(model: Model, level: str) -> str:
    """The Google level (``minimal`` … ``high``) for pi's ``level``: the model's
    ``thinkingLevelMap`` entry when it names one, else the level itself."""
    mapped = (model.thinking_level_map or {}).get(level)
    resolved = mapped.lower() if isinstance(mapped, str) else level
    if resolved not in _GOOGLE_LEVELS:
        raise ProviderError(f"Unsupported Google thinking level mapping for {model.ref}: {level} -> {mapped}")
    return resolved


_BUDGETS = {
    "2.5-pro": {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768},
    "2.5-flash-lite": {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576},
    "2.5-flash": {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576},
}


def thinking_budget(model: Model, level: str, budgets: dict[str, int] | None, *, flash_lite: bool) -> int:
    """Tokens of thinking for a Gemini 2.5 model at a Google level (``-1``: the model
    decides). ``flash_lite``: 2.5 Flash-Lite has a table of its own (the Gemini API)."""
    if budgets and isinstance(budgets.get(level), int):
        return budgets[level]
    for family in ("2.5-pro", "2.5-flash-lite", "2.5-flash"):
        if family == "2.5-flash-lite" and not flash_lite:
            continue
        if family in model.id:
            return _BUDGETS[family][level]
    return -1


def thinking_config(model: Model, options: StreamOptions, *, flash_lite: bool) -> dict[str, Any] | None:
    """``generationConfig.thinkingConfig`` for the request (``None``: not a reasoning model)."""
    if not model.reasoning:
        return None
    requested = options.thinking_level
    level = clamp_thinking_level(model, requested) if requested and requested != "off" else "off"
    if level == "off":
        if uses_thinking_level(model):
            fallback = clamp_thinking_level(model, "off")
            if fallback != "off":  # the model cannot turn thinking off: its lowest level
                return {"thinkingLevel": google_thinking_level(model, fallback).upper()}
        return {"thinkingBudget": 0}
    resolved = google_thinking_level(model, level)
    if uses_thinking_level(model):
        return {"includeThoughts": True, "thinkingLevel": resolved.upper()}
    budget = thinking_budget(model, resolved, options.extra.get("thinking_budgets"), flash_lite=flash_lite)
    return {"includeThoughts": True, "thinkingBudget": budget}


# --------------------------------------------------------------------------- messages

_SIGNATURE = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


def _valid_signature(signature: str | None) -> str | None:
    """``signature`` when it is base64 (Google's bytes type), else ``None``."""
    if signature and len(signature) % 4 == 0 and _SIGNATURE.match(signature):
        return signature
    return None


def _inline(image: ImageContent) -> dict[str, Any]:
    return {"inlineData": {"mimeType": image.mime_type, "data": image.data}}


def _user_content(message: UserMessage) -> dict[str, Any] | None:
    if isinstance(message.content, str):
        return {"role": "user", "parts": [{"text": message.content}]}
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append({"text": block.text})
        elif isinstance(block, ImageContent):
            parts.append(_inline(block))
    return {"role": "user", "parts": parts} if parts else None


def _model_content(message: AssistantMessage, model: Model) -> dict[str, Any] | None:
    same = message.provider == model.provider and message.model == model.id
    with_ids = requires_tool_call_id(model.id)
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            signature = _valid_signature(block.text_signature) if same else None
            # an empty part is kept when it carries a signature: Gemini needs it back
            if not block.text.strip() and not signature:
                continue
            part: dict[str, Any] = {"text": block.text}
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
        elif isinstance(block, ThinkingContent):
            if same:
                signature = _valid_signature(block.thinking_signature)
                if not block.thinking.strip() and not signature:
                    continue
                part = {"thought": True, "text": block.thinking}
                if signature:
                    part["thoughtSignature"] = signature
                parts.append(part)
            elif block.thinking.strip():
                parts.append({"text": block.thinking})
        elif isinstance(block, ToolCall):
            call: dict[str, Any] = {"name": block.name, "args": block.arguments or {}}
            if with_ids:
                call["id"] = block.id
            part = {"functionCall": call}
            signature = _valid_signature(block.thought_signature) if same else None
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
    return {"role": "model", "parts": parts} if parts else None


def _function_response(result: ToolResultMessage, model: Model, vision: bool) -> tuple[dict[str, Any], list[Any]]:
    """A tool result's ``functionResponse`` part, and the image parts that go in a
    separate user turn (models before Gemini 3)."""
    text = "\n".join(b.text for b in result.content if isinstance(b, TextContent))
    images = [_inline(b) for b in result.content if isinstance(b, ImageContent)] if vision else []
    value = text if text.strip() else ("(see attached image)" if images else "")
    response: dict[str, Any] = {
        "name": result.tool_name,
        "response": {"error": value} if result.is_error else {"output": value},
    }
    nested = multimodal_function_responses(model.id)
    if images and nested:
        response["parts"] = images
    if requires_tool_call_id(model.id):
        response["id"] = result.tool_call_id
    return {"functionResponse": response}, ([] if nested else images)


_CONVERTED = MessageMemo()
_CONVERTED_PREFIX = PrefixReuse()
"""Each message's Gemini form, converted once (see pi_core.ai._memo); never mutated."""


def convert_messages(model: Model, messages: list[Any]) -> list[dict[str, Any]]:
    """Transformed messages as Gemini ``contents``."""
    vision = "image" in model.input
    key = (model.provider, model.id, vision)
    memo = _CONVERTED
    # for a conversation that grew at its end, the converted start is reused as a whole
    index, contents, _ = _CONVERTED_PREFIX.resume(key, messages)
    mark: tuple[int, int, Any] | None = None
    while index < len(messages):
        message = messages[index]
        index += 1
        if isinstance(message, UserMessage):
            entry = memo.get(message, key)
            if entry is MISSING:
                entry = memo.put(message, key, _user_content(message))
            if entry is not None:
                contents.append(entry)
        elif isinstance(message, AssistantMessage):
            entry = memo.get(message, key)
            if entry is MISSING:
                entry = memo.put(message, key, _model_content(message, model))
            if entry is not None:
                mark = (index - 1, len(contents), None)  # what follows does not depend on what came before
                contents.append(entry)
        elif isinstance(message, ToolResultMessage):
            # consecutive tool results share one user turn (built here, new each time)
            results = [message]
            while index < len(messages) and isinstance(messages[index], ToolResultMessage):
                results.append(messages[index])
                index += 1
            turn: list[Any] | None = None
            for result in results:
                converted = memo.get(result, key)
                if converted is MISSING:
                    converted = memo.put(result, key, _function_response(result, model, vision))
                part, images = converted
                if turn is None:
                    turn = [part]
                    contents.append({"role": "user", "parts": turn})
                else:
                    turn.append(part)
                if images:
                    contents.append({"role": "user", "parts": [{"text": "Tool result image:"}, *images]})
                    turn = None
    _CONVERTED_PREFIX.save(key, messages, contents, mark)
    return contents


# --------------------------------------------------------------------------- tools

_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"})
_SUBSCHEMAS = frozenset(
    {
        "additionalProperties",
        "unevaluatedProperties",
        "propertyNames",
        "items",
        "prefixItems",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "contentSchema",
    }
)


def const_as_enum(schema: Any, names: bool = False) -> Any:
    """``schema`` with string and number ``const`` values as one-value ``enum`` (Gemini
    honours ``enum`` but ignores ``const``); a new object, the input is not changed."""
    if isinstance(schema, list):
        return [const_as_enum(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result: dict[str, Any] = {}
    for key, value in schema.items():
        if names or key in _SUBSCHEMAS:
            result[key] = const_as_enum(value)
        elif key in _NAME_MAPS:
            result[key] = const_as_enum(value, True)
        else:
            result[key] = value
    if not names and "const" in result and "enum" not in result:
        value = result["const"]
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            del result["const"]
            result["enum"] = [value]
    return result


class UnsupportedStrictSchemaError(ValueError):
    """A tool schema outside the subset strict (validated) tool calling accepts."""


_UNSUPPORTED_STRICT_KEYS = (
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "unevaluatedProperties",
    "propertyNames",
    "contains",
    "prefixItems",
    "not",
    "if",
    "then",
    "else",
)


def _is_structured(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    types = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    return "object" in types or "array" in types or "properties" in schema or "items" in schema


def _allows_null(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in schema and schema["const"] is None:
        return True
    if isinstance(schema.get("enum"), list) and None in schema["enum"]:
        return True
    return isinstance(schema.get("anyOf"), list) and any(_allows_null(variant) for variant in schema["anyOf"])


def _make_strict_node(schema: Any) -> None:
    if not isinstance(schema, dict):
        raise UnsupportedStrictSchemaError("boolean schemas are unsupported")
    for key in _UNSUPPORTED_STRICT_KEYS:
        if schema.get(key) is not None:
            raise UnsupportedStrictSchemaError(f"{key} schemas are unsupported")
    if schema.get("type") is None and schema.get("anyOf") is None and schema.get("enum") is None:
        raise UnsupportedStrictSchemaError("schemas without a type are unsupported")
    if schema.get("anyOf") is not None:
        variants = schema["anyOf"]
        if not isinstance(variants, list) or not variants:
            raise UnsupportedStrictSchemaError("anyOf must contain at least one schema")
        for variant in variants:
            if _is_structured(variant):
                raise UnsupportedStrictSchemaError("object and array unions are unsupported")
            _make_strict_node(variant)
    if schema.get("items") is not None:
        if isinstance(schema["items"], list):
            raise UnsupportedStrictSchemaError("tuple schemas are unsupported")
        _make_strict_node(schema["items"])
    is_object = schema.get("type") == "object"
    if schema.get("properties") is not None and not is_object:
        raise UnsupportedStrictSchemaError("properties require type object")
    if not is_object:
        return
    if schema.get("additionalProperties") not in (None, False):
        raise UnsupportedStrictSchemaError("schema-valued or true additionalProperties is unsupported")
    properties = schema.get("properties")
    if properties is None:
        properties = {}
    if not isinstance(properties, dict):
        raise UnsupportedStrictSchemaError("object properties must be a schema map")
    required = schema.get("required")
    if required is not None and (not isinstance(required, list) or not all(isinstance(k, str) for k in required)):
        raise UnsupportedStrictSchemaError("object required must be a string array")
    wanted = set(required or [])
    if wanted - set(properties):
        raise UnsupportedStrictSchemaError("required contains an unknown property")
    for key, value in list(properties.items()):
        _make_strict_node(value)
        if key not in wanted and not _allows_null(value):
            properties[key] = {"anyOf": [value, {"type": "null"}]}
    schema["required"] = list(properties)
    schema["additionalProperties"] = False


def make_strict_schema(schema: Any) -> dict[str, Any]:
    """A copy of a tool schema in the strict subset constrained sampling takes, as pi
    1.6.0 makes it: every property required (an optional one may be ``null``
    instead), ``additionalProperties: false`` on every object. Raises
    :class:`UnsupportedStrictSchemaError` for what that subset cannot express
    (``$ref``, ``oneOf``, object unions, …)."""
    copied = json.loads(json.dumps(schema))
    if not isinstance(copied, dict):
        raise UnsupportedStrictSchemaError("root schema must have type object")
    _make_strict_node(copied)
    if copied.get("type") != "object":
        raise UnsupportedStrictSchemaError("root schema must have type object")
    return copied


def supports_strict_tools(model_id: str) -> bool:
    """Gemini 3 and later enforce a tool's schema in validated function calling."""
    version = gemini_major_version(model_id)
    return version is not None and version >= 3


def constrained_sampling(tool: ToolDeclaration) -> Any:
    """The tool's ``constrainedSampling`` setting (pi 1.6.0's tools: ``{"type":
    "json_schema", "strict": "prefer" | "require"}``), kept among its extra fields."""
    extra = tool.model_extra or {}
    value = extra.get("constrainedSampling", extra.get("constrained_sampling"))
    if value is None:
        value = getattr(tool, "constrained_sampling", None)
    dump = getattr(value, "model_dump", None)
    return dump(by_alias=True) if callable(dump) else value


def strict_tool(tool: ToolDeclaration, supported: bool) -> bool:
    """Whether ``tool`` is sent with a strict schema: it asks for JSON-schema constrained
    sampling, the model supports it and its schema fits the strict subset. A tool that
    *requires* it (``strict: "require"``) fails the request when it cannot have it."""
    config = constrained_sampling(tool)
    if not isinstance(config, dict) or config.get("type") != "json_schema":
        return False
    required = config.get("strict") == "require"
    if not supported:
        if required:
            raise ProviderError(
                f'Tool "{tool.name}" requires JSON-schema constrained sampling, but strict tools are unsupported.'
            )
        return False
    try:
        make_strict_schema(tool.parameters or {})
    except UnsupportedStrictSchemaError as error:
        if required:
            raise ProviderError(f'Tool "{tool.name}" requires JSON-schema constrained sampling, but {error}.') from None
        return False
    return True


_TOOLS = MessageMemo()


def convert_tools(tools: list[ToolDeclaration], strict_supported: bool = False) -> list[dict[str, Any]]:
    """``tools`` as one Gemini tool of ``functionDeclarations`` (JSON Schema in
    ``parametersJsonSchema``). With ``strict_supported`` (Gemini 3 and later), a tool
    that asks for JSON-schema constrained sampling gets its strict schema
    (:func:`make_strict_schema`)."""
    declarations = []
    kind = "gemini-strict" if strict_supported else "gemini"
    for tool in tools:
        declaration = _TOOLS.get(tool, kind)
        if declaration is MISSING:
            parameters = tool.parameters or {"type": "object", "properties": {}}
            if strict_tool(tool, strict_supported):
                parameters = make_strict_schema(parameters)
            declaration = _TOOLS.put(
                tool,
                kind,
                {
                    "name": tool.name,
                    "description": tool.description,
                    "parametersJsonSchema": const_as_enum(parameters),
                },
            )
        declarations.append(declaration)
    return [{"functionDeclarations": declarations}]


_TOOL_CHOICE = {"auto": "AUTO", "none": "NONE", "any": "ANY", "required": "ANY"}


# --------------------------------------------------------------------------- request


def build_request(model: Model, context: LlmContext, options: StreamOptions, *, flash_lite: bool) -> dict[str, Any]:
    """The ``generateContent`` body of a request (the Gemini API's and Vertex AI's)."""
    prepared = prepare_context(model, context)  # no mid-conversation system messages: folded
    payload: dict[str, Any] = {"contents": convert_messages(model, prepared.messages)}
    if prepared.system_prompt:
        payload["systemInstruction"] = {"role": "user", "parts": [{"text": prepared.system_prompt}]}
    generation: dict[str, Any] = {}
    if options.temperature is not None:
        generation["temperature"] = options.temperature
    generation["maxOutputTokens"] = clamp_max_tokens(model, context, options.max_tokens or model.max_tokens)
    thinking = thinking_config(model, options, flash_lite=flash_lite)
    if thinking is not None:
        generation["thinkingConfig"] = thinking
    payload["generationConfig"] = generation
    if prepared.tools:
        strict_supported = supports_strict_tools(model.id)
        payload["tools"] = convert_tools(prepared.tools, strict_supported)
        choice = options.extra.get("tool_choice")
        choice = choice if isinstance(choice, str) and choice else None
        mode: str | None = None
        if choice in ("none", "any", "required"):
            mode = _TOOL_CHOICE[choice]
        elif any(strict_tool(tool, strict_supported) for tool in prepared.tools):
            mode = "VALIDATED"  # Gemini 3 holds the calls to the strict schemas (pi 1.6.0)
        elif choice is not None:
            mode = _TOOL_CHOICE.get(choice, "AUTO")
        if mode is not None:
            payload["toolConfig"] = {"functionCallingConfig": {"mode": mode}}
    return payload


def model_path(model: Model, *, vertex: bool) -> str:
    """``models/ID`` (Gemini API) or ``publishers/PUBLISHER/models/ID`` (Vertex AI)."""
    model_id = model.id
    if vertex:
        if model_id.startswith(("publishers/", "projects/", "models/")):
            return model_id
        if "/" in model_id:
            publisher, _, name = model_id.partition("/")
            return f"publishers/{publisher}/models/{name}"
        return f"publishers/google/models/{model_id}"
    if model_id.startswith(("models/", "tunedModels/")):
        return model_id
    return f"models/{model_id}"


STREAM_SUFFIX = ":streamGenerateContent?alt=sse"


async def stream_gemini(
    model: Model,
    options: StreamOptions,
    out: MessageBuilder,
    *,
    url: str,
    payload: dict[str, Any],
    headers: dict[str, str | None],
) -> None:
    """Send one ``streamGenerateContent`` request (headers and payload through the
    ``options`` hooks) and report its stream through ``out``."""
    state = GeminiStream(model, out)
    try:
        await _common.post_sse(
            url,
            payload=payload,
            headers=headers,
            options=options,
            out=out,
            on_event=state.handle,
            error_events=error_event,
        )
    except _common.HttpStatusError as error:
        raise google_error(error) from None
    state.finish()


# --------------------------------------------------------------------------- errors


def _google_error_object(body: Any) -> dict[str, Any] | None:
    if isinstance(body, list) and body and isinstance(body[0], dict):
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else None


def google_error(error: _common.HttpStatusError) -> _common.HttpStatusError:
    """``error`` with a Google error body (``{"error": {"code": 429, "message": …,
    "status": "RESOURCE_EXHAUSTED"}}``) put in the shape pi reports: the message, and
    the status name as the error code."""
    inner = _google_error_object(error.body)
    if inner is None:
        return error
    normalized = dict(inner)
    if isinstance(inner.get("status"), str):
        normalized["code"] = inner["status"]
    return _common.HttpStatusError(error.status_code, {"error": normalized}, error.headers)


def error_event(_name: str, data: Any) -> BaseException | None:
    """An error object sent inside the stream ends it with that error (with its HTTP
    code when it gives one)."""
    inner = _google_error_object(data)
    if inner is None:
        return None
    code = inner.get("code")
    status = code if isinstance(code, int) and 400 <= code < 600 else 200
    return google_error(_common.HttpStatusError(status, {"error": inner}))


# --------------------------------------------------------------------------- stream

_STOP_REASONS = {"STOP": "stop", "MAX_TOKENS": "length", "CONTINUATION": "length"}
_call_counter = itertools.count(1)


class GeminiStream:
    """Turns ``GenerateContentResponse`` chunks into builder calls."""

    def __init__(self, model: Model, out: MessageBuilder) -> None:
        self.model = model
        self.out = out
        self.open = _common.OpenBlock(out)

    async def handle(self, _name: str, chunk: Any) -> None:
        if not isinstance(chunk, dict):
            return
        out = self.out
        message = out.message
        if not message.response_id and isinstance(chunk.get("responseId"), str):
            message.response_id = chunk["responseId"]
        version = chunk.get("modelVersion")
        if isinstance(version, str) and version and version != self.model.id and not message.response_model:
            message.response_model = version
        candidates = chunk.get("candidates")
        candidate = candidates[0] if isinstance(candidates, list) and candidates else None
        if isinstance(candidate, dict):
            for part in _common.field(candidate, "content", "parts") or ():
                if isinstance(part, dict):
                    self._part(part)
            reason = candidate.get("finishReason")
            if isinstance(reason, str) and reason:
                stop = _STOP_REASONS.get(reason, "error")
                if stop == "stop" and message.tool_calls():
                    stop = "toolUse"
                out.stop(
                    stop, raw=reason, error_message=None if stop != "error" else f"Provider stopped with: {reason}"
                )
        blocked = _common.field(chunk, "promptFeedback", "blockReason")
        if isinstance(blocked, str) and blocked and candidate is None:
            out.stop("error", raw=blocked, error_message=f"Provider blocked the prompt: {blocked}")
        usage = chunk.get("usageMetadata")
        if isinstance(usage, dict):
            _apply_usage(out, usage)

    def _part(self, part: dict[str, Any]) -> None:
        out = self.out
        text = part.get("text")
        signature = part.get("thoughtSignature")
        signature = signature if isinstance(signature, str) and signature else None
        if isinstance(text, str):
            kind = "thinking" if part.get("thought") is True else "text"
            index = self.open.switch(kind)
            if kind == "thinking":
                out.thinking_delta(index, text)
                if signature:  # kept when later pieces of the same block come without one
                    out.thinking_signature(index, signature)
            else:
                out.text_delta(index, text)
                if signature:
                    block = out.message.content[index]
                    assert isinstance(block, TextContent)
                    block.text_signature = signature
        call = part.get("functionCall")
        if isinstance(call, dict):
            self.open.close()
            name = call.get("name") if isinstance(call.get("name"), str) else ""
            given = call.get("id")
            taken = {b.id for b in out.message.content if isinstance(b, ToolCall)}
            if isinstance(given, str) and given and given not in taken:
                call_id = given
            else:  # no id from the model, or one already used in this message
                call_id = f"{name}_{int(time.time() * 1000)}_{next(_call_counter)}"
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            index = out.tool_start(call_id, name or "")
            if signature:
                out.tool_call(index).thought_signature = signature
            out.tool_delta(index, json.dumps(args))
            out.tool_end(index)

    def finish(self) -> None:
        self.open.close()
        if self.out.message.stop_reason == "pending":
            raise ProviderError("Google stream ended without a finish reason")


def _apply_usage(out: MessageBuilder, usage: dict[str, Any]) -> None:
    def number(name: str) -> int:
        value = usage.get(name)
        return value if isinstance(value, int) else 0

    cached = number("cachedContentTokenCount")
    thoughts = number("thoughtsTokenCount")
    out.set_usage(
        input=number("promptTokenCount") - cached,
        output=number("candidatesTokenCount") + thoughts,
        cache_read=cached,
        cache_write=0,
        reasoning=thoughts,
        total_tokens=number("totalTokenCount") or None,
    )
