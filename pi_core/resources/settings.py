"""``settings.json``: user settings in the agent directory, project settings in ``.pi``.

Project settings override user settings key by key; nested objects are merged one
level deep; resource lists (``extensions``, ``skills``, ``prompts``, ``themes``,
``packages``) are combined, user entries first. Project settings only count once the
project is trusted (``sessionDir`` included: :func:`session_dir_setting`);
``defaultProjectTrust`` (and the other user-only keys) is read from the user file
alone. A file that is not valid JSON, or larger than :data:`MAX_SETTINGS_FILE_BYTES`
(looked at before it is read), is reported (file, line and column) and ignored; it is
never rewritten. Unknown keys are kept as they are (and
reported unless a plugin claims them).

Each file is checked against the key registry (:mod:`.settings_keys`) when it loads: a
value of the wrong type is recorded in :attr:`Settings.errors` (naming the file and the
key) and dropped, so its default applies; refused and user-only-in-a-project keys are
warnings there. :class:`Settings` holds the (checked) dictionaries and offers typed
accessors with the TypeScript pi's keys and defaults; an accessor still raises
:class:`SettingsError` for a value a caller put in the dictionaries itself, and
:meth:`Settings.validate` collects such errors.
"""

from __future__ import annotations

import copy
import fnmatch
import json
import math
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from pi_hookspecs import toolkit
from pi_hookspecs.record import dataclass

from .._paths import agent_dir as default_agent_dir
from .._paths import project_dir
from ._files import resolve_entry
from ._trust_file import peek_saved_trust

RESOURCE_LIST_KEYS = frozenset({"extensions", "skills", "prompts", "themes", "packages"})
USER_ONLY_KEYS = frozenset(
    {"defaultProjectTrust", "requiredExtensions", "httpProxy", "selfUpdateCommand", "cacheWarming"}
)

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
QueueMode = Literal["all", "one-at-a-time"]
DefaultProjectTrust = Literal["ask", "always", "never"]
ResourceKind = Literal["extensions", "skills", "prompts", "themes"]
SettingsScope = Literal["user", "project"]

THINKING_LEVELS: tuple[str, ...] = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
QUEUE_MODES: tuple[str, ...] = ("all", "one-at-a-time")
PROJECT_TRUST_DEFAULTS: tuple[str, ...] = ("ask", "always", "never")

_T = TypeVar("_T")
_MISSING: Any = object()


class SettingsError(toolkit.SettingsFileError):
    """A settings file that cannot be used. The message names the file and line (the
    contract's :class:`~pi_hookspecs.toolkit.SettingsFileError`, with a ``level``)."""

    def __init__(
        self,
        path: Path,
        message: str,
        line: int | None = None,
        column: int | None = None,
        *,
        level: Literal["error", "warning"] = "error",
    ):
        super().__init__(path, message, line, column)
        self.level = level


MAX_SETTINGS_FILE_BYTES = toolkit.MAX_SETTINGS_BYTES
"""A settings file larger than this (4 MiB) is refused from its size, never read."""


def read_settings_file(path: Path) -> dict[str, Any]:
    """The JSON object in ``path`` (a copy: the caller may change it); ``{}`` when the
    file does not exist. Read by the contract's reader (:func:`pi_hookspecs.toolkit.read_settings`),
    so pi and its plugins read a settings file alike and once per change: a file over
    :data:`MAX_SETTINGS_FILE_BYTES` raises :class:`SettingsError` without being read."""
    try:
        return copy.deepcopy(toolkit.read_settings(path))
    except toolkit.SettingsFileError as exc:
        raise SettingsError(path, exc.message, exc.line, exc.column) from None


def read_settings_for_update(path: Path, *keys: str) -> dict[str, Any]:
    """The JSON object in ``path`` for a command that rewrites it (``pi install``,
    ``pi remove``): raises :class:`SettingsError` when the file is broken or one of
    ``keys`` (top-level keys the command changes) holds a wrong value, so the command
    stops before it changes anything and never writes back less than it read."""
    from .settings_keys import BY_KEY

    data = read_settings_file(path)
    for key in keys:
        entry = BY_KEY.get(key)
        if key not in data or entry is None:
            continue
        value = data[key]
        # a resource list in pi's older object form is read (migrated), never rewritten
        if not entry.check(value) or (key in RESOURCE_LIST_KEYS and not isinstance(value, list)):
            raise SettingsError(path, f"{key} must be {entry.expected}, found {json.dumps(value)}")
    return data


def migrate_settings(data: dict[str, Any]) -> dict[str, Any]:
    """Rewrite (in memory, never on disk) keys older pi versions wrote:
    ``queueMode`` -> ``steeringMode``, the old ``skills`` object -> a path list,
    ``retry.maxDelayMs`` -> ``retry.provider.maxRetryDelayMs``."""
    if "queueMode" in data and "steeringMode" not in data and data["queueMode"] in QUEUE_MODES:
        data["steeringMode"] = data.pop("queueMode")
    skills = data.get("skills")
    if isinstance(skills, dict):
        if "enableSkillCommands" in skills and "enableSkillCommands" not in data:
            data["enableSkillCommands"] = skills["enableSkillCommands"]
        directories = skills.get("customDirectories")
        if isinstance(directories, list) and directories:
            data["skills"] = list(directories)
        else:
            del data["skills"]
    retry = data.get("retry")
    if (
        isinstance(retry, dict)
        and isinstance(retry.get("maxDelayMs"), int | float)
        and not isinstance(retry["maxDelayMs"], bool)
    ):
        max_delay = retry.pop("maxDelayMs")
        raw_provider = retry.get("provider")
        provider: dict[str, Any] = raw_provider if isinstance(raw_provider, dict) else {}
        if provider.get("maxRetryDelayMs") is None:
            retry["provider"] = {**provider, "maxRetryDelayMs": max_delay}
    return data


def merge_settings(user: dict[str, Any], project: dict[str, Any]) -> dict[str, Any]:
    """Project over user: one level of object merging, resource lists combined."""
    merged = copy.deepcopy(user)
    for key, value in project.items():
        if key in USER_ONLY_KEYS:
            continue
        current = merged.get(key)
        if key in RESOURCE_LIST_KEYS and isinstance(current, list) and isinstance(value, list):
            merged[key] = [*current, *value]
        elif isinstance(current, dict) and isinstance(value, dict):
            merged[key] = {**current, **copy.deepcopy(value)}
        else:
            merged[key] = copy.deepcopy(value)
    return merged


# --------------------------------------------------------------------------- typed groups


@dataclass(frozen=True)
class CompactionSettings:
    """``compaction.*``: when automatic compaction starts and what it keeps."""

    enabled: bool = True
    reserve_tokens: int = 16384
    keep_recent_tokens: int = 20000


@dataclass(frozen=True)
class BranchSummarySettings:
    """The ``branchSummary`` settings."""

    reserve_tokens: int = 16384
    skip_prompt: bool = False


@dataclass(frozen=True)
class ProviderRetrySettings:
    """``retry.provider.*``: retries done by the provider SDK itself."""

    timeout_ms: int | None = None
    max_retries: int = 0
    max_retry_delay_ms: int = 60000


@dataclass(frozen=True)
class RetrySettings:
    """``retry.*``: pi's own retries of transient failures (exponential backoff)."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_agent_delay_ms: int = 60000
    provider: ProviderRetrySettings = field(default_factory=ProviderRetrySettings)


@dataclass(frozen=True)
class ResourceEntries:
    """The entries of one resource list (``skills``, ``prompts`` …) of one settings file.

    ``paths`` are the plain entries and ``+path`` entries, resolved against ``base_dir``
    (the agent directory for user settings, ``.pi`` for project settings). ``-path``
    entries exclude exactly that path, ``!pattern`` entries exclude paths matching a
    glob; ``+path`` entries win over both.
    """

    scope: SettingsScope
    base_dir: Path
    paths: tuple[Path, ...] = ()
    excluded: frozenset[str] = frozenset()
    exclude_patterns: tuple[str, ...] = ()
    forced: frozenset[str] = frozenset()

    def excludes(self, path: Path) -> bool:
        """Whether ``path`` (a resource file) is excluded by ``-path`` / ``!pattern`` entries."""
        candidates = [str(path), str(path.parent)]
        if any(c in self.forced for c in candidates):
            return False
        if any(c in self.excluded for c in candidates):
            return True
        for pattern in self.exclude_patterns:
            for candidate in candidates:
                rel = os.path.relpath(candidate, self.base_dir).replace(os.sep, "/")
                if fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(candidate, pattern):
                    return True
        return False


def _resource_entries(scope: SettingsScope, base_dir: Path, raw: Any, file: Path | None) -> ResourceEntries:
    if raw is None:
        return ResourceEntries(scope, base_dir)
    if not isinstance(raw, list):
        raise SettingsError(file or base_dir, f"expected a list of paths, found {type(raw).__name__}")
    paths: list[Path] = []
    excluded: set[str] = set()
    patterns: list[str] = []
    forced: set[str] = set()
    for item in raw:
        if not isinstance(item, str) or not item.strip():
            continue
        entry = item.strip()
        if entry.startswith("!"):
            patterns.append(entry[1:])
        elif entry.startswith("-"):
            excluded.add(str(resolve_entry(entry[1:], base_dir)))
        elif entry.startswith("+"):
            path = resolve_entry(entry[1:], base_dir)
            forced.add(str(path))
            paths.append(path)
        else:
            paths.append(resolve_entry(entry, base_dir))
    return ResourceEntries(scope, base_dir, tuple(paths), frozenset(excluded), tuple(patterns), frozenset(forced))


# --------------------------------------------------------------------------- checkers


def _is_int(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value.is_integer())


def _non_negative_int(value: Any) -> int | None:
    return int(value) if _is_int(value) and value >= 0 else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _one_of(choices: Sequence[str]) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return value if isinstance(value, str) and value in choices else None

    return check


def _str_list(value: Any) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


_EXPECTED: dict[Callable[[Any], Any], str] = {
    _non_negative_int: "a non-negative integer",
    _bool: "true or false",
    _str: "a string",
    _str_list: "a list of strings",
}


# --------------------------------------------------------------------------- settings


@dataclass
class Settings:
    """The settings of one working directory."""

    user: dict[str, Any] = field(default_factory=dict)
    project: dict[str, Any] = field(default_factory=dict)
    user_path: Path | None = None
    project_path: Path | None = None
    project_trusted: bool = False
    errors: list[SettingsError] = field(default_factory=list)
    """Broken files and mistyped values (``level == "error"``; the value is dropped),
    refused keys and empty files (``level == "warning"``)."""
    unknown: list[tuple[Path, str]] = field(default_factory=list)
    """Top-level keys no one declares, with their file (see :func:`unknown_key_errors`)."""
    merged: dict[str, Any] = field(default_factory=dict)
    cwd: Path | None = None

    def get(self, key: str, default: Any = None) -> Any:
        return self.merged.get(key, default)

    def copy(self) -> dict[str, Any]:
        return copy.deepcopy(self.merged)

    # ------------------------------------------------------------------ lookup

    def _sources(self, key: str) -> list[tuple[dict[str, Any], Path | None]]:
        sources: list[tuple[dict[str, Any], Path | None]] = []
        if key not in USER_ONLY_KEYS:
            sources.append((self.project, self.project_path))
        sources.append((self.user, self.user_path))
        return sources

    def lookup(self, *keys: str) -> tuple[Any, Path | None]:
        """The effective value of a (nested) key and the file it comes from; the value
        is ``None`` and the file ``None`` when no file sets it. Mirrors the merge: project
        first (unless the key is user-only), then user."""
        for data, path in self._sources(keys[0]):
            node: Any = data
            for key in keys:
                if not isinstance(node, dict) or key not in node:
                    node = _MISSING
                    break
                node = node[key]
            if node is not _MISSING:
                return node, path
        return None, None

    def _typed(
        self, keys: Sequence[str], check: Callable[[Any], _T | None], default: _T, expected: str | None = None
    ) -> _T:
        value, path = self.lookup(*keys)
        if value is None:
            return default
        result = check(value)
        if result is None:
            what = expected or _EXPECTED.get(check, "a valid value")
            raise SettingsError(
                path or Path("settings.json"), f"{'.'.join(keys)} must be {what}, found {json.dumps(value)}"
            )
        return result

    # ------------------------------------------------------------------ model and thinking

    @property
    def default_provider(self) -> str | None:
        return self._typed(("defaultProvider",), _str, cast(str | None, None))

    @property
    def default_model(self) -> str | None:
        return self._typed(("defaultModel",), _str, cast(str | None, None))

    @property
    def default_thinking_level(self) -> ThinkingLevel:
        expected = "one of " + ", ".join(THINKING_LEVELS)
        return cast(ThinkingLevel, self._typed(("defaultThinkingLevel",), _one_of(THINKING_LEVELS), "medium", expected))

    @property
    def enabled_models(self) -> list[str] | None:
        """Model patterns for startup selection and cycling; ``None``: all models."""
        return self._typed(("enabledModels",), _str_list, cast(list[str] | None, None))

    def model_thinking_level(self, model: str | None) -> ThinkingLevel | None:
        """``modelThinkingLevels[model]`` (``"provider/modelId"``), else ``None``."""
        if model is None:
            return None
        levels = self._typed(
            ("modelThinkingLevels",),
            lambda v: v if isinstance(v, dict) else None,
            cast(dict[str, Any], {}),
            "an object",
        )
        level = levels.get(model)
        return cast(ThinkingLevel, level) if isinstance(level, str) and level in THINKING_LEVELS else None

    @property
    def thinking_budgets(self) -> dict[str, int] | None:
        """``thinkingBudgets``: token budgets by thinking level (``None``: built-in)."""
        value = self._typed(
            ("thinkingBudgets",),
            lambda v: v if isinstance(v, dict) else None,
            cast(dict[str, Any] | None, None),
            "an object",
        )
        if not value:
            return None
        return {key: int(v) for key, v in value.items() if key in ("minimal", "low", "medium", "high") and _is_int(v)}

    @property
    def http_proxy(self) -> str | None:
        """``httpProxy`` of the user settings (a project cannot set it)."""
        return self._typed(("httpProxy",), _str, cast(str | None, None)) or None

    @property
    def cache_warming(self) -> Literal["off", "streaming", "idle"]:
        """``cacheWarming`` of the user settings (a project cannot set it): keep the prompt
        cache warm during runs (``streaming``) and also between them (``idle``, default)."""
        value = self._typed(
            ("cacheWarming",), _one_of(("off", "streaming", "idle")), "idle", '"off", "streaming" or "idle"'
        )
        return cast(Literal["off", "streaming", "idle"], value)

    @property
    def hide_thinking_block(self) -> bool:
        return self._typed(("hideThinkingBlock",), _bool, False)

    @property
    def transport(self) -> str:
        choices = ("auto", "sse", "websocket", "websocket-cached")
        return self._typed(("transport",), _one_of(choices), "auto", "one of " + ", ".join(choices))

    # ------------------------------------------------------------------ interaction

    @property
    def steering_mode(self) -> QueueMode:
        return cast(
            QueueMode, self._typed(("steeringMode",), _one_of(QUEUE_MODES), "one-at-a-time", '"all" or "one-at-a-time"')
        )

    @property
    def follow_up_mode(self) -> QueueMode:
        return cast(
            QueueMode, self._typed(("followUpMode",), _one_of(QUEUE_MODES), "one-at-a-time", '"all" or "one-at-a-time"')
        )

    @property
    def default_project_trust(self) -> DefaultProjectTrust:
        """``ask`` / ``always`` / ``never``; read from the user settings only."""
        expected = '"ask", "always" or "never"'
        return cast(
            DefaultProjectTrust, self._typed(("defaultProjectTrust",), _one_of(PROJECT_TRUST_DEFAULTS), "ask", expected)
        )

    # ------------------------------------------------------------------ compaction and retries

    def compaction_settings(self, model: str | None = None) -> CompactionSettings:
        """The compaction settings; ``model`` (``"provider/modelId"``) applies the matching
        ``compaction.modelOverrides`` entry. Each token value falls back on its own from
        the model override to the ordinary setting to the default. Override entries of
        the user and project files are merged field by field (project first)."""
        enabled = self._typed(("compaction", "enabled"), _bool, True)
        reserve = self._typed(("compaction", "reserveTokens"), _non_negative_int, 16384)
        keep = self._typed(("compaction", "keepRecentTokens"), _non_negative_int, 20000)
        if model is not None:
            for key, attr in (("reserveTokens", "reserve"), ("keepRecentTokens", "keep")):
                value, path = self._model_override(model, key)
                if value is _MISSING:
                    continue
                checked = _non_negative_int(value)
                if checked is None:
                    raise SettingsError(
                        path or Path("settings.json"),
                        f'compaction.modelOverrides["{model}"].{key} must be a non-negative integer, '
                        f"found {json.dumps(value)}",
                    )
                if attr == "reserve":
                    reserve = checked
                else:
                    keep = checked
        return CompactionSettings(enabled=enabled, reserve_tokens=reserve, keep_recent_tokens=keep)

    def _model_override(self, model: str, key: str) -> tuple[Any, Path | None]:
        for data, path in self._sources("compaction"):
            compaction = data.get("compaction")
            overrides = compaction.get("modelOverrides") if isinstance(compaction, dict) else None
            if overrides is None:
                continue
            if not isinstance(overrides, dict):
                raise SettingsError(path or Path("settings.json"), "compaction.modelOverrides must be an object")
            entry = overrides.get(model)
            if entry is None:
                continue
            if not isinstance(entry, dict):
                raise SettingsError(
                    path or Path("settings.json"), f'compaction.modelOverrides["{model}"] must be an object'
                )
            if key in entry:
                return entry[key], path
        return _MISSING, None

    def branch_summary_settings(self) -> BranchSummarySettings:
        return BranchSummarySettings(
            reserve_tokens=self._typed(("branchSummary", "reserveTokens"), _non_negative_int, 16384),
            skip_prompt=self._typed(("branchSummary", "skipPrompt"), _bool, False),
        )

    def retry_settings(self) -> RetrySettings:
        provider = ProviderRetrySettings(
            timeout_ms=self._typed(("retry", "provider", "timeoutMs"), _non_negative_int, cast(int | None, None)),
            max_retries=self._typed(("retry", "provider", "maxRetries"), _non_negative_int, 0),
            max_retry_delay_ms=self._typed(("retry", "provider", "maxRetryDelayMs"), _non_negative_int, 60000),
        )
        return RetrySettings(
            enabled=self._typed(("retry", "enabled"), _bool, True),
            max_retries=self._typed(("retry", "maxRetries"), _non_negative_int, 3),
            base_delay_ms=self._typed(("retry", "baseDelayMs"), _non_negative_int, 2000),
            max_agent_delay_ms=self._typed(("retry", "maxAgentDelayMs"), _non_negative_int, 60000),
            provider=provider,
        )

    @property
    def http_idle_timeout_ms(self) -> int | None:
        """Idle timeout of HTTP requests; ``None`` when disabled (``0`` or ``"disabled"``)."""
        value = self._typed(
            ("httpIdleTimeoutMs",),
            lambda v: v if v == "disabled" else _non_negative_int(v),
            300000,
            'a non-negative integer or "disabled"',
        )
        return None if value in (0, "disabled") else int(value)

    @property
    def websocket_connect_timeout_ms(self) -> int | None:
        """How long opening a provider's WebSocket may take (Codex); ``None`` when
        disabled (``0`` or ``"disabled"``)."""
        value = self._typed(
            ("websocketConnectTimeoutMs",),
            lambda v: v if v == "disabled" else _non_negative_int(v),
            15000,
            'a non-negative integer or "disabled"',
        )
        return None if value in (0, "disabled") else int(value)

    @property
    def http_response_deadline_ms(self) -> int | None:
        """Longest time from sending a provider request to the end of its response,
        whatever arrives meanwhile; ``None`` when disabled (``0`` or ``"disabled"``)."""
        value = self._typed(
            ("httpResponseDeadlineMs",),
            lambda v: v if v == "disabled" else _non_negative_int(v),
            1800000,
            'a non-negative integer or "disabled"',
        )
        return None if value in (0, "disabled") else int(value)

    # ------------------------------------------------------------------ shell, images, sessions

    @property
    def shell_path(self) -> str | None:
        value = self._typed(("shellPath",), _str, cast(str | None, None))
        return os.path.expanduser(value) if value else None

    @property
    def shell_command_prefix(self) -> str | None:
        return self._typed(("shellCommandPrefix",), _str, cast(str | None, None))

    @property
    def block_images(self) -> bool:
        return self._typed(("images", "blockImages"), _bool, False)

    @property
    def auto_resize_images(self) -> bool:
        return self._typed(("images", "autoResize"), _bool, True)

    @property
    def session_dir(self) -> Path | None:
        """``sessionDir``, ``~`` expanded, relative to the working directory."""
        value = self._typed(("sessionDir",), _str, cast(str | None, None))
        return _resolve_session_dir(value, self.cwd)

    @property
    def enable_skill_commands(self) -> bool:
        return self._typed(("enableSkillCommands",), _bool, True)

    def default_tools_lists(self) -> list[list[str]]:
        """The ``defaultTools`` lists in the order they apply: the user's, then the
        trusted project's (blank entries dropped). Combining them is
        :mod:`.tool_selection`'s job."""
        layers: list[tuple[dict[str, Any], Path | None]] = [(self.user, self.user_path)]
        if self.project_trusted:
            layers.append((self.project, self.project_path))
        lists: list[list[str]] = []
        for data, path in layers:
            raw = data.get("defaultTools")
            if raw is None:
                continue
            if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
                raise SettingsError(
                    path or Path("settings.json"), f"defaultTools must be a list of tool names, found {json.dumps(raw)}"
                )
            lists.append([entry.strip() for entry in raw if entry.strip()])
        return lists

    # ------------------------------------------------------------------ resources

    def resource_entries(self, kind: ResourceKind) -> list[ResourceEntries]:
        """The ``kind`` list of the project file (when trusted) and of the user file,
        in that order (project paths take precedence). Paths resolve from ``.pi`` and
        from the agent directory respectively."""
        result: list[ResourceEntries] = []
        if self.project_trusted and self.project_path is not None:
            result.append(
                _resource_entries("project", self.project_path.parent, self.project.get(kind), self.project_path)
            )
        if self.user_path is not None:
            result.append(_resource_entries("user", self.user_path.parent, self.user.get(kind), self.user_path))
        return result

    def _paths(self, kind: ResourceKind) -> list[str]:
        for data, path in ((self.user, self.user_path), (self.project, self.project_path)):
            raw = data.get(kind)
            if raw is not None and not isinstance(raw, list):
                raise SettingsError(
                    path or Path("settings.json"), f"{kind} must be a list of paths, found {json.dumps(raw)}"
                )
        merged = self.merged.get(kind)
        return [item for item in merged if isinstance(item, str)] if isinstance(merged, list) else []

    @property
    def extension_paths(self) -> list[str]:
        return self._paths("extensions")

    @property
    def skill_paths(self) -> list[str]:
        return self._paths("skills")

    @property
    def prompt_paths(self) -> list[str]:
        return self._paths("prompts")

    @property
    def theme_paths(self) -> list[str]:
        return self._paths("themes")

    # ------------------------------------------------------------------ validation

    def validate(self) -> list[SettingsError]:
        """Every value of a known key that has the wrong type, as one error each."""
        checks: list[Callable[[], Any]] = [
            lambda: self.default_provider,
            lambda: self.default_model,
            lambda: self.default_thinking_level,
            lambda: self.enabled_models,
            lambda: self.hide_thinking_block,
            lambda: self.transport,
            lambda: self.steering_mode,
            lambda: self.follow_up_mode,
            lambda: self.default_project_trust,
            lambda: self.compaction_settings(),
            lambda: self.branch_summary_settings(),
            lambda: self.retry_settings(),
            lambda: self.http_idle_timeout_ms,
            lambda: self.http_response_deadline_ms,
            lambda: self.websocket_connect_timeout_ms,
            lambda: self.shell_path,
            lambda: self.shell_command_prefix,
            lambda: self.block_images,
            lambda: self.auto_resize_images,
            lambda: self.session_dir,
            lambda: self.enable_skill_commands,
            self.default_tools_lists,
            *[(lambda k=kind: self.resource_entries(k)) for kind in ("extensions", "skills", "prompts", "themes")],
        ]
        errors: list[SettingsError] = []
        for check in checks:
            try:
                check()
            except SettingsError as exc:
                errors.append(exc)
        return errors


def unknown_key_errors(settings: Settings, plugin_names: Iterable[str] = ()) -> list[SettingsError]:
    """A warning for each top-level key that neither pi 1.6.0's reference, this pi nor a
    loaded plugin (by its name: ``"sandbox"`` for pluggable-pi-sandbox's plugin) declares."""
    if not settings.unknown:
        return []  # the key registry is imported only to look a key up
    from .settings_keys import claimed_by

    names = list(plugin_names)
    return [
        SettingsError(path, f"unknown setting {key}", level="warning")
        for path, key in settings.unknown
        if not claimed_by(key, names)
    ]


def apply_http_proxy(settings: Settings, environ: dict[str, str] | None = None) -> None:
    """``httpProxy`` as ``HTTP_PROXY`` and ``HTTPS_PROXY`` of this process (the HTTP
    clients pi makes read them); proxy variables already in the environment win."""
    proxy = settings.http_proxy
    env = environ if environ is not None else os.environ
    if not proxy:
        return
    for name in ("HTTP_PROXY", "HTTPS_PROXY"):
        if not env.get(name) and not env.get(name.lower()):
            # both spellings: an empty lower-case variable would hide the upper-case one
            env[name] = env[name.lower()] = proxy


def _resolve_session_dir(value: str | None, cwd: Path | None) -> Path | None:
    if not value:
        return None
    path = Path(os.path.expanduser(value))
    if not path.is_absolute():
        path = (cwd or Path.cwd()) / path
    return Path(os.path.normpath(path))


def load_settings(
    cwd: str | Path,
    *,
    agent_dir: Path | None = None,
    project_trusted: bool = False,
) -> Settings:
    """Read user and (when trusted) project settings of ``cwd``."""
    adir = agent_dir if agent_dir is not None else default_agent_dir()
    user_path = adir / "settings.json"
    project_path = project_dir(cwd) / "settings.json"
    settings = Settings(user_path=user_path, project_path=project_path, project_trusted=project_trusted, cwd=Path(cwd))
    settings.user = _load_file(user_path, settings)
    if project_trusted:
        settings.project = _load_file(project_path, settings, project=True)
    settings.merged = merge_settings(settings.user, settings.project)
    return settings


def _load_file(path: Path, settings: Settings, *, project: bool = False) -> dict[str, Any]:
    """One settings file, migrated and checked against the key registry: broken files
    and mistyped values are recorded in ``settings.errors`` (mistyped values dropped),
    undeclared top-level keys in ``settings.unknown``; a project file setting a key of
    the user file only gets a warning (the value is never used)."""
    try:
        data = migrate_settings(read_settings_file(path))
    except SettingsError as exc:
        settings.errors.append(exc)
        return {}
    if not data:
        if _is_blank(path):
            settings.errors.append(SettingsError(path, "the file is empty; write {} or remove it", level="warning"))
        return data  # nothing to check: the key registry is not even imported
    from .settings_keys import check_settings_data

    issues, unknown = check_settings_data(data)
    settings.errors += [SettingsError(path, issue.message, level=issue.level) for issue in issues]
    if project:
        user_file = settings.user_path or "the user settings"
        settings.errors += [
            SettingsError(path, f"{key} can only be set in {user_file}; ignored here", level="warning")
            for key in data
            if key in USER_ONLY_KEYS
        ]
    settings.unknown += [(path, key) for key in unknown]
    return data


def _is_blank(path: Path) -> bool:
    try:
        if not path.is_file() or path.stat().st_size > MAX_SETTINGS_FILE_BYTES:
            return False
        return not path.read_bytes().strip()
    except OSError:
        return False


def session_dir_setting(cwd: str | Path, *, agent_dir: Path | None = None, approve: bool | None = None) -> Path | None:
    """``sessionDir`` as pi reads it *before* the session starts (to find the session).

    Unlike pi 1.6.0, the project file counts only when the project is already trusted
    at that point (:func:`trusted_before_start`: ``approve``, i.e. ``--approve`` /
    ``--no-approve``, else a saved decision, else ``defaultProjectTrust: always``): an
    untrusted project's settings never apply, ``sessionDir`` included, so its sessions
    are written in the agent folder, not where the project says. Unreadable files count
    as unset."""
    adir = agent_dir if agent_dir is not None else default_agent_dir()
    try:
        user = read_settings_file(adir / "settings.json")
    except SettingsError:
        user = {}
    project_file = project_dir(cwd) / "settings.json"
    if os.path.lexists(project_file) and trusted_before_start(
        cwd, approve=approve, agent_dir=adir, default_project_trust=user.get("defaultProjectTrust")
    ):
        try:
            value = read_settings_file(project_file).get("sessionDir")
        except SettingsError:
            value = None
        if isinstance(value, str) and value:
            return _resolve_session_dir(value, Path(cwd))
    value = user.get("sessionDir")
    return _resolve_session_dir(value, Path(cwd)) if isinstance(value, str) and value else None


def trusted_before_start(
    cwd: str | Path, *, approve: bool | None = None, agent_dir: Path | None = None, default_project_trust: Any = None
) -> bool:
    """Whether a project (one with trust-requiring files) is trusted before anything of
    it loads and before anyone is asked: ``approve`` (``--approve`` / ``--no-approve``),
    else the decision saved in ``trust.json``, else ``default_project_trust ==
    "always"`` (the user's ``defaultProjectTrust``). ``False`` while undecided: the
    plugins' ``project_trust`` hook and the user's answer come later
    (:func:`~pi_core.resources.trust.resolve_project_trust`). Never asks, writes or raises."""
    if approve is not None:
        return approve
    saved = peek_saved_trust(cwd, agent_dir if agent_dir is not None else default_agent_dir())
    if saved is not None:
        return saved
    return bool(default_project_trust == "always")


__all__ = [
    "MAX_SETTINGS_FILE_BYTES",
    "PROJECT_TRUST_DEFAULTS",
    "QUEUE_MODES",
    "RESOURCE_LIST_KEYS",
    "THINKING_LEVELS",
    "USER_ONLY_KEYS",
    "BranchSummarySettings",
    "CompactionSettings",
    "DefaultProjectTrust",
    "ProviderRetrySettings",
    "QueueMode",
    "ResourceEntries",
    "ResourceKind",
    "RetrySettings",
    "Settings",
    "SettingsError",
    "SettingsScope",
    "ThinkingLevel",
    "apply_http_proxy",
    "load_settings",
    "merge_settings",
    "migrate_settings",
    "read_settings_file",
    "read_settings_for_update",
    "session_dir_setting",
    "trusted_before_start",
    "unknown_key_errors",
]
