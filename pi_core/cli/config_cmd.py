"""``pi config``: choose which plugins, skills and prompt templates load.

As in pi 1.6.0 it opens a terminal UI over the resources pi finds and writes each
change at once to the settings of a scope: the user's ``~/.pi/agent/settings.json``
(default) or, with ``-l`` / ``--local`` (or Tab in the UI), the project's
``.pi/settings.json`` (only for a trusted project; ``--approve`` trusts it for this
command). A plugin is switched off by its name in ``disabledExtensions``; a skill or a
prompt template by a ``-<path>`` entry in ``skills`` / ``prompts`` (``+<path>`` switches
one back on against a ``!pattern``). Without a terminal, or with ``--list`` (this pi's
own option: ``-l`` is ``--local`` as in pi 1.6.0), it prints the same list.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import typer

from .._fs import atomic_write
from .._paths import agent_dir, project_dir
from ..resources.prompt_templates import load_prompt_templates
from ..resources.settings import ResourceKind, SettingsError, load_settings, read_settings_for_update
from ..resources.skills import load_skills
from ..resources.trust import TrustStore

if TYPE_CHECKING:
    from prompt_toolkit.formatted_text import StyleAndTextTuples
    from prompt_toolkit.key_binding import KeyPressEvent

Scope = Literal["user", "project"]
Kind = Literal["plugin", "skill", "prompt"]
_SETTING: dict[Kind, ResourceKind] = {"skill": "skills", "prompt": "prompts"}
_TITLES = {"plugin": "Plugins", "skill": "Skills", "prompt": "Prompt templates"}
SOURCE_LABELS = {
    "builtin": "built-in",
    "entrypoint": "installed",
    "user": "user file",
    "settings": "settings",
    "project": "project file",
    "cli": "-e",
    "sdk": "sdk",
}


@dataclass
class Item:
    kind: Kind
    name: str
    detail: str
    key: str
    """The plugin's name, or the resource file's absolute path."""
    enabled: bool


class ConfigError(Exception):
    pass


def settings_file(cwd: str, scope: Scope) -> Path:
    return project_dir(cwd) / "settings.json" if scope == "project" else agent_dir() / "settings.json"


def _read(path: Path) -> dict[str, Any]:
    try:  # the keys toggle() rewrites must hold what it expects, or nothing is written
        return read_settings_for_update(path, "disabledExtensions", "skills", "prompts")
    except SettingsError as error:
        raise ConfigError(str(error)) from None


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(data, indent=2) + "\n")


def collect(cwd: str, scope: Scope, trusted: bool) -> list[Item]:
    """Every plugin, skill and prompt template pi finds for ``cwd``, with whether the
    settings of ``scope`` let it load."""
    # the plugin host (about 0.1 s of imports) only when ``pi config`` runs: every
    # subcommand's module is imported to build the one typer app of ``pi``'s subcommands
    from ..extensions import LoadOptions, PluginHost

    data = _read(settings_file(cwd, scope))
    disabled = {str(n) for n in data.get("disabledExtensions") or [] if isinstance(n, str)}
    items: list[Item] = []
    host = PluginHost(LoadOptions(cwd=cwd, entry_points=True))
    # found, not imported: every plugin pi would load, whatever PI_EXTENSIONS says for a run
    sources = [(source.name, source) for source in host.phase_one_sources()]
    if trusted:
        sources += [(source.name, source) for source in host.project_sources()]
    seen: set[str] = set()
    for name, source in sources:
        if name in seen:
            continue
        seen.add(name)
        where = source.path or source.origin or ""
        detail = SOURCE_LABELS.get(source.kind, source.kind) + (
            f"  {where}" if where and source.kind != "builtin" else ""
        )
        items.append(Item("plugin", name, detail, name, name not in disabled))

    settings = load_settings(cwd, project_trusted=trusted)
    everything = load_settings(cwd, project_trusted=trusted)
    for part in (everything.user, everything.project):
        for key in ("skills", "prompts"):
            if isinstance(part.get(key), list):
                part[key] = [e for e in part[key] if not (isinstance(e, str) and e.strip().startswith(("-", "!")))]
    skills = load_skills(cwd, settings=everything, project_trusted=trusted).skills
    prompts = load_prompt_templates(cwd, settings=everything, project_trusted=trusted).templates
    groups: list[tuple[Kind, list[tuple[str, str]]]] = [
        ("skill", [(s.name, s.file_path) for s in skills]),
        ("prompt", [(p.name, p.file_path) for p in prompts]),
    ]
    for kind, resources in groups:
        scoped = {entries.scope: entries for entries in settings.resource_entries(_SETTING[kind])}
        entries = scoped.get(scope)
        for name, file_path in resources:
            path = Path(file_path)
            enabled = entries is None or not entries.excludes(path)
            items.append(Item(kind, name, str(path), str(path), enabled))
    return items


def toggle(cwd: str, scope: Scope, item: Item) -> None:
    """Switch ``item`` on or off in the settings of ``scope`` (written at once)."""
    path = settings_file(cwd, scope)
    data = _read(path)
    if item.kind == "plugin":
        names = [n for n in data.get("disabledExtensions") or [] if isinstance(n, str)]
        names = [n for n in names if n != item.key] if not item.enabled else [*names, item.key]
        if names:
            data["disabledExtensions"] = names
        else:
            data.pop("disabledExtensions", None)
    else:
        setting = _SETTING[item.kind]
        target = Path(item.key)
        keys = {str(target), str(target.parent)}
        base = path.parent
        entries = [e for e in data.get(setting) or [] if isinstance(e, str)]

        def refers(entry: str) -> bool:
            plain = entry.strip()[1:] if entry.strip()[:1] in ("-", "+") else None
            if plain is None:
                return False
            resolved = Path(plain).expanduser()
            resolved = resolved if resolved.is_absolute() else base / resolved
            return str(resolved) in keys

        entries = [e for e in entries if not refers(e)]
        if item.enabled:
            entries.append(f"-{target}")
        elif any(e.strip().startswith("!") for e in entries):
            entries.append(f"+{target}")
        if entries:
            data[setting] = entries
        else:
            data.pop(setting, None)
    _write(path, data)
    item.enabled = not item.enabled


def project_trusted(cwd: str, approve: bool | None) -> bool:
    if approve is not None:
        return approve
    try:
        return TrustStore().get(cwd) is True
    except Exception:
        return False


def render(items: list[Item], scope: Scope, path: Path) -> str:
    lines = [f"Settings: {path} ({'project' if scope == 'project' else 'user'})"]
    for kind in ("plugin", "skill", "prompt"):
        group = [i for i in items if i.kind == kind]
        lines.append(_TITLES[kind])
        if not group:
            lines.append("  (none found)")
        width = max((len(i.name) for i in group), default=0)
        for item in group:
            lines.append(f"  [{'x' if item.enabled else ' '}] {item.name:<{width}}  {item.detail}")
    return "\n".join(lines)


def config_command(
    local: bool = typer.Option(False, "--local", "-l", help="Edit the project's .pi/settings.json."),
    approve: bool = typer.Option(
        False, "--approve", "-a", help="Trust the project's files for this command (with -l)."
    ),
    no_approve: bool = typer.Option(False, "--no-approve", "-na", help="Ignore the project's files for this command."),
    as_list: bool = typer.Option(
        False, "--list", help="Print the list instead of opening the screen (the default without a terminal)."
    ),
) -> None:
    """Choose which plugins, skills and prompt templates load: a screen in a terminal
    (Space toggles, Tab switches between your settings and the project's), else a list."""
    cwd = os.getcwd()
    trusted = project_trusted(cwd, True if approve else False if no_approve else None)
    if local and not trusted:
        print("pi: the project is not trusted: use --approve to change its resource settings", file=sys.stderr)
        raise typer.Exit(1)
    scope: Scope = "project" if local else "user"
    try:
        items = collect(cwd, scope, trusted)
    except ConfigError as error:
        print(f"pi: {error}", file=sys.stderr)
        raise typer.Exit(1) from None
    if as_list or not (sys.stdin.isatty() and sys.stdout.isatty()):
        print(render(items, scope, settings_file(cwd, scope)))
        print("Run `pi config` in a terminal to change these.")
        return
    try:
        ConfigUI(cwd, scope, trusted, items).run()
    except ConfigError as error:
        print(f"pi: {error}", file=sys.stderr)
        raise typer.Exit(1) from None


class ConfigUI:
    """The list: ↑↓ move, Space toggles (written at once), Tab switches scope, Enter,
    Esc or q closes."""

    def __init__(self, cwd: str, scope: Scope, trusted: bool, items: list[Item]) -> None:
        self.cwd, self.scope, self.trusted, self.items = cwd, scope, trusted, items
        self.cursor = 0
        self.message = ""

    def _fragments(self) -> StyleAndTextTuples:
        path = settings_file(self.cwd, self.scope)
        out: StyleAndTextTuples = [
            ("bold", f"Resources · {'project' if self.scope == 'project' else 'user'} settings "),
            ("fg:ansibrightblack", str(path)),
            ("", "\n"),
        ]
        kind = None
        for index, item in enumerate(self.items):
            if item.kind != kind:
                kind = item.kind
                out += [("bold", _TITLES[kind]), ("", "\n")]
            marker = "❯ " if index == self.cursor else "  "
            style = "reverse" if index == self.cursor else ""
            out += [
                (style, f"{marker}[{'x' if item.enabled else ' '}] {item.name}"),
                ("fg:ansibrightblack", f"  {item.detail}"),
                ("", "\n"),
            ]
        if not self.items:
            out += [("", "  nothing found"), ("", "\n")]
        if self.message:
            out += [("fg:ansired", self.message), ("", "\n")]
        scope_hint = " · Tab switch scope" if self.trusted else ""
        out.append(("fg:ansibrightblack", f"↑↓ move · Space toggle{scope_hint} · Enter/Esc close"))
        return out

    def run(self) -> None:
        # prompt_toolkit (about 0.25 s of imports) only for the terminal UI, not for the
        # printed list nor the other subcommands, whose modules load with this one
        from prompt_toolkit import Application
        from prompt_toolkit.key_binding import KeyBindings
        from prompt_toolkit.layout import HSplit, Layout, Window
        from prompt_toolkit.layout.controls import FormattedTextControl

        bindings = KeyBindings()

        @bindings.add("up")
        def _up(event: KeyPressEvent) -> None:
            self.cursor = max(0, self.cursor - 1)

        @bindings.add("down")
        def _down(event: KeyPressEvent) -> None:
            self.cursor = min(max(0, len(self.items) - 1), self.cursor + 1)

        @bindings.add(" ")
        def _toggle(event: KeyPressEvent) -> None:
            if self.items:
                try:
                    toggle(self.cwd, self.scope, self.items[self.cursor])
                    self.message = ""
                except (ConfigError, OSError) as error:
                    self.message = str(error)

        @bindings.add("tab")
        def _scope(event: KeyPressEvent) -> None:
            if not self.trusted:
                self.message = "The project is not trusted: run pi config --local --approve to change its settings."
                return
            self.scope = "user" if self.scope == "project" else "project"
            try:
                self.items = collect(self.cwd, self.scope, self.trusted)
            except ConfigError as error:
                self.message = str(error)
            self.cursor = min(self.cursor, max(0, len(self.items) - 1))

        @bindings.add("enter")
        @bindings.add("escape", eager=True)
        @bindings.add("q")
        @bindings.add("c-c")
        def _close(event: KeyPressEvent) -> None:
            event.app.exit()

        app: Application[None] = Application(
            layout=Layout(HSplit([Window(FormattedTextControl(self._fragments, show_cursor=False))])),
            key_bindings=bindings,
            full_screen=False,
            erase_when_done=False,
        )
        app.run()
