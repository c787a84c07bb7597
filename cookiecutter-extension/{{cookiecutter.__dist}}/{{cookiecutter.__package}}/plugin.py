"""The plugin class: a tool, a ``tool_call`` policy and a ``tool_result`` redactor.

pi creates one instance per session runtime (startup, ``/reload``, new / resume / fork
session), so state kept on ``self`` belongs to one session. Hooks may take any subset
of ``(event, ctx)`` and may be plain functions or coroutines.
"""

from __future__ import annotations

import re

from pi_hookspecs import (
    ExtensionContext,
    RegisterTool,
    TextContent,
    ToolCallEvent,
    ToolCallResult,
    ToolContext,
    ToolResultEvent,
    ToolResultPatch,
    hookimpl,
    tool,
)

from .settings import SETTINGS_KEY, Settings, SettingsError

PLUGIN_NAME = "{{ cookiecutter.__module }}"
REDACTED = "[redacted]"


class {{ cookiecutter.__class }}:
    """{{ cookiecutter.description }}"""

    def __init__(self) -> None:
        self._settings: Settings | None = None
        self._ignored: list[str] = []

    def settings(self, ctx: ExtensionContext) -> Settings:
        """The validated settings (read once per session runtime); raises :class:`SettingsError`.

        The policy keys come from the user's settings only (``ctx.get_settings("user")``):
        a trusted project's ``.pi/settings.json`` cannot loosen them."""
        if self._settings is None:
            self._settings, self._ignored = Settings.from_scopes(ctx.get_settings("user"), ctx.get_settings())
        return self._settings

    # ------------------------------------------------------------------ a tool

    @hookimpl
    def register_tools(self, register: RegisterTool) -> None:
        # @tool builds the JSON Schema and the argument validation from the signature
        # and the description from the docstring; a parameter named ctx gets the context.
        register(tool(self.{{ cookiecutter.__tool }}))

    def {{ cookiecutter.__tool }}(self, name: str, ctx: ToolContext) -> str:
        """Greet someone by name.

        Args:
            name: who to greet
        """
        return f"{self.settings(ctx).greeting}, {name}!"

    # ------------------------------------------------------------------ startup

    @hookimpl
    def session_start(self, ctx: ExtensionContext) -> None:
        # Invalid settings raise here: pi reports the error naming this plugin at startup.
        self.settings(ctx)
        if self._ignored:
            keys = ", ".join(f"{SETTINGS_KEY}.{key}" for key in self._ignored)
            ctx.ui.notify(f"{PLUGIN_NAME}: ignored {keys} of the project's .pi/settings.json: "
                          "policy settings count only in your user settings", "warning")

    # ------------------------------------------------------------------ a policy

    @hookimpl(trylast=True)  # run after the other plugins: judge the input as they left it
    def tool_call(self, event: ToolCallEvent, ctx: ExtensionContext) -> ToolCallResult | None:
        try:
            settings = self.settings(ctx)
        except SettingsError as exc:  # fail closed: never allow what could not be checked
            return ToolCallResult(block=True, reason=f"{PLUGIN_NAME}: {exc}")
        if event.tool_name == "bash":
            command = str(event.input.get("command", ""))
            for pattern in settings.blocked_commands:
                if re.search(pattern, command):
                    return ToolCallResult(block=True, reason=f"{PLUGIN_NAME}: the command matches {pattern!r}")
        return None

    # ------------------------------------------------------------------ a redactor

    @hookimpl(trylast=True)  # redact what reaches the model, after the other transforms
    def tool_result(self, event: ToolResultEvent, ctx: ExtensionContext) -> ToolResultPatch | None:
        patterns = self.settings(ctx).redact
        if not patterns:
            return None
        changed = False
        content = []
        for block in event.content:
            if isinstance(block, TextContent):
                text = block.text
                for pattern in patterns:
                    text = re.sub(pattern, REDACTED, text)
                if text != block.text:
                    changed = True
                    block = TextContent(text=text)
            content.append(block)
        # Replacing content drops structured_content, which may hold the secret too.
        return ToolResultPatch(content=content) if changed else None
