"""``/settings`` and ``/scoped-models``: editors of the settings files.

Each change is written at once to the chosen file: the user's
``<agent dir>/settings.json`` or the project's ``.pi/settings.json`` (Tab switches;
project settings only for a trusted project; user-only keys stay in the user file).
The session's settings are re-read in place, so the change applies now where it can.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pi_hookspecs import THINKING_LEVELS

from ..._fs import atomic_write
from ..._paths import agent_dir, project_dir
from ...resources.settings import USER_ONLY_KEYS, Settings, SettingsError, load_settings, read_settings_file
from .base import CommandHost
from .dialogs import Option
from .model_refresh import refresh_catalogues, refresh_note, refreshes

Scope = Literal["user", "project"]
Kind = Literal["bool", "choice", "text", "int"]


@dataclass(frozen=True)
class SettingSpec:
    key: str
    """Dotted for nested keys (``compaction.enabled``)."""
    kind: Kind
    default: Any
    description: str
    choices: tuple[Any, ...] = ()


SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec("theme", "choice", "system", "Colour theme of the terminal (/settings lists the themes found)"),
    SettingSpec("defaultThinkingLevel", "choice", "medium", "Thinking level at startup", tuple(THINKING_LEVELS)),
    SettingSpec("hideThinkingBlock", "bool", False, "Hide thinking blocks in the transcript (Ctrl+T toggles)"),
    SettingSpec(
        "quietStartup",
        "choice",
        False,
        "Startup header: false shows all, header only the header, true nothing",
        (False, "header", True),
    ),
    SettingSpec(
        "steeringMode",
        "choice",
        "one-at-a-time",
        "How queued steering messages are delivered",
        ("one-at-a-time", "all"),
    ),
    SettingSpec(
        "followUpMode",
        "choice",
        "one-at-a-time",
        "How queued follow-up messages are delivered",
        ("one-at-a-time", "all"),
    ),
    SettingSpec("doubleEscapeAction", "choice", "tree", "Double Esc on an empty input line", ("tree", "fork", "none")),
    SettingSpec(
        "treeFilterMode",
        "choice",
        "default",
        "Initial filter of /tree",
        ("default", "no-tools", "user-only", "labeled-only", "all"),
    ),
    SettingSpec("externalEditor", "text", "", "Command Ctrl+G opens (default: $VISUAL, $EDITOR)"),
    SettingSpec("fullscreenCopyOnSelect", "bool", True, "Fullscreen: copy text selected with the mouse"),
    SettingSpec(
        "fullscreenWheelScrollLines",
        "choice",
        "auto",
        "Fullscreen: lines a mouse-wheel notch scrolls",
        ("auto", 1, 2, 3, 5, 10),
    ),
    SettingSpec("markdown.codeBlockIndent", "text", "  ", "Prefix of rendered code block lines"),
    SettingSpec("autocompleteMaxVisible", "int", 5, "Visible completion entries (3 to 20)"),
    SettingSpec("showCacheMissNotices", "bool", False, "Notices about prompt cache misses"),
    SettingSpec(
        "transport", "choice", "auto", "Preferred provider transport", ("auto", "sse", "websocket", "websocket-cached")
    ),
    SettingSpec("compaction.enabled", "bool", True, "Automatic compaction"),
    SettingSpec("compaction.reserveTokens", "int", 16384, "Free context tokens below which compaction starts"),
    SettingSpec("compaction.keepRecentTokens", "int", 20000, "Recent tokens kept without summarising"),
    SettingSpec("branchSummary.skipPrompt", "bool", False, "/tree: skip the summary question (no summary)"),
    SettingSpec("retry.enabled", "bool", True, "Retry transient failures"),
    SettingSpec("retry.maxRetries", "int", 3, "Maximum retry attempts"),
    SettingSpec("images.autoResize", "bool", True, "Resize images to at most 2000x2000 before sending"),
    SettingSpec("images.blockImages", "bool", False, "Never send images to models"),
    SettingSpec("enableSkillCommands", "bool", True, "Register skills as /skill:name commands"),
    SettingSpec(
        "defaultProjectTrust", "choice", "ask", "Fallback project trust (user file only)", ("ask", "always", "never")
    ),
    SettingSpec(
        "cacheWarming", "choice", "idle", "Keep prompt caches warm (user file only)", ("off", "streaming", "idle")
    ),
)


def settings_path(cwd: str, scope: Scope) -> Path:
    return project_dir(cwd) / "settings.json" if scope == "project" else agent_dir() / "settings.json"


def _get(data: dict[str, Any], key: str) -> Any:
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def write_setting(cwd: str, scope: Scope, key: str, value: Any) -> Path:
    """Set (``value`` not ``None``) or remove dotted ``key`` in the settings file of
    ``scope``; other keys and unknown content are kept. Raises :class:`SettingsError`
    for a file that cannot be read (it is left unchanged)."""
    path = settings_path(cwd, scope)
    data = read_settings_file(path) if path.exists() else {}
    parts = key.split(".")
    node = data
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    if value is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path


def refresh_settings(settings: Settings) -> None:
    """Re-read the files of ``settings`` into the same object (everyone holding it sees
    the change)."""
    if settings.cwd is None or settings.user_path is None:
        return
    fresh = load_settings(settings.cwd, agent_dir=settings.user_path.parent, project_trusted=settings.project_trusted)
    settings.user, settings.project, settings.merged, settings.errors = (
        fresh.user,
        fresh.project,
        fresh.merged,
        fresh.errors,
    )


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def theme_names(app: CommandHost) -> list[str]:
    from .theme import available_themes

    return sorted(available_themes(app.session.settings, app.session.cwd))


async def cmd_settings(app: CommandHost, args: str) -> None:
    session = app.session
    scope: Scope = "user"
    query, index = "", 0
    notes: list[str] = []
    while True:
        settings = session.settings
        source = settings.user if scope == "user" else settings.project
        options = []
        for spec in SETTINGS:
            mine = _get(source, spec.key)
            effective, _where = settings.lookup(*spec.key.split("."))
            shown = effective if effective is not None else spec.default
            here = "" if mine is None else f"  (set in the {scope} file)"
            options.append(Option(spec, f"{spec.key} = {_shown(shown)}", spec.description + here))
        file = settings_path(session.cwd, scope)
        trusted = settings.project_trusted
        picked = await app.dialogs.pick(
            f"Settings ({scope}: {file})",
            options,
            actions=[(("tab",), "scope", "Tab user/project file"), (("delete",), "unset", "Del remove from this file")],
            query=query,
            default=index,
            message="\n".join(notes),
        )
        notes = []
        if picked is None:
            return
        query, index = picked.query, picked.index
        if picked.action == "scope":
            if scope == "user" and not trusted:
                notes.append("This folder is not trusted: its project settings are not used (see /trust)")
            else:
                scope = "project" if scope == "user" else "user"
            continue
        chosen = picked.value
        if chosen is None:
            continue
        spec = chosen
        if scope == "project" and spec.key in USER_ONLY_KEYS:
            notes.append(f"{spec.key} can only be set in the user file")
            continue
        if picked.action == "unset":
            value: Any = None
        else:
            current, _ = settings.lookup(*spec.key.split("."))
            current = current if current is not None else spec.default
            value = await _ask_value(app, spec, current)
            if value is _CANCEL:
                continue
        try:
            path = await asyncio.to_thread(write_setting, session.cwd, scope, spec.key, value)
        except (SettingsError, OSError) as exc:
            notes.append(f"✖ {exc}")
            continue
        refresh_settings(settings)
        shown = "removed" if value is None else f"= {_shown(value)}"
        app.out.line(f"{spec.key} {shown} ({path})", "green")
        app.settings_changed(spec.key)


_CANCEL: Any = object()


async def _ask_value(app: CommandHost, spec: SettingSpec, current: Any) -> Any:
    if spec.kind == "bool":
        return not bool(current)
    if spec.kind == "choice":
        choices = list(spec.choices) if spec.key != "theme" else theme_names(app)
        if not choices:
            return _CANCEL
        default = choices.index(current) if current in choices else 0
        picked = await app.dialogs.choose(
            spec.key, [Option(c, _shown(c)) for c in choices], default=default, record=False
        )
        return _CANCEL if picked is None and None not in choices else picked
    answer = await app.dialogs.text(spec.key, default="" if current is None else str(current), record=False)
    if answer is None:
        return _CANCEL
    if spec.kind == "int":
        try:
            return int(answer.strip())
        except ValueError:
            app.out.line(f"✖ {spec.key} must be a whole number, not {answer!r}", "red")
            return _CANCEL
    return answer


# --------------------------------------------------------------------------- scoped models


async def cmd_scoped_models(app: CommandHost, args: str) -> None:
    """Choose the models Ctrl+P cycles through; saved as ``enabledModels``. As it opens,
    the dynamic catalogues are refreshed (as pi 1.6.0 does, and as ``/model`` does): the
    open list is replaced when they answer."""
    session = app.session
    models = session.models.available(session.model)
    refreshing = refreshes(session)
    if not models and not refreshing:
        app.out.line("✖ No model is available: configure a provider key first (/login)", "red")
        return
    chosen = {model.ref for model, _level in app.scoped_models}
    query, index = "", 0
    hint = "Enter toggles too; Esc keeps the choice for this session only."
    # one refresh for the whole command (the picker opens again after each key)
    refresh = asyncio.ensure_future(refresh_catalogues(session)) if refreshing else None
    note = "Refreshing model catalogs…" if refresh is not None else ""

    def options_of(listed: list[Any]) -> list[Option[str]]:
        return [Option(m.ref, ("[x] " if m.ref in chosen else "[ ] ") + m.ref, m.name) for m in listed]

    async def live(chooser: Any) -> None:
        nonlocal models, note
        if refresh is None or refresh.done():
            return
        note = refresh_note(*await asyncio.shield(refresh))
        models = session.models.available(session.model)
        chooser.update(options_of(models), message=f"{note} {hint}")

    try:
        while True:
            picked = await app.dialogs.pick(
                f"Models for Ctrl+P cycling ({len(chosen) or 'all'} enabled)",
                options_of(models),
                actions=app.keymap.picker_actions(
                    [
                        ("app.models.toggle", "toggle"),
                        ("app.models.enableAll", "all"),
                        ("app.models.clearAll", "clear"),
                        ("app.models.toggleProvider", "provider"),
                        ("app.models.save", "save"),
                    ]
                ),
                query=query,
                default=index,
                message=f"{note} {hint}".strip(),
                live=live,
            )
            if picked is None:
                break
            query, index = picked.query, picked.index
            if picked.action in ("toggle", "select") and picked.value is not None:
                chosen.symmetric_difference_update({picked.value})
            elif picked.action == "all":
                chosen = {m.ref for m in models}
            elif picked.action == "clear":
                chosen = set()
            elif picked.action == "provider" and picked.value is not None:
                provider = picked.value.split("/", 1)[0]
                group = {m.ref for m in models if m.ref.split("/", 1)[0] == provider}
                chosen = chosen - group if group <= chosen else chosen | group
            elif picked.action == "save":
                refs = [m.ref for m in models if m.ref in chosen]
                try:
                    path = await asyncio.to_thread(write_setting, session.cwd, "user", "enabledModels", refs or None)
                except (SettingsError, OSError) as exc:
                    app.out.line(f"✖ {exc}", "red")
                    return
                refresh_settings(session.settings)
                app.out.line(f"enabledModels saved to {path}: {', '.join(refs) or '(all models)'}", "green")
                break
    finally:
        if refresh is not None and not refresh.done():
            refresh.cancel()  # closing the picker stops waiting for the catalogues
    refs = [m.ref for m in models if m.ref in chosen]
    app.set_scoped_models(refs)
    app.out.line(f"Ctrl+P cycles {', '.join(refs) if refs else 'every available model'}", "dim")
