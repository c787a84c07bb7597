"""Tools: :class:`ToolDefinition`, :class:`ToolResult` and the :func:`tool` decorator.

A tool is what the model (or a script, or another tool) calls. Its ``execute``
receives the validated arguments as a dict and a :class:`~pi_hookspecs.ToolContext`;
it may be sync or async and may return a :class:`ToolResult`, a string, content
blocks, a pydantic model or any JSON value (see :meth:`ToolResult.coerce`).

Exposure decides how the model reaches a tool:

``direct``      declared to the model while active, callable while active (default)
``model-only``  declared while active, never callable from other tools
``codemode``    callable whenever registered, listed by codemode; not declared unless activated
``deferred``    like ``codemode`` but not listed; ``tool_search`` finds and activates it
``hidden``      registered but unreachable (re-register with it to withdraw a tool)
"""

import inspect
import json
import re
from collections.abc import Callable
from typing import Annotated, Any, Literal, get_args, get_origin, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator
from pydantic.fields import FieldInfo

from ._base import PiModel
from .aio import maybe_await
from .messages import ImageContent, TextContent, ToolDeclaration, Usage, UserContent

ToolExposure = Literal["direct", "model-only", "codemode", "deferred", "hidden"]
EXPOSURES: tuple[str, ...] = ("direct", "model-only", "codemode", "deferred", "hidden")
ExecutionMode = Literal["parallel", "sequential"]

TOOL_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


class ToolAnnotations(PiModel):
    """Hints about what a tool does, with the meaning of MCP tool annotations.
    Missing hints take the MCP defaults: not read-only, maybe destructive, open world."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class ToolNamespace(PiModel):
    """Groups related tools (an MCP server's tools, say)."""

    name: str
    aliases: list[str] = Field(default_factory=list)
    description: str | None = None
    instructions: str | None = None


class ToolResult(PiModel):
    """What a tool returns. ``content`` reaches the model; ``details`` is for rendering
    and state; ``structured_content`` is for programmatic callers (codemode scripts)."""

    content: list[UserContent] = Field(default_factory=list)
    details: Any = None
    structured_content: Any = None
    is_error: bool = False
    usage: Usage | None = None
    terminate: bool = False

    @classmethod
    def text(cls, text: str, **fields: Any) -> "ToolResult":
        return cls(content=[TextContent(text=text)], **fields)

    @classmethod
    def error(cls, text: str, **fields: Any) -> "ToolResult":
        return cls(content=[TextContent(text=text)], is_error=True, **fields)

    def text_content(self) -> str:
        """The text blocks joined with newlines."""
        return "\n".join(b.text for b in self.content if isinstance(b, TextContent))

    @classmethod
    def coerce(cls, value: Any) -> "ToolResult":
        """Turn what a tool returned into a ToolResult.

        ``ToolResult`` as is; a dict with a ``content`` key is validated as a ToolResult;
        ``str`` becomes one text block; a content block or a list of them becomes the
        content; a pydantic model becomes ``structured_content`` plus its JSON as text;
        ``None`` becomes an empty result; anything else is shown as JSON text.
        """
        if isinstance(value, ToolResult):
            return value
        if value is None:
            return cls()
        if isinstance(value, str):
            return cls.text(value)
        if isinstance(value, TextContent | ImageContent):
            return cls(content=[value])
        if isinstance(value, dict) and "content" in value:
            return cls.model_validate(value)
        if isinstance(value, list) and value and all(_is_block(v) for v in value):
            return cls.model_validate({"content": value})
        if isinstance(value, BaseModel):
            data = value.model_dump(mode="json")
            return cls(content=[TextContent(text=json.dumps(data, indent=2))], structured_content=data)
        try:
            text = json.dumps(value, indent=2, default=str)
        except (TypeError, ValueError):
            text = str(value)
        return cls.text(text)


def _is_block(value: Any) -> bool:
    if isinstance(value, TextContent | ImageContent):
        return True
    return isinstance(value, dict) and value.get("type") in ("text", "image")


class ToolLoadout(PiModel):
    """What ``prepare_loadout`` receives whenever the active tools change."""

    declared: list[str] = Field(default_factory=list)
    """Active tools whose declarations would be sent to the model."""
    callable: list[str] = Field(default_factory=list)
    """Tools other tools may call (``ctx.execute_tool``)."""
    tools: list[Any] = Field(default_factory=list)
    """Every registered :class:`ToolDefinition` (exposure, namespace, guidelines …)."""


class LoadoutResult(PiModel):
    """What ``prepare_loadout`` returns: replacement descriptions for declared tools and
    the active tools whose declarations requests leave out (they stay callable)."""

    model_config = ConfigDict(extra="forbid")

    descriptions: dict[str, str] = Field(default_factory=dict)
    hidden_declarations: list[str] = Field(default_factory=list)


class ToolDefinition(PiModel):
    """A tool: what the model sees (name, description, JSON Schema ``parameters``), what
    the system prompt says about it (``prompt_snippet``, ``prompt_guidelines``), how it is
    reached (``exposure``, ``namespace``) and what runs (``execute``)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    label: str | None = None
    description: str
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    execute: Callable[..., Any] = Field(exclude=True)
    prompt_snippet: str | None = None
    prompt_guidelines: list[str] = Field(default_factory=list)
    execution_mode: ExecutionMode = "parallel"
    exposure: ToolExposure = "direct"
    default_active: bool = True
    namespace: ToolNamespace | None = None
    annotations: ToolAnnotations | None = None
    output_schema: dict[str, Any] | None = None
    constrained_sampling: dict[str, Any] | Literal[False] | None = None
    """Provider-side constrained sampling of the arguments, as
    :attr:`ToolDeclaration.constrained_sampling` (pi's read, bash, edit and write ask
    ``{"type": "json_schema", "strict": "prefer"}``)."""
    args_model: type[BaseModel] | None = Field(default=None, exclude=True)
    """When set, arguments are validated with this pydantic model (the @tool decorator
    sets it); otherwise the core validates them against ``parameters``."""
    prepare_arguments: Callable[[Any], Any] | None = Field(default=None, exclude=True)
    """Runs before validation; maps an older argument shape onto the current one."""
    reaches_tools: Callable[[dict[str, Any]], Any] | None = Field(default=None, exclude=True)
    """For tools that call other tools: ``"all"`` or the words of the input that may
    name the tools a call reaches."""
    prepare_loadout: Callable[[Any], Any] | None = Field(default=None, exclude=True)
    """For tools that orchestrate others (codemode): ``prepare_loadout(ToolLoadout)`` ->
    :class:`LoadoutResult` (or a dict, or None), called whenever the active tools change
    while this tool is active."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not TOOL_NAME_RE.match(name):
            raise ValueError(f"tool name {name!r} must be 1-128 characters of letters, digits, '_' or '-'")
        return name

    def declaration(self) -> ToolDeclaration:
        """The tool as declared to the model."""
        # Fields of this (validated) definition: constructed, not validated again.
        if self.constrained_sampling is None:
            return ToolDeclaration.model_construct(
                name=self.name, description=self.description, parameters=self.parameters
            )
        return ToolDeclaration.model_construct(
            name=self.name,
            description=self.description,
            parameters=self.parameters,
            constrained_sampling=self.constrained_sampling,
        )

    def validate_arguments(self, args: Any) -> dict[str, Any]:
        """Run ``prepare_arguments`` and the pydantic ``args_model`` (when there is one).
        Raises :class:`pydantic.ValidationError` for invalid arguments."""
        if self.prepare_arguments is not None:
            args = self.prepare_arguments(args)
        if args is None:
            args = {}
        if self.args_model is not None:
            return self.args_model.model_validate(args).model_dump(mode="python", exclude_unset=True)
        if not isinstance(args, dict):
            raise TypeError(f"arguments of {self.name} must be an object, got {type(args).__name__}")
        return args

    async def run(self, args: dict[str, Any], ctx: Any) -> ToolResult:
        """Call ``execute`` (sync or async) and coerce what it returns."""
        return ToolResult.coerce(await maybe_await(self.execute(args, ctx)))


# --------------------------------------------------------------------------- @tool


def _strip_titles(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


_SECTION_RE = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and Google-style ``Args:`` entries."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        header = _SECTION_RE.match(line.strip()) if not line.startswith((" ", "\t")) else None
        if header:
            section = header.group(1)
            current = None
            continue
        if section is None:
            description.append(line)
        elif section in ("Args", "Arguments", "Parameters"):
            match = re.match(r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$", line)
            if match and (len(line) - len(line.lstrip())) <= 4:
                current = match.group(1).lstrip("*")
                params[current] = match.group(2).strip()
            elif current and line.strip():
                params[current] = f"{params[current]} {line.strip()}".strip()
    return "\n".join(description).strip(), params


def _is_context_param(param: inspect.Parameter, hint: Any) -> bool:
    if param.name == "ctx":
        return True
    name = getattr(hint, "__name__", None) or (hint if isinstance(hint, str) else "")
    return isinstance(name, str) and name.endswith(("ToolContext", "ExtensionContext"))


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    exposure: ToolExposure = "direct",
    execution_mode: ExecutionMode = "parallel",
    prompt_snippet: str | None = None,
    prompt_guidelines: list[str] | tuple[str, ...] = (),
    namespace: ToolNamespace | None = None,
    annotations: ToolAnnotations | None = None,
    default_active: bool = True,
) -> Any:
    """Turn a typed function into a :class:`ToolDefinition`.

    The JSON Schema and the argument validation come from the signature (through
    pydantic); the description from the docstring, parameter descriptions from its
    ``Args:`` section or ``Annotated[..., Field(description=...)]``. A parameter named
    ``ctx`` (or annotated with ``ToolContext``) receives the tool context. A return
    annotation that is a pydantic model becomes the tool's ``output_schema`` and the
    returned model its ``structured_content``.

    Usable bare (``@tool``) or with options (``@tool(name="x", exposure="deferred")``),
    on functions and on bound methods (``tool(self.method)``).
    """

    def build(func: Callable[..., Any]) -> ToolDefinition:
        if not callable(func):
            raise TypeError(f"@tool expects a function, got {func!r}")
        signature = inspect.signature(func)
        try:
            hints = get_type_hints(func, include_extras=True)
        except Exception:
            hints = {}
        doc_description, doc_params = parse_docstring(inspect.getdoc(func))
        tool_description = description or doc_description
        tool_name = name or getattr(func, "__name__", "")
        if not tool_description:
            raise TypeError(f"@tool {tool_name!r}: give the function a docstring or pass description=")
        fields: dict[str, Any] = {}
        ctx_param: str | None = None
        for param in signature.parameters.values():
            hint = hints.get(param.name, param.annotation)
            if _is_context_param(param, hint):
                ctx_param = param.name
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"@tool {tool_name!r}: *args and **kwargs are not supported")
            if hint is inspect.Parameter.empty:
                hint = Any
            default = ... if param.default is inspect.Parameter.empty else param.default
            field_options: dict[str, Any] = {}
            annotated_info = get_origin(hint) is Annotated and any(
                isinstance(a, FieldInfo) and a.description for a in get_args(hint)[1:]
            )
            if param.name in doc_params and not annotated_info:
                field_options["description"] = doc_params[param.name]
            fields[param.name] = (hint, Field(default, **field_options))
        args_model = create_model(
            f"{tool_name}_arguments",
            __config__=ConfigDict(extra="ignore", arbitrary_types_allowed=True),
            **fields,
        )
        parameters = _strip_titles(args_model.model_json_schema())
        parameters.setdefault("properties", {})
        returns = hints.get("return")
        output_schema = None
        if isinstance(returns, type) and issubclass(returns, BaseModel) and not issubclass(returns, ToolResult):
            output_schema = _strip_titles(returns.model_json_schema())
        param_names = list(fields)
        is_async = inspect.iscoroutinefunction(func)

        def call_kwargs(args: dict[str, Any], ctx: Any) -> dict[str, Any]:
            validated = args_model.model_validate(args)
            kwargs = {key: getattr(validated, key) for key in param_names}
            if ctx_param is not None:
                kwargs[ctx_param] = ctx
            return kwargs

        if is_async:

            async def execute(args: dict[str, Any], ctx: Any) -> ToolResult:
                return ToolResult.coerce(await func(**call_kwargs(args, ctx)))

        else:

            def execute(args: dict[str, Any], ctx: Any) -> ToolResult:  # type: ignore[misc]
                return ToolResult.coerce(func(**call_kwargs(args, ctx)))

        execute.__wrapped__ = func  # type: ignore[attr-defined]
        return ToolDefinition(
            name=tool_name,
            label=label,
            description=tool_description,
            parameters=parameters,
            execute=execute,
            prompt_snippet=prompt_snippet,
            prompt_guidelines=list(prompt_guidelines),
            execution_mode=execution_mode,
            exposure=exposure,
            default_active=default_active,
            namespace=namespace,
            annotations=annotations,
            output_schema=output_schema,
            args_model=args_model,
        )

    if fn is not None:
        return build(fn)
    return build


def format_validation_error(error: ValidationError) -> str:
    """A compact, model-readable rendering: one ``- path: message`` line per error."""
    lines = []
    for item in error.errors():
        loc = ".".join(str(p) for p in item.get("loc", ())) or "(root)"
        msg = item.get("msg", "invalid")
        if item.get("type") == "missing":
            msg = "missing"
        lines.append(f"- {loc}: {msg}")
    return "\n".join(lines)
