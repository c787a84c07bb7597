"""The declared registry of ``settings.json`` keys: what each key may hold and who reads it.

Every key of pi 1.6.0's settings reference is listed here once, with how this pi
treats it (:data:`KEYS`):

* ``run`` - read by the runtime; ``where`` names the modules that read it and
  ``reads`` the expression they read it with (the registry test checks both);
* ``interactive`` - read by the interactive terminal UI (``pi_core/cli/tui``);
  ``pending`` marks the ones the terminal UI does not read yet;
* ``plugin`` - read by a plugin of this workspace (``where``);
* ``refused`` - makes no sense in this pi: setting it gets a one-line warning naming
  the file and the key, with ``reason``; values in ``inert`` ask for nothing this pi
  does not already do, so they pass without a warning;
* ``kept`` - pi 1.6.0's own bookkeeping (``lastChangelogVersion`` …) or an older
  spelling pi migrates: accepted without a word.

:func:`check_settings_data` validates one file's data against the registry when it
is loaded: a value of the wrong type is reported (file and key) and dropped, so the
default applies and no later reader trips over it; refused keys get their warning;
keys nobody declares are returned for the caller to report once plugins are known
(a plugin claims the top-level key named after it, e.g. ``"sandbox"``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

Use = Literal["run", "interactive", "plugin", "refused", "kept"]
Level = Literal["error", "warning"]

THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


# --------------------------------------------------------------------------- checks


def is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())


def _non_negative_int(value: Any) -> bool:
    return is_int(value) and value >= 0


def _bool(value: Any) -> bool:
    return isinstance(value, bool)


def _str(value: Any) -> bool:
    return isinstance(value, str)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _number(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _timeout(value: Any) -> bool:
    return value == "disabled" or _non_negative_int(value)


def _one_of(*choices: Any) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        # ``False`` must not match ``0`` (and ``True`` not ``1``): compare types too.
        return any(value == choice and type(value) is type(choice) for choice in choices)

    return check


def _bool_or(*choices: Any) -> Callable[[Any], bool]:
    other = _one_of(*choices)
    return lambda value: isinstance(value, bool) or other(value)


def _int_between(low: int, high: int) -> Callable[[Any], bool]:
    return lambda value: is_int(value) and low <= value <= high


def _thinking_levels_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) and v in THINKING_LEVELS for v in value.values())


def _thinking_budgets(value: Any) -> bool:
    return isinstance(value, dict) and all(
        key in ("minimal", "low", "medium", "high") and _non_negative_int(v) for key, v in value.items()
    )


def _model_overrides(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(entry, dict)
        and all(k in ("reserveTokens", "keepRecentTokens") and _non_negative_int(v) for k, v in entry.items())
        for entry in value.values()
    )


def _packages(value: Any) -> bool:
    return isinstance(value, list) and all(
        isinstance(item, str) or (isinstance(item, dict) and isinstance(item.get("source"), str)) for item in value
    )


def _skills(value: Any) -> bool:
    # a path list, or (before migration) pi's older {"customDirectories": [...]} object
    return _str_list(value) or isinstance(value, dict)


def _words(*choices: Any) -> str:
    import json

    shown = [json.dumps(choice) for choice in choices]
    return "one of " + ", ".join(shown) if len(shown) > 2 else " or ".join(shown)


# --------------------------------------------------------------------------- registry


@dataclass(frozen=True)
class SettingKey:
    """One key of ``settings.json`` (dotted for nested ones: ``retry.maxRetries``)."""

    key: str
    use: Use
    check: Callable[[Any], bool]
    expected: str
    where: tuple[str, ...] = ()
    """Files (relative to the repository) that read the key."""
    reads: str = ""
    """What those files read it with (an accessor or the key's name)."""
    reason: str = ""
    """Why a ``refused`` key does nothing here; a note for the others."""
    inert: tuple[Any, ...] = ()
    """Values of a refused key that ask for nothing more than what pi does anyway."""
    pending: bool = False
    """An ``interactive`` key the terminal UI does not read yet."""
    user_only: bool = False
    """Read from the user settings only (a project cannot set it)."""
    in_reference: bool = True
    """Listed in pi 1.6.0's settings reference (``False``: this pi's own or legacy)."""


_SESSION = "pi_core/runtime/session.py"
_TUI = "pi_core/cli/tui"


def _tui(key: str, check: Callable[[Any], bool], expected: str, reads: str = "") -> SettingKey:
    """An interactive-mode key; ``reads``: how ``pi_core/cli/tui`` reads it (empty: it
    does not yet, the key is ``pending``)."""
    return SettingKey(key, "interactive", check, expected, where=(_TUI,), reads=reads, pending=not reads)


def _refused(key: str, check: Callable[[Any], bool], expected: str, reason: str, *inert: Any, **kw: Any) -> SettingKey:
    return SettingKey(key, "refused", check, expected, reason=reason, inert=inert, **kw)


KEYS: tuple[SettingKey, ...] = (
    # ---- model and thinking
    SettingKey("defaultProvider", "run", _str, "a string", ("pi_core/runtime/model_control.py",), "default_provider"),
    SettingKey("defaultModel", "run", _str, "a string", ("pi_core/runtime/model_control.py",), "default_model"),
    SettingKey(
        "defaultThinkingLevel",
        "run",
        _one_of(*THINKING_LEVELS),
        _words(*THINKING_LEVELS),
        ("pi_core/runtime/model_control.py",),
        "default_thinking_level",
    ),
    SettingKey(
        "modelThinkingLevels",
        "run",
        _thinking_levels_map,
        "an object mapping provider/modelId to a thinking level",
        ("pi_core/runtime/model_control.py",),
        "model_thinking_level(",
    ),
    SettingKey(
        "thinkingBudgets",
        "run",
        _thinking_budgets,
        "an object with non-negative integers for minimal, low, medium and high",
        ("pi_core/runtime/agent_hooks.py",),
        "thinking_budgets",
    ),
    SettingKey(
        "enabledModels", "run", _str_list, "a list of model patterns", ("pi_core/cli/bootstrap.py",), "enabled_models"
    ),
    _tui("hideThinkingBlock", _bool, "true or false", ".hide_thinking_block"),
    _tui("showCacheMissNotices", _bool, "true or false"),
    SettingKey(
        "cacheWarming",
        "run",
        _one_of("off", "streaming", "idle"),
        _words("off", "streaming", "idle"),
        ("pi_core/runtime",),
        "cache_warming",
        reason="prompt-cache warming (issue 17 item 2)",
        user_only=True,
    ),
    # ---- interaction
    SettingKey(
        "steeringMode",
        "run",
        _one_of("all", "one-at-a-time"),
        _words("all", "one-at-a-time"),
        (_SESSION,),
        "steering_mode",
    ),
    SettingKey(
        "followUpMode",
        "run",
        _one_of("all", "one-at-a-time"),
        _words("all", "one-at-a-time"),
        (_SESSION,),
        "follow_up_mode",
    ),
    _tui("externalEditor", _str, "a string", 'get("externalEditor")'),
    _tui(
        "doubleEscapeAction",
        _one_of("tree", "fork", "none"),
        _words("tree", "fork", "none"),
        'get("doubleEscapeAction")',
    ),
    _tui(
        "treeFilterMode",
        _one_of("default", "no-tools", "user-only", "labeled-only", "all"),
        _words("default", "no-tools", "user-only", "labeled-only", "all"),
        'get("treeFilterMode")',
    ),
    SettingKey(
        "defaultProjectTrust",
        "run",
        _one_of("ask", "always", "never"),
        _words("ask", "always", "never"),
        ("pi_core/runtime/services.py",),
        "defaultProjectTrust",
        user_only=True,
    ),
    # ---- tools
    SettingKey(
        "defaultTools",
        "run",
        _str_list,
        "a list of tool names",
        ("pi_core/runtime/tool_binding.py",),
        "resolve_default_tools",
    ),
    SettingKey(
        "codemode.mode",
        "plugin",
        _one_of("on", "only"),
        _words("on", "only"),
        ("plugins/codemode/pi_codemode/description.py",),
        '"mode"',
    ),
    SettingKey(
        "codemode.inlineBudget",
        "plugin",
        _non_negative_int,
        "a non-negative integer",
        ("plugins/codemode/pi_codemode/description.py",),
        "inlineBudget",
    ),
    # ---- sessions
    SettingKey("sessionDir", "run", _str, "a string", ("pi_core/cli/bootstrap.py",), "session_dir_setting("),
    _refused(
        "sessionShareDestination",
        _one_of("auto", "gist", "radius"),
        _words("auto", "gist", "radius"),
        "/share makes a GitHub gist; this pi cannot share to Radius",
        "auto",
        "gist",
    ),
    # ---- compaction and branch summaries
    SettingKey("compaction.enabled", "run", _bool, "true or false", (_SESSION,), "compaction_settings("),
    SettingKey(
        "compaction.reserveTokens",
        "run",
        _non_negative_int,
        "a non-negative integer",
        (_SESSION,),
        "compaction_settings(",
    ),
    SettingKey(
        "compaction.keepRecentTokens",
        "run",
        _non_negative_int,
        "a non-negative integer",
        (_SESSION,),
        "compaction_settings(",
    ),
    SettingKey(
        "compaction.modelOverrides",
        "run",
        _model_overrides,
        "an object mapping provider/modelId to {reserveTokens, keepRecentTokens} (non-negative integers)",
        (_SESSION,),
        "compaction_settings(",
    ),
    SettingKey(
        "branchSummary.reserveTokens",
        "run",
        _non_negative_int,
        "a non-negative integer",
        (_SESSION,),
        "branch_summary_settings(",
    ),
    _tui("branchSummary.skipPrompt", _bool, "true or false", ".skip_prompt"),
    # ---- terminal and display
    _tui("theme", _str, "a string", 'get("theme")'),
    _tui("quietStartup", _bool_or("header"), 'true, false or "header"', 'get("quietStartup"'),
    _tui("tuiMode", _one_of("regular", "fullscreen"), _words("regular", "fullscreen"), 'get("tuiMode")'),
    _tui(
        "fullscreenExitOutput",
        _one_of("transcript", "resume-hint"),
        _words("transcript", "resume-hint"),
        'get("fullscreenExitOutput")',
    ),
    _tui(
        "fullscreenScrollbar",
        _one_of("auto", "always", "hidden"),
        _words("auto", "always", "hidden"),
        'get("fullscreenScrollbar")',
    ),
    _tui("fullscreenCopyOnSelect", _bool, "true or false", 'get("fullscreenCopyOnSelect")'),
    _tui(
        "fullscreenWheelScrollLines",
        lambda v: v == "auto" or _int_between(1, 100)(v),
        '"auto" or 1 to 100',
        'get("fullscreenWheelScrollLines")',
    ),
    _tui("editorPaddingX", _int_between(0, 3), "an integer from 0 to 3", 'get("editorPaddingX")'),
    _tui("outputPad", _one_of(0, 1), "0 or 1", 'get("outputPad")'),
    _tui("autocompleteMaxVisible", _int_between(3, 20), "an integer from 3 to 20", 'get("autocompleteMaxVisible")'),
    _tui("showHardwareCursor", _bool, "true or false"),
    _tui("terminal.showImages", _bool, "true or false", 'lookup("terminal", "showImages")'),
    _tui(
        "terminal.imageWidthCells",
        lambda v: is_int(v) and v > 0,
        "a positive integer",
        'lookup("terminal", "imageWidthCells")',
    ),
    _tui("terminal.clearOnShrink", _bool, "true or false"),
    _tui("terminal.showTerminalProgress", _bool, "true or false", 'lookup("terminal", "showTerminalProgress")'),
    _tui("terminal.hyperlinks", _bool_or("auto"), 'true, false or "auto"', 'lookup("terminal", "hyperlinks")'),
    _tui(
        "terminal.images",
        _one_of("kitty", "iterm2", "auto", False),
        '"kitty", "iterm2", "auto" or false',
        'lookup("terminal", "images")',
    ),
    _tui("terminal.trueColor", _bool_or("auto"), 'true, false or "auto"', 'lookup("terminal", "trueColor")'),
    SettingKey("images.autoResize", "run", _bool, "true or false", (_SESSION,), "auto_resize_images"),
    SettingKey("images.blockImages", "run", _bool, "true or false", (_SESSION,), "block_images"),
    _tui("markdown.codeBlockIndent", _str, "a string", 'get("codeBlockIndent")'),
    _tui("markdown.mermaid", _one_of("off", "final", "streaming"), _words("off", "final", "streaming")),
    # ---- network and retries
    SettingKey(
        "transport",
        "run",
        _one_of("auto", "sse", "websocket", "websocket-cached"),
        _words("auto", "sse", "websocket", "websocket-cached"),
        ("pi_core/runtime/agent_hooks.py",),
        "settings.transport",
    ),
    SettingKey(
        "httpProxy", "run", _str, "a string", ("pi_core/cli/bootstrap.py",), "apply_http_proxy(", user_only=True
    ),
    SettingKey(
        "httpIdleTimeoutMs",
        "run",
        _timeout,
        'a non-negative integer or "disabled"',
        ("pi_core/runtime/agent_hooks.py",),
        "http_idle_timeout_ms",
    ),
    SettingKey(
        "httpResponseDeadlineMs",
        "run",
        _timeout,
        'a non-negative integer or "disabled"',
        ("pi_core/runtime/agent_hooks.py",),
        "http_response_deadline_ms",
        in_reference=False,
    ),
    SettingKey(
        "websocketConnectTimeoutMs",
        "run",
        _timeout,
        'a non-negative integer or "disabled"',
        ("pi_core/runtime/agent_hooks.py",),
        "websocket_connect_timeout_ms",
    ),
    SettingKey("retry.enabled", "run", _bool, "true or false", (_SESSION,), "retry_settings("),
    SettingKey("retry.maxRetries", "run", _non_negative_int, "a non-negative integer", (_SESSION,), "retry_settings("),
    SettingKey("retry.baseDelayMs", "run", _non_negative_int, "a non-negative integer", (_SESSION,), "retry_settings("),
    SettingKey(
        "retry.maxAgentDelayMs", "run", _non_negative_int, "a non-negative integer", (_SESSION,), "retry_settings("
    ),
    SettingKey(
        "retry.provider.timeoutMs",
        "run",
        _non_negative_int,
        "a non-negative integer",
        ("pi_core/runtime/agent_hooks.py",),
        "retry_settings(",
    ),
    SettingKey(
        "retry.provider.maxRetries",
        "run",
        _non_negative_int,
        "a non-negative integer",
        ("pi_core/runtime/agent_hooks.py",),
        "retry_settings(",
    ),
    SettingKey(
        "retry.provider.maxRetryDelayMs",
        "run",
        _non_negative_int,
        "a non-negative integer",
        ("pi_core/runtime/agent_hooks.py",),
        "retry_settings(",
    ),
    # ---- shell
    SettingKey("shellPath", "run", _str, "a string", ("pi_core/runtime/bash.py", "pi_core/tools/bash.py"), "shellPath"),
    SettingKey(
        "shellCommandPrefix",
        "run",
        _str,
        "a string",
        ("pi_core/runtime/bash.py", "pi_core/tools/bash.py"),
        "shellCommandPrefix",
    ),
    _refused(
        "npmCommand",
        _str_list,
        "a list of strings",
        "pi packages are Python distributions installed with pip/uv, not npm packages",
    ),
    _refused(
        "selfUpdateCommand",
        _str_list,
        "a list of strings",
        "pi update --self upgrades pi with uv or pip in its own environment and runs no other command",
        user_only=True,
    ),
    # ---- resources
    SettingKey(
        "packages", "run", _packages, "a list of package sources", ("pi_core/runtime/services.py",), '"packages"'
    ),
    SettingKey("extensions", "run", _str_list, "a list of paths", ("pi_core/extensions/host.py",), '"extensions"'),
    SettingKey("skills", "run", _skills, "a list of paths", ("pi_core/resources/loader.py",), "skills"),
    SettingKey("prompts", "run", _str_list, "a list of paths", ("pi_core/resources/loader.py",), "prompts"),
    _tui("themes", _str_list, "a list of paths", "theme_paths"),
    SettingKey("enableSkillCommands", "run", _bool, "true or false", (_SESSION,), "enable_skill_commands"),
    # ---- updates, telemetry, warnings
    _refused("collapseChangelog", _bool, "true or false", "this pi shows no changelog after an update", False),
    # pi 1.6.0's default is true: neither value asks for anything, as nothing is reported
    _refused(
        "enableInstallTelemetry", _bool, "true or false", "this pi never reports installs or updates", False, True
    ),
    _refused("enableAnalytics", _bool, "true or false", "this pi collects no analytics", False),
    # pi 1.6.0's interactive mode warns once when Anthropic runs on a subscription login
    _tui("warnings.anthropicExtraUsage", _bool, "true or false"),
    # ---- this pi's own keys and older or bookkeeping keys pi 1.6.0 writes
    SettingKey(
        "disabledExtensions",
        "run",
        _str_list,
        "a list of plugin names",
        ("pi_core/extensions/host.py",),
        "disabledExtensions",
        in_reference=False,
    ),
    SettingKey(
        "requiredExtensions",
        "run",
        _str_list,
        "a list of plugin names",
        ("pi_core/extensions/host.py",),
        "requiredExtensions",
        user_only=True,
        in_reference=False,
    ),
    SettingKey(
        "hookTimeout",
        "run",
        lambda v: _number(v) and v >= 0,
        "a non-negative number of seconds",
        ("pi_core/extensions/guard.py",),
        'get("hookTimeout")',
        in_reference=False,
    ),
    SettingKey(
        "autoEnableCodemode",
        "plugin",
        _bool,
        "true or false",
        ("plugins/codemode/pi_codemode/description.py",),
        "autoEnableCodemode",
        in_reference=False,
    ),
    SettingKey("$schema", "kept", _str, "a string", reason="editor validation", in_reference=False),
    SettingKey("lastChangelogVersion", "kept", _str, "a string", reason="pi 1.6.0's bookkeeping", in_reference=False),
    SettingKey(
        "extensionChangelogVersions",
        "kept",
        lambda v: isinstance(v, dict),
        "an object",
        reason="pi 1.6.0's bookkeeping",
        in_reference=False,
    ),
    SettingKey("deviceId", "kept", _str, "a string", reason="pi 1.6.0's bookkeeping", in_reference=False),
    SettingKey("trackingId", "kept", _str, "a string", reason="pi 1.6.0's bookkeeping", in_reference=False),
    SettingKey(
        "queueMode",
        "kept",
        _one_of("all", "one-at-a-time"),
        _words("all", "one-at-a-time"),
        reason="older name of steeringMode (migrated)",
        in_reference=False,
    ),
    SettingKey(
        "retry.maxDelayMs",
        "kept",
        _non_negative_int,
        "a non-negative integer",
        reason="older name of retry.provider.maxRetryDelayMs (migrated)",
        in_reference=False,
    ),
)

BY_KEY: dict[str, SettingKey] = {entry.key: entry for entry in KEYS}

GROUPS: frozenset[str] = frozenset(
    prefix for entry in KEYS for prefix in (entry.key.rsplit(".", i)[0] for i in range(1, entry.key.count(".") + 1))
)
"""Keys whose value is an object of further keys (``retry``, ``retry.provider`` …)."""


@dataclass(frozen=True)
class SettingsIssue:
    """One problem with one key of one settings file."""

    level: Level
    key: str
    message: str


def _walk(data: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any], str, Any]]:
    for name, value in list(data.items()):
        dotted = f"{prefix}{name}"
        yield dotted, data, name, value


def check_settings_data(data: dict[str, Any]) -> tuple[list[SettingsIssue], list[str]]:
    """Validate one settings file's (migrated) data in place against :data:`KEYS`.

    Returns the issues (wrong types as errors, their value removed from ``data`` so the
    default applies; refused keys as warnings) and the undeclared top-level keys (for
    the caller to report unless a plugin claims them). Undeclared keys inside a
    declared group (``retry.maxRetry``) are reported here as warnings."""
    issues: list[SettingsIssue] = []
    unknown: list[str] = []

    def visit(node: dict[str, Any], prefix: str) -> None:
        for dotted, parent, name, value in _walk(node, prefix):
            entry = BY_KEY.get(dotted)
            if entry is not None:
                if not entry.check(value):
                    issues.append(
                        SettingsIssue("error", dotted, f"{dotted} must be {entry.expected}, found {_shown(value)}")
                    )
                    del parent[name]
                elif entry.use == "refused" and value not in entry.inert:
                    issues.append(
                        SettingsIssue(
                            "warning", dotted, f"{dotted} = {_shown(value)} is not supported by this pi: {entry.reason}"
                        )
                    )
                elif entry.pending:
                    issues.append(
                        SettingsIssue(
                            "warning", dotted, f"{dotted} is not read by this pi's terminal yet; it has no effect"
                        )
                    )
                continue
            if dotted in GROUPS:
                if not isinstance(value, dict):
                    issues.append(SettingsIssue("error", dotted, f"{dotted} must be an object, found {_shown(value)}"))
                    del parent[name]
                else:
                    visit(value, dotted + ".")
                continue
            if prefix:
                issues.append(SettingsIssue("warning", dotted, f"unknown setting {dotted}"))
            else:
                unknown.append(dotted)

    visit(data, "")
    return issues, unknown


def _shown(value: Any) -> str:
    import json

    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def claimed_by(key: str, plugin_names: Iterable[str]) -> bool:
    """Whether a plugin claims the top-level ``key``: its name, without a
    ``pluggable-pi-`` / ``pi-`` prefix (or their ``_`` spellings), spelled the same way
    (``"sandbox"`` for the plugin ``sandbox`` of pluggable-pi-sandbox)."""

    def norm(name: str) -> str:
        name = name.lower()
        for prefix in ("pluggable-pi-", "pluggable_pi_", "pi-", "pi_"):
            name = name.removeprefix(prefix)
        return name.replace("-", "").replace("_", "")

    wanted = norm(key)
    return any(norm(name) == wanted for name in plugin_names)


def reference_keys() -> list[str]:
    """The keys of pi 1.6.0's settings reference, in registry order."""
    return [entry.key for entry in KEYS if entry.in_reference]


__all__ = [
    "BY_KEY",
    "GROUPS",
    "KEYS",
    "SettingKey",
    "SettingsIssue",
    "check_settings_data",
    "claimed_by",
    "is_int",
    "reference_keys",
]
