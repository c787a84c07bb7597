"""What plugins register: tools, commands, flags and providers.

The ``register`` callables handed to the registration hooks validate what they get,
record the plugin that registered it, and resolve conflicts:

* a plugin registering a name again replaces its own earlier registration;
* a plugin tool replaces a built-in tool of the same name;
* otherwise the first plugin (in load order) keeps a name and later ones are reported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeVar

from pydantic import ValidationError

from pi_hookspecs import (
    ApiDefinition,
    CliCommandDefinition,
    CommandDefinition,
    CredentialSource,
    FlagDefinition,
    LoginMethod,
    ProviderDefinition,
    RendererDefinition,
    ShortcutDefinition,
    ToolDefinition,
    ToolRendererDefinition,
    tool,
)

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
]


@dataclass(slots=True)
class Registered(Generic[T]):
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
    tools: dict[str, Registered[ToolDefinition]] = field(default_factory=dict)
    commands: dict[str, Registered[CommandDefinition]] = field(default_factory=dict)
    flags: dict[str, Registered[FlagDefinition]] = field(default_factory=dict)
    providers: dict[str, Registered[ProviderDefinition]] = field(default_factory=dict)
    apis: dict[str, Registered[ApiDefinition]] = field(default_factory=dict)
    logins: dict[str, Registered[LoginMethod]] = field(default_factory=dict)
    """Login methods by provider."""
    cli_commands: dict[str, Registered[CliCommandDefinition]] = field(default_factory=dict)
    credentials: dict[str, Registered[CredentialSource]] = field(default_factory=dict)
    """Credential sources by provider name."""
    shortcuts: dict[str, Registered[ShortcutDefinition]] = field(default_factory=dict)
    """Interactive-mode keys (pi's notation) of the plugins."""
    message_renderers: dict[str, Registered[RendererDefinition]] = field(default_factory=dict)
    entry_renderers: dict[str, Registered[RendererDefinition]] = field(default_factory=dict)
    tool_renderers: list[Registered[ToolRendererDefinition]] = field(default_factory=list)
    """Tool renderer resolvers, in plugin load order."""
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def by_plugin(self, plugin: str) -> dict[str, list[str]]:
        """Names each kind of registration of ``plugin`` (for ``pi extensions list``)."""
        out: dict[str, list[str]] = {}
        for kind, table in (
            ("tools", self.tools),
            ("commands", self.commands),
            ("flags", self.flags),
            ("providers", self.providers),
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
        existing = table.get(name)
        entry: Registered[Any] = Registered(value, plugin, source)
        if existing is None or existing.plugin == plugin:
            if existing is not None:
                entry.shadows = existing.shadows
            table[name] = entry
            return True
        if existing.source == "builtin" and source != "builtin":
            entry.shadows = existing
            table[name] = entry
            return True
        self.diagnostics.append(
            Diagnostic(
                "warning",
                f"{kind} {name!r} is already registered by plugin {existing.plugin!r}; "
                f"this registration is ignored (the first plugin in load order keeps a name)",
                plugin=plugin,
                source=source,
            )
        )
        return False

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
