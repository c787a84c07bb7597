"""Argument validation for tool calls.

Tools built with ``@tool`` validate with their pydantic model. Other tools (MCP tools,
dict definitions) are validated against their JSON Schema ``parameters`` after a loose
coercion like the TypeScript pi's: numeric strings to numbers, ``"true"``/``"false"``
to booleans, a single value to a one-item array, ``null`` in an optional property
dropped.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from pi_hookspecs import ToolCall, ToolDefinition, format_validation_error

_validators: dict[int, Any] = {}


class ToolArgumentsError(ValueError):
    """Invalid arguments; the message is written for the model."""


def _coerce(value: Any, schema: Any) -> Any:
    if not isinstance(schema, dict):
        return value
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if isinstance(value, str):
        if "integer" in kinds and value.strip().lstrip("-").isdigit():
            return int(value)
        if "number" in kinds:
            try:
                return float(value) if not value.strip().lstrip("-").isdigit() else int(value)
            except ValueError:
                return value
        if "boolean" in kinds and value in ("true", "false"):
            return value == "true"
    if "array" in kinds and value is not None and not isinstance(value, list):
        return [_coerce(value, schema.get("items"))]
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_coerce(v, schema["items"]) for v in value]
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        required = set(schema.get("required", []))
        props = schema["properties"]
        out = {}
        for key, item in value.items():
            if item is None and key not in required and key in props:
                continue
            out[key] = _coerce(item, props.get(key))
        return out
    return value


def _validator(schema: dict[str, Any]) -> Any:
    key = id(schema)
    cached = _validators.get(key)
    if cached is None or cached[0] is not schema:
        import jsonschema  # ~80 ms, and only tools declared by a bare JSON schema need it

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cached = (schema, cls(schema))
        _validators[key] = cached
    return cached[1]


def validate_tool_arguments(tool: ToolDefinition, tool_call: ToolCall) -> dict[str, Any]:
    """The validated arguments of ``tool_call``; raises :class:`ToolArgumentsError`."""
    args: Any = tool_call.arguments
    try:
        if tool.args_model is not None or tool.prepare_arguments is not None:
            args = tool.validate_arguments(args)
            if tool.args_model is not None:
                return args  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise ToolArgumentsError(_message(tool, format_validation_error(exc), tool_call.arguments)) from exc
    except (TypeError, ValueError) as exc:
        raise ToolArgumentsError(_message(tool, f"- {exc}", tool_call.arguments)) from exc
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolArgumentsError(_message(tool, "- (root): expected an object", args))
    schema = tool.parameters or {}
    if not schema or schema == {"type": "object", "properties": {}}:
        return args
    coerced: dict[str, Any] = _coerce(args, schema)
    errors = sorted(_validator(schema).iter_errors(coerced), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for error in errors:
            path = ".".join(str(p) for p in error.absolute_path) or "(root)"
            if error.validator == "required":
                missing = error.message.split("'")[1] if "'" in error.message else error.message
                lines.append(f"- {missing}: missing")
            else:
                lines.append(f"- {path}: {error.message}")
        raise ToolArgumentsError(_message(tool, "\n".join(lines), tool_call.arguments))
    return coerced


def _message(tool: ToolDefinition, problems: str, received: Any) -> str:
    try:
        shown = json.dumps(received, indent=2, default=str)
    except (TypeError, ValueError):
        shown = repr(received)
    listed = "\n".join(f"  {line}" for line in problems.splitlines())  # indented, as pi 1.6.0
    return f'Validation failed for tool "{tool.name}":\n{listed}\n\nReceived arguments:\n{shown}'
