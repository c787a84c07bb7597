"""What the registration hooks register: commands and flags (tools are
:class:`~pi_hookspecs.ToolDefinition`, providers :class:`~pi_hookspecs.ProviderDefinition`).

Each registration hook receives a ``register`` callable. pi validates what is passed,
records which plugin registered it, and resolves name conflicts: the first plugin (in
load order) to register a name keeps it; later ones get a diagnostic. A plugin may
register the same name again to replace its own earlier registration.
"""

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Protocol

from pydantic import ConfigDict, Field, field_validator

from ._base import PiModel
from .auth import LoginMethod
from .credentials import CredentialSource
from .llm import ApiDefinition, ProviderDefinition
from .tools import ToolDefinition
from .virtual import VirtualModelDefinition

COMMAND_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_:.-]*$")
FLAG_NAME_RE = re.compile(r"^[a-z][a-z0-9-]*$")


class CommandDefinition(PiModel):
    """A slash command (``/name args``). ``handler(args, ctx)`` receives the text after
    the name and a :class:`~pi_hookspecs.CommandContext`; it may be sync or async."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    handler: Callable[..., Any] = Field(exclude=True)
    argument_hint: str | None = None
    get_argument_completions: Callable[[str], Any] | None = Field(default=None, exclude=True)

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        name = name.removeprefix("/")
        if not COMMAND_NAME_RE.match(name):
            raise ValueError(f"command name {name!r} must start with a letter or digit and hold no spaces")
        return name


class FlagDefinition(PiModel):
    """A command-line flag (``--name``) a plugin adds to ``pi``; read it with
    ``ctx.get_flag(name)``. It is listed in ``pi --help``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    type: Literal["boolean", "string"] = "boolean"
    default: Any = None
    description: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        name = name.removeprefix("--")
        if not FLAG_NAME_RE.match(name):
            raise ValueError(f"flag name {name!r} must be lowercase letters, digits and '-'")
        return name


class CliCommandDefinition(PiModel):
    """A ``pi NAME ...`` subcommand: ``main(args)`` gets the remaining arguments and
    returns the exit status (``None`` means 0); it may be a coroutine function."""

    model_config = ConfigDict(extra="forbid")

    name: str
    main: Callable[..., Any] = Field(exclude=True)
    help: str = ""

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not FLAG_NAME_RE.match(name):
            raise ValueError(f"command name {name!r} must be lowercase letters, digits and '-'")
        return name


class ShortcutDefinition(PiModel):
    """A key of interactive mode (pi's notation: ``ctrl+shift+p``, ``alt+x``, ``f5``):
    ``handler(ctx)`` gets a :class:`~pi_hookspecs.CommandContext`; it may be async.
    Listed by ``/hotkeys``; ``keybindings.json`` keys win over it."""

    model_config = ConfigDict(extra="forbid")

    key: str
    handler: Callable[..., Any] = Field(exclude=True)
    description: str = ""

    @field_validator("key")
    @classmethod
    def _check_key(cls, key: str) -> str:
        key = key.strip().lower()
        if not key or " " in key:
            raise ValueError(f"shortcut {key!r} must be one key such as 'ctrl+shift+p'")
        return key


class RendererDefinition(PiModel):
    """How interactive mode draws a custom message (``kind="message"``, from
    ``ctx.send_message``) or a custom entry (``kind="entry"``, from ``ctx.append_entry``)
    of ``custom_type``: ``render(item, options)`` gets the message or entry and
    ``{"expanded": bool}`` and returns text, a list of lines, a ``rich`` renderable, or
    ``None`` for pi's own drawing (entries: not drawn)."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["message", "entry"]
    custom_type: str
    render: Callable[..., Any] = Field(exclude=True)


class ToolRendererDefinition(PiModel):
    """Chooses how calls of any tool are drawn: ``resolve(tool_name, next)`` returns an
    object (or dict) with optional ``render_call(args, options)`` and
    ``render_result(result, options)``, or ``next()`` - what the plugins after it and
    the tool itself would use (``next() or mine`` only fills in). Each render returns
    text, lines, a ``rich`` renderable, or ``None`` for pi's own drawing."""

    model_config = ConfigDict(extra="forbid")

    resolve: Callable[..., Any] = Field(exclude=True)


MarkdownMessageType = Literal["user", "assistant", "assistant-thinking", "custom", "summary", "changelog"]
"""Where interactive mode renders markdown: ``user``, ``assistant`` and ``assistant-thinking``
(transcript messages: what a transformer runs on unless it names others), ``custom``
(custom messages without a plugin renderer), ``summary`` (compaction and branch
summaries, without pi's header) and ``changelog`` (``/changelog``)."""
DEFAULT_MARKDOWN_MESSAGE_TYPES: frozenset[MarkdownMessageType] = frozenset({"user", "assistant", "assistant-thinking"})


class MarkdownTransformContext(PiModel):
    """What a markdown transformer learns about the text it gets."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    message_type: MarkdownMessageType
    is_streaming: bool = False
    """``True`` for the partial answer while it streams in."""
    available_width: int
    """The terminal columns the rendered markdown gets."""
    message_id: str | None = None
    """The session entry's id when drawn from the session file (a resumed session), else ``None``."""
    timestamp: str | None = None
    """The session entry's ISO timestamp, with ``message_id``."""


class MarkdownTransformerDefinition(PiModel):
    """A plugin's markdown transformer (pi's ``registerMarkdownTransformer``):
    ``transform(markdown, context)`` returns the markdown to render instead, for the
    surfaces in ``message_types``."""

    model_config = ConfigDict(extra="forbid")

    transform: Callable[[str, MarkdownTransformContext], str] = Field(exclude=True)
    message_types: frozenset[MarkdownMessageType] = DEFAULT_MARKDOWN_MESSAGE_TYPES


MCP_SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")


class McpServerRegistration(PiModel):
    """An MCP server a plugin registered (``register_mcp_servers``,
    ``ctx.register_mcp_server``): ``config`` is an ``mcpServers`` entry of ``mcp.json``
    as JSON (``command``/``args``/``env``/``cwd`` or ``url``/``headers``/``oauth``, plus
    ``exposure``, ``toolExposure``, ``description``, ``enabled``, ``timeout``), ``plugin``
    the plugin that registered it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    config: dict[str, Any]
    plugin: str

    @field_validator("name")
    @classmethod
    def _check_name(cls, name: str) -> str:
        if not MCP_SERVER_NAME_RE.match(name):
            raise ValueError('a server name holds only letters, digits, "_" and "-"')
        return name

    @field_validator("config", mode="before")
    @classmethod
    def _check_config(cls, config: Any) -> Any:
        if hasattr(config, "model_dump"):  # a pydantic model of the entry (pi_mcp.ServerConfig)
            config = config.model_dump(mode="json", by_alias=True, exclude_none=True)
        if not isinstance(config, dict):
            kind = type(config).__name__
            raise ValueError(f"an MCP server's config is a dict shaped like an mcpServers entry, not {kind}")
        command, url = config.get("command"), config.get("url")
        if (command is None) == (url is None):
            raise ValueError('an MCP server needs either "command" (stdio) or "url" (HTTP), not both')
        if not isinstance(command if command is not None else url, str):
            raise ValueError(f'"{"command" if command is not None else "url"}" must be a string')
        return config


class RegisterMarkdownTransformer(Protocol):
    def __call__(
        self,
        transform: Callable[[str, MarkdownTransformContext], str],
        /,
        *,
        message_types: Sequence[MarkdownMessageType] | None = None,
    ) -> None: ...


class RegisterMcpServer(Protocol):
    def __call__(self, name: str, config: Mapping[str, Any], /) -> None: ...


class RegisterShortcut(Protocol):
    def __call__(
        self, key: str | ShortcutDefinition, /, handler: Callable[..., Any] | None = None, *, description: str = ""
    ) -> None: ...


class RegisterRenderer(Protocol):
    def __call__(self, custom_type: str, render: Callable[..., Any], /) -> None: ...


class RegisterToolRenderer(Protocol):
    def __call__(self, resolve: Callable[..., Any], /) -> None: ...


class RegisterCliCommand(Protocol):
    def __call__(self, name: str, main: Callable[..., Any], /, *, help: str = "") -> None: ...


class RegisterTool(Protocol):
    def __call__(self, definition: ToolDefinition | Callable[..., Any], /) -> None: ...


class RegisterCommand(Protocol):
    def __call__(
        self,
        name: str | CommandDefinition,
        /,
        handler: Callable[..., Any] | None = None,
        *,
        description: str = "",
        argument_hint: str | None = None,
    ) -> None: ...


class RegisterFlag(Protocol):
    def __call__(
        self,
        name: str | FlagDefinition,
        /,
        *,
        type: Literal["boolean", "string"] = "boolean",
        default: Any = None,
        description: str = "",
    ) -> None: ...


class RegisterProvider(Protocol):
    def __call__(
        self,
        definition: ProviderDefinition | ApiDefinition | CredentialSource | LoginMethod | dict[str, Any],
        /,
    ) -> None: ...


class RegisterVirtualModel(Protocol):
    def __call__(self, definition: VirtualModelDefinition | dict[str, Any], /) -> None: ...


class AddHookspecs(Protocol):
    def __call__(self, module_or_class: Any, /) -> None: ...
