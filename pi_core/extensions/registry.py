"""What plugins register: tools, commands, flags and providers.

The ``register`` callables handed to the registration hooks validate what they get,
record the plugin that registered it, and resolve conflicts:

* a plugin registering a name again replaces its own earlier registration;
* a plugin tool replaces a built-in tool of the same name;
* otherwise the first plugin (in load order) keeps a name and later ones are reported.

The tables of :data:`ON_DEMAND` registration hooks are filled when first read: an
installed plugin that only registers, say, a ``pi NAME`` subcommand is imported when the
subcommands are looked up, not at every start (see :mod:`.lazy`); the plugins imported
at start register their commands and subcommands at that read too (a ``pi -p`` without a
slash command reads neither table), unless plugins load eagerly (``PI_LAZY_PLUGINS=0``,
strict mode) or the hook is async.
Registrations made at the read may arrive after those of plugins later in load order;
:attr:`Registry.rank` keeps the first plugin in load order the owner of a name all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any, Generic, Literal, TypeVar

from pydantic import ValidationError

from pi_hookspecs import (
    ApiDefinition,
    CliCommandDefinition,
    CommandDefinition,
    CredentialSource,
    FlagDefinition,
    LoginMethod,
    MarkdownTransformerDefinition,
    McpServerRegistration,
    ProviderDefinition,
    RendererDefinition,
    ShortcutDefinition,
    ToolDefinition,
    ToolRendererDefinition,
    VirtualModelDefinition,
    tool,
)
from pi_hookspecs.record import dataclass

from .diagnostics import Diagnostic

T = TypeVar("T")
Kind = Literal[
    "tool",
    "command",
    "flag",
    "provider",
    "api",
    "login method",
    "cli command",
    "credential source",
    "shortcut",
    "message renderer",
    "entry renderer",
    "virtual model",
]


ON_DEMAND: dict[str, str] = {
    "register_commands": "commands",
    "register_cli_commands": "cli_commands",
    "register_shortcuts": "shortcuts",
    "register_message_renderers": "message_renderers",
    "register_entry_renderers": "entry_renderers",
}
"""Registration hooks whose results are read when needed (a slash command typed, ``pi
NAME``, the terminal UI's keys and renderers), with their :class:`Registry` table: a
plugin that is not imported yet calls them when the table is first read."""


class Table(dict[str, "Registered[Any]"]):
    """A registry table that fills itself, once, when first read (:meth:`defer`)."""

    __slots__ = ("_fill",)

    def __init__(self) -> None:
        super().__init__()
        self._fill: Callable[[], None] | None = None

    def defer(self, fill: Callable[[], None]) -> None:
        """Call ``fill`` before the table is next read (after any fill still pending)."""
        pending = self._fill
        if pending is None:
            self._fill = fill
            return

        def both() -> None:
            pending()
            fill()

        self._fill = both

    def _filled(self) -> None:
        fill = self._fill
        if fill is not None:
            self._fill = None
            fill()

    def __getitem__(self, key: str) -> Registered[Any]:
        self._filled()
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self._filled()
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        self._filled()
        return super().__contains__(key)

    def __iter__(self) -> Any:
        self._filled()
        return super().__iter__()

    def __len__(self) -> int:
        self._filled()
        return super().__len__()

    def keys(self) -> Any:
        self._filled()
        return super().keys()

    def values(self) -> Any:
        self._filled()
        return super().values()

    def items(self) -> Any:
        self._filled()
        return super().items()

    def __repr__(self) -> str:
        self._filled()
        return super().__repr__()


def _table() -> Any:
    return Table()


@dataclass(slots=True)
class Registered(Generic[T]):
    """A registered value, the plugin that registered it, and what it replaced."""

    value: T
    plugin: str
    source: str
    """Source kind of the registering plugin (builtin, entrypoint, user, …)."""
    shadows: Registered[T] | None = None
    """The built-in registration this one replaces, if any."""


class RegistrationError(ValueError):
    pass


def _short(exc: ValidationError) -> str:
    parts = []
    for item in exc.errors():
        loc = ".".join(str(p) for p in item.get("loc", ())) or "(root)"
        parts.append(f"{loc}: {item.get('msg')}")
    return "; ".join(parts)


@dataclass
class Registry:
    """Everything the plugins registered, by kind and name."""

    tools: dict[str, Registered[ToolDefinition]] = field(default_factory=dict)
    commands: dict[str, Registered[CommandDefinition]] = field(default_factory=_table)
    flags: dict[str, Registered[FlagDefinition]] = field(default_factory=dict)
    providers: dict[str, Registered[ProviderDefinition]] = field(default_factory=dict)
    apis: dict[str, Registered[ApiDefinition]] = field(default_factory=dict)
    logins: dict[str, Registered[LoginMethod]] = field(default_factory=dict)
    """Login methods by provider."""
    cli_commands: dict[str, Registered[CliCommandDefinition]] = field(default_factory=_table)
    credentials: dict[str, Registered[CredentialSource]] = field(default_factory=dict)
    """Credential sources by provider name."""
    shortcuts: dict[str, Registered[ShortcutDefinition]] = field(default_factory=_table)
    """Interactive-mode keys (pi's notation) of the plugins."""
    message_renderers: dict[str, Registered[RendererDefinition]] = field(default_factory=_table)
    entry_renderers: dict[str, Registered[RendererDefinition]] = field(default_factory=_table)
    tool_renderers: list[Registered[ToolRendererDefinition]] = field(default_factory=list)
    """Tool renderer resolvers, in plugin load order."""
    virtual_models: dict[str, Registered[VirtualModelDefinition]] = field(default_factory=dict)
    """Virtual models by ``provider/id``, in registration order."""
    markdown_transformers: list[Registered[MarkdownTransformerDefinition]] = field(default_factory=list)
    """One markdown transformer per plugin, in plugin load order."""
    mcp_servers: dict[str, Registered[McpServerRegistration]] = field(default_factory=dict)
    """MCP servers plugins registered, by name (``-`` and ``_`` alike), in registration order."""
    on_mcp_change: Callable[[], None] | None = None
    """Called after each MCP registration change once the session runs (``mcp_servers_change``)."""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    rank: Callable[[str], int] | None = None
    """The load-order position of a plugin (by name): when a plugin imported late
    registers a name a plugin later in load order has, the earlier plugin keeps it."""

    def by_plugin(self, plugin: str) -> dict[str, list[str]]:
        """Names each kind of registration of ``plugin`` (for ``pi extensions list``)."""
        out: dict[str, list[str]] = {}
        for kind, table in (
            ("tools", self.tools),
            ("commands", self.commands),
            ("flags", self.flags),
            ("providers", self.providers),
            ("virtual_models", self.virtual_models),
            ("apis", self.apis),
            ("logins", self.logins),
            ("cli_commands", self.cli_commands),
        ):
            out[kind] = [name for name, reg in table.items() if reg.plugin == plugin]
        return out

    def provider_registrations(self) -> list[tuple[Any, str]]:
        """What ``register_providers`` registered, as ``(value, source)`` pairs for
        :meth:`~pi_core.ai.ModelRegistry.use_registrations`: pi's own (``"builtin"``)
        first, then the plugins' (``"plugin"``) in load order, a registration a plugin
        shadowed included, so the plugin's changes apply on top of it."""
        builtin: list[tuple[Any, str]] = []
        plugins: list[tuple[Any, str]] = []
        for table in (self.apis, self.logins, self.credentials, self.providers):
            for registered in table.values():
                chain: list[Registered[Any]] = []
                entry: Registered[Any] | None = registered
                while entry is not None:
                    chain.append(entry)
                    entry = entry.shadows
                for item in reversed(chain):
                    if item.source == "builtin":
                        builtin.append((item.value, "builtin"))
                    else:
                        plugins.append((item.value, "plugin"))
        return builtin + plugins

    # ------------------------------------------------------------------ adding

    def _add(
        self, kind: Kind, table: dict[str, Registered[Any]], name: str, value: Any, plugin: str, source: str
    ) -> bool:
        existing = dict.get(table, name)  # the table as it is: not filled by this
        entry: Registered[Any] = Registered(value, plugin, source)
        if existing is None or existing.plugin == plugin:
            if existing is not None:
                entry.shadows = existing.shadows
            dict.__setitem__(table, name, entry)
            return True
        if existing.source == "builtin" and source != "builtin":
            entry.shadows = existing
            dict.__setitem__(table, name, entry)
            return True
        first, ignored = existing, entry
        if existing.source != "builtin" and self.rank is not None and self.rank(plugin) < self.rank(existing.plugin):
            entry.shadows = existing.shadows  # registered late, but first in load order
            dict.__setitem__(table, name, entry)
            first, ignored = entry, existing
        self.diagnostics.append(
            Diagnostic(
                "warning",
                f"{kind} {name!r} is already registered by plugin {first.plugin!r}; "
                f"this registration is ignored (the first plugin in load order keeps a name)",
                plugin=ignored.plugin,
                source=ignored.source,
            )
        )
        return first is entry

    def register_tool(self, value: Any, plugin: str, source: str) -> ToolDefinition:
        if isinstance(value, ToolDefinition):
            definition = value
        elif isinstance(value, dict):
            try:
                definition = ToolDefinition.model_validate(value)
            except ValidationError as exc:
                raise RegistrationError(f"invalid tool definition: {_short(exc)}") from exc
        elif callable(value):
            try:
                definition = tool(value)
            except (TypeError, ValidationError) as exc:
                raise RegistrationError(f"cannot make a tool of {value!r}: {exc}") from exc
        else:
            raise RegistrationError(
                f"register() for tools takes a ToolDefinition or an @tool function, got {type(value).__name__}"
            )
        self._add("tool", self.tools, definition.name, definition, plugin, source)
        return definition

    def register_command(
        self,
        name: Any,
        handler: Callable[..., Any] | None,
        plugin: str,
        source: str,
        **options: Any,
    ) -> CommandDefinition:
        try:
            if isinstance(name, CommandDefinition):
                definition = name
            elif isinstance(name, dict):
                definition = CommandDefinition.model_validate(name)
            else:
                if handler is None:
                    raise RegistrationError(f"command {name!r} needs a handler")
                definition = CommandDefinition(name=name, handler=handler, **options)
        except ValidationError as exc:
            raise RegistrationError(f"invalid command: {_short(exc)}") from exc
        self._add("command", self.commands, definition.name, definition, plugin, source)
        return definition

    def register_shortcut(
        self, key: Any, handler: Callable[..., Any] | None, plugin: str, source: str, **options: Any
    ) -> ShortcutDefinition:
        try:
            if isinstance(key, ShortcutDefinition):
                definition = key
            else:
                if handler is None or not callable(handler):
                    raise RegistrationError(f"shortcut {key!r} needs a handler")
                definition = ShortcutDefinition(key=key, handler=handler, **options)
        except ValidationError as exc:
            raise RegistrationError(f"invalid shortcut: {_short(exc)}") from exc
        self._add("shortcut", self.shortcuts, definition.key, definition, plugin, source)
        return definition

    def register_renderer(
        self, kind: Literal["message", "entry"], custom_type: Any, render: Any, plugin: str, source: str
    ) -> RendererDefinition:
        if not isinstance(custom_type, str) or not custom_type:
            raise RegistrationError(f"{kind} renderer needs a custom_type (a non-empty string), got {custom_type!r}")
        if not callable(render):
            raise RegistrationError(f"{kind} renderer of {custom_type!r} must be callable")
        definition = RendererDefinition(kind=kind, custom_type=custom_type, render=render)
        table = self.message_renderers if kind == "message" else self.entry_renderers
        self._add(
            "message renderer" if kind == "message" else "entry renderer",
            table,
            custom_type,
            definition,
            plugin,
            source,
        )
        return definition

    def register_tool_renderer(self, resolve: Any, plugin: str, source: str) -> ToolRendererDefinition:
        if not callable(resolve):
            raise RegistrationError(
                f"tool renderer must be a callable resolve(tool_name, next), got {type(resolve).__name__}"
            )
        definition = ToolRendererDefinition(resolve=resolve)
        self.tool_renderers.append(Registered(definition, plugin, source))
        return definition

    def register_markdown_transformer(
        self, transform: Any, plugin: str, source: str, *, message_types: Any = None
    ) -> MarkdownTransformerDefinition:
        """The plugin's one transformer: registering again replaces it, in its place."""
        if not callable(transform):
            raise RegistrationError(
                f"markdown transformer must be a callable transform(markdown, context), got {type(transform).__name__}"
            )
        fields: dict[str, Any] = {"transform": transform}
        if message_types is not None:
            fields["message_types"] = [message_types] if isinstance(message_types, str) else message_types
        try:
            definition = MarkdownTransformerDefinition(**fields)
        except ValidationError as exc:
            raise RegistrationError(f"invalid markdown transformer: {_short(exc)}") from exc
        entry = Registered(definition, plugin, source)
        for index, registered in enumerate(self.markdown_transformers):
            if registered.plugin == plugin:
                self.markdown_transformers[index] = entry
                break
        else:
            self.markdown_transformers.append(entry)
        return definition

    def register_mcp_server(self, name: Any, config: Any, plugin: str, source: str) -> McpServerRegistration:
        """Add or replace ``plugin``'s server ``name``; ``ValueError`` (for the plugin to
        catch) for an invalid name or config or a name another plugin holds."""
        try:
            registration = McpServerRegistration(name=name, config=config, plugin=plugin)
        except ValidationError as exc:
            problems = "; ".join(str(item.get("msg", "")).removeprefix("Value error, ") for item in exc.errors())
            raise ValueError(f'MCP server "{name}": {problems}') from None
        key = registration.name.replace("-", "_")
        existing = self.mcp_servers.get(key)
        if existing is not None and existing.plugin != plugin:
            raise ValueError(f'MCP server "{registration.name}" is already registered by plugin "{existing.plugin}"')
        self.mcp_servers[key] = Registered(registration, plugin, source)
        if self.on_mcp_change is not None:
            self.on_mcp_change()
        return registration

    def unregister_mcp_server(self, name: str, plugin: str) -> bool:
        """Remove ``plugin``'s server ``name``; ``False`` when it has none of that name."""
        key = str(name).replace("-", "_")
        existing = self.mcp_servers.get(key)
        if existing is None:
            return False
        if existing.plugin != plugin:
            raise ValueError(f'MCP server "{name}" is registered by plugin "{existing.plugin}", not "{plugin}"')
        del self.mcp_servers[key]
        if self.on_mcp_change is not None:
            self.on_mcp_change()
        return True

    def mcp_server_list(self) -> list[McpServerRegistration]:
        """Copies of the registered MCP servers, in registration order."""
        return [registered.value.model_copy(deep=True) for registered in self.mcp_servers.values()]

    def register_virtual_model(self, value: Any, plugin: str, source: str) -> VirtualModelDefinition:
        try:
            if isinstance(value, VirtualModelDefinition):
                definition = value
            elif isinstance(value, dict):
                definition = VirtualModelDefinition.model_validate(value)
            else:
                raise RegistrationError(
                    "register() for virtual models takes a VirtualModelDefinition or a dict, "
                    f"got {type(value).__name__}"
                )
        except ValidationError as exc:
            raise RegistrationError(f"invalid virtual model: {_short(exc)}") from exc
        if not callable(definition.route):
            raise RegistrationError(f"virtual model {definition.ref!r}: route must be callable")
        self._add("virtual model", self.virtual_models, definition.ref, definition, plugin, source)
        return definition

    def virtual_model_registrations(self) -> list[tuple[VirtualModelDefinition, str]]:
        """``(definition, plugin)`` of every virtual model, in registration order."""
        return [(registered.value, registered.plugin) for registered in self.virtual_models.values()]

    def register_flag(self, name: Any, plugin: str, source: str, **options: Any) -> FlagDefinition:
        try:
            if isinstance(name, FlagDefinition):
                definition = name
            elif isinstance(name, dict):
                definition = FlagDefinition.model_validate(name)
            else:
                definition = FlagDefinition(name=name, **options)
        except ValidationError as exc:
            raise RegistrationError(f"invalid flag: {_short(exc)}") from exc
        self._add("flag", self.flags, definition.name, definition, plugin, source)
        return definition

    def register_cli_command(
        self, name: Any, main: Callable[..., Any] | None, plugin: str, source: str, **options: Any
    ) -> CliCommandDefinition:
        try:
            if isinstance(name, CliCommandDefinition):
                definition = name
            else:
                if main is None:
                    raise RegistrationError(f"command {name!r} needs a main function")
                definition = CliCommandDefinition(name=name, main=main, **options)
        except ValidationError as exc:
            raise RegistrationError(f"invalid command line command: {_short(exc)}") from exc
        self._add("cli command", self.cli_commands, definition.name, definition, plugin, source)
        return definition

    def register_provider(
        self, value: Any, plugin: str, source: str
    ) -> ProviderDefinition | ApiDefinition | CredentialSource | LoginMethod:
        if isinstance(value, ApiDefinition):
            self._add("api", self.apis, value.name, value, plugin, source)
            return value
        if isinstance(value, LoginMethod):
            self._add("login method", self.logins, value.provider, value, plugin, source)
            return value
        if isinstance(value, CredentialSource):
            self._add("credential source", self.credentials, value.provider, value, plugin, source)
            return value
        try:
            if isinstance(value, ProviderDefinition):
                definition = value
            elif isinstance(value, dict):
                definition = ProviderDefinition.model_validate(value)
            else:
                raise RegistrationError(
                    "register() for providers takes a ProviderDefinition, an ApiDefinition, a CredentialSource, "
                    "a LoginMethod or a dict, "
                    f"got {type(value).__name__}"
                )
        except ValidationError as exc:
            raise RegistrationError(f"invalid provider: {_short(exc)}") from exc
        for model in definition.models:
            if not model.provider:
                model.provider = definition.name
            if not model.api and definition.api:
                model.api = definition.api
        self._add("provider", self.providers, definition.name, definition, plugin, source)
        return definition
