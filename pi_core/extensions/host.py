"""The plugin host: one pluggy plugin manager per session runtime.

Loading is two-phase so that a project can never run code before it is trusted:

1. :meth:`PluginHost.load_phase_one` imports and registers every source except the
   project's own (built-in, installed, user files, user settings, ``-e``, SDK);
2. :meth:`PluginHost.decide_project_trust` asks those plugins (``project_trust``);
3. :meth:`PluginHost.load_phase_two` adds the project sources when trusted, builds the
   final plugin manager in load order (reusing the objects of phase one: nothing is
   imported or instantiated twice), publishes plugin hookspecs, reports misspelled
   hooks and runs the registration hooks (:meth:`PluginHost.run_registration`, also
   what the command line calls to collect flags, subcommands and providers without a
   session).

A plugin that implements one of pi's hooks as a pluggy wrapper (``wrapper=True`` /
``hookwrapper=True``) is refused when it registers, with a diagnostic naming it: pi's
runner calls implementations itself (async, composing results between handlers) and
cannot run wrappers. Wrappers of hooks that plugins publish work as in pluggy.

Installed plugins that a run may not need are imported when first needed: an entry
point indexed by an earlier start (:mod:`.lazy`) is registered as a stand-in with the
same hooks, and imported on its first hook call. ``PI_LAZY_PLUGINS=0`` (and
``PI_EXTENSIONS_STRICT=1``) import every plugin at start.

Failures never propagate: each becomes a :class:`Diagnostic` naming the plugin (unless
``PI_EXTENSIONS_STRICT=1``, which raises :class:`ExtensionLoadError` for plugin
development). A deferred plugin that fails to import when its hook is first called is
one line too, when that happens.
"""

from __future__ import annotations

import inspect
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from functools import partial
from pathlib import Path
from typing import Any, Literal

import pluggy

import pi_hookspecs
from pi_hookspecs import EVENTS, PROJECT_NAME, REGISTRATIONS
from pi_hookspecs import specs as core_specs
from pi_hookspecs.record import dataclass

from .._paths import agent_dir as default_agent_dir
from .._paths import project_dir
from ..resources.settings import Settings, SettingsError, load_settings, read_settings_file
from ._manager import PluginManager
from .context import (
    CommandContextImpl,
    ContextHost,
    ExtensionContextImpl,
    Liveness,
    ProjectTrustContextImpl,
)
from .contract import contract_mismatch
from .diagnostics import Diagnostic, ExtensionLoadError, describe_exception
from .guard import hook_timeout_setting
from .lazy import PluginIndex, hooks_of, index_path, is_static, same_hooks, stand_in_for
from .registry import ON_DEMAND, RegistrationError, Registry, Table
from .runner import WRAPPERS_REFUSED, EventRunner, PluginHooks
from .sources import (
    PluginLoadError,
    PluginSource,
    directory_sources,
    entry_point_sources,
    ignored_project_disables,
    import_file,
    object_source,
    resolve_plugin,
    spec_sources,
)

Status = Literal["loaded", "error", "disabled", "skipped"]
KNOWN_HOOKS = frozenset(EVENTS) | frozenset(REGISTRATIONS)
"""pi's own hooks: events and registration hooks (derived from the hookspecs)."""

LOADED_ON_DEMAND = frozenset({"register_commands", "register_cli_commands"})
"""The on-demand registrations that wait for their table's first read even for a plugin
imported at start: a run reads the commands only for a slash command and the subcommands
only for ``pi NAME``, and describing a command can cost a plugin work (the sandbox
summarises its policy). The terminal UI reads shortcuts and renderers as it starts."""


@dataclass
class PluginRecord:
    """One plugin source and what became of it (shown by ``pi extensions list``)."""

    name: str
    source: PluginSource
    status: Status = "loaded"
    error: str | None = None
    plugin: Any = None
    hooks: list[str] = field(default_factory=list)
    deferred: bool = False
    """Registered as a stand-in: imported on its first hook call (:mod:`.lazy`)."""
    realized: Any = field(default=None, repr=False)
    """The plugin object of a deferred plugin once imported."""
    indexed: list[dict[str, Any]] = field(default_factory=list, repr=False)
    """The hooks the index gave a deferred plugin."""

    @property
    def kind(self) -> str:
        return self.source.kind

    def to_json(self, registry: Registry | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "source": self.source.kind,
            "status": self.status,
            "origin": self.source.origin,
            "distribution": self.source.distribution,
            "version": self.source.version,
            "path": self.source.path,
            "hooks": self.hooks,
            "error": self.error,
        }
        data.update(
            registry.by_plugin(self.name)
            if registry is not None
            else {
                "tools": [],
                "commands": [],
                "flags": [],
                "providers": [],
                "virtual_models": [],
                "apis": [],
                "cli_commands": [],
            }
        )
        return data


@dataclass
class LoadOptions:
    """Where and how :class:`PluginHost` looks for plugins."""

    cwd: str = "."
    agent_dir: Path | None = None
    builtins: Sequence[Any] | None = None
    """Built-in plugin objects; ``None`` means pi's own (:mod:`pi_core.builtins`)."""
    cli_extensions: Sequence[str] = ()
    sdk_plugins: Sequence[Any] = ()
    no_extensions: bool = False
    entry_points: bool | Sequence[str] = True
    """Discover installed plugins: all of them, none (``False``), or only the entry
    points with these names (an embedding program, or a test, picking plugins)."""
    mode: str = "print"
    ui: Any = None
    flags: Mapping[str, Any] = field(default_factory=dict)
    fresh_files: bool = False
    """Re-execute plugin files even when unchanged (``/reload``)."""
    env: Mapping[str, str] | None = None


class PluginHost:
    def __init__(self, options: LoadOptions | None = None, **kwargs: Any) -> None:
        self.options = options or LoadOptions(**kwargs)
        env = self.options.env if self.options.env is not None else os.environ
        self.strict = env.get("PI_EXTENSIONS_STRICT") == "1"
        allow = env.get("PI_EXTENSIONS")
        self.allowed: set[str] | None = None if allow is None else {n.strip() for n in allow.split(",") if n.strip()}
        self.agent_dir = self.options.agent_dir or default_agent_dir()
        self.cwd = str(Path(self.options.cwd).resolve())
        self.records: list[PluginRecord] = []
        self.diagnostics: list[Diagnostic] = []
        self.registry = Registry(diagnostics=self.diagnostics)
        self.registry.rank = self._rank
        self.lazy = not self.strict and env.get("PI_LAZY_PLUGINS") != "0"
        self.index = PluginIndex(index_path(self.agent_dir))
        self._realizing = threading.RLock()
        self.liveness = Liveness()
        self.project_trusted = False
        # settings problems are reported once, by the resource loader (load_resources)
        self.settings: Settings = load_settings(self.cwd, agent_dir=self.agent_dir, project_trusted=False)
        self.context_host = ContextHost(
            cwd=self.cwd,
            mode=self.options.mode,
            ui=self.options.ui,
            settings=self.settings.merged,
            flags=dict(self.options.flags),
        )
        self.context_host.use_settings(self.settings)
        self.pm = self._new_pm()
        self.runner = EventRunner(self.pm, ctx=self.make_context())
        self.runner.timeout = hook_timeout_setting(self.settings.merged)
        self.hooks = PluginHooks(self.runner)
        """``ctx.hook`` of every context of this runtime."""
        self.context_host.hook = self.hooks
        self._phase = 0

    # ------------------------------------------------------------------ helpers

    def _new_pm(self) -> pluggy.PluginManager:
        pm = PluginManager(PROJECT_NAME)
        pm.add_hookspecs(core_specs)
        return pm

    def _diag(
        self,
        level: Literal["error", "warning", "info"],
        message: str,
        *,
        plugin: str | None,
        source: str | None,
        path: str | None = None,
    ) -> Diagnostic:
        diagnostic = Diagnostic(level, message, plugin=plugin, source=source, path=path)
        if level == "error" and self.strict:
            raise ExtensionLoadError(diagnostic)
        self.diagnostics.append(diagnostic)
        return diagnostic

    def make_context(self) -> ExtensionContextImpl:
        return ExtensionContextImpl(self.context_host, self.liveness)

    def make_command_context(self) -> CommandContextImpl:
        return CommandContextImpl(self.context_host, self.liveness)

    def bind(self, context_host: ContextHost) -> None:
        """Give the contexts a new host (the session runtime, once it exists)."""
        context_host.hook = self.hooks
        self.context_host = context_host
        self.runner.ctx = self.make_context()

    def invalidate(self, reason: str = "the session runtime was replaced") -> None:
        """Make every context of this runtime stale."""
        self.liveness.invalidate(reason)

    @property
    def loaded(self) -> list[PluginRecord]:
        return [r for r in self.records if r.status == "loaded"]

    # ------------------------------------------------------------------ sources

    def _builtin_sources(self) -> list[PluginSource]:
        builtins = self.options.builtins
        if builtins is None:
            from ..builtins import builtin_plugins

            builtins = builtin_plugins()
        sources = []
        for item in builtins:
            name, obj = item if isinstance(item, tuple) else (None, item)
            sources.append(object_source(obj, "builtin", name))
        return sources

    def phase_one_sources(self) -> list[PluginSource]:
        """The plugins that are not the project's own, in load order (built-ins, entry
        points, the user's folder and settings, then ``-e`` and SDK plugins): found,
        not imported. Problems finding them become the host's diagnostics."""
        diagnostics: list[Diagnostic] = []
        sources = self._builtin_sources()
        eps: list[PluginSource] = []
        if self.options.entry_points:
            try:
                eps = entry_point_sources(diagnostics)
                if not isinstance(self.options.entry_points, bool):
                    wanted = set(self.options.entry_points)
                    eps = [ep for ep in eps if ep.name in wanted]
            except Exception as exc:  # broken metadata of some distribution
                diagnostics.append(Diagnostic("error", f"reading entry points failed: {describe_exception(exc)}"))
        sources += eps
        sources += directory_sources(self.agent_dir / "extensions", "user", diagnostics)
        sources += spec_sources(
            _as_list(self.settings.user.get("extensions")),
            "settings",
            self.agent_dir,
            diagnostics,
            settings_scope="user",
        )
        self._ep_index = {ep.name: ep for ep in eps}
        if not self.options.entry_points and self.options.cli_extensions:
            # `-e NAME` still finds an installed plugin when discovery is off.
            self._ep_index = {ep.name: ep for ep in entry_point_sources([])}
        self._late_sources = spec_sources(
            self.options.cli_extensions, "cli", Path(self.cwd), diagnostics, entry_points=self._ep_index
        ) + [object_source(obj, "sdk") for obj in self.options.sdk_plugins]
        for diagnostic in diagnostics:
            self._diag(
                diagnostic.level,
                diagnostic.message,
                plugin=diagnostic.plugin,
                source=diagnostic.source,
                path=diagnostic.path,
            )
        return sources + self._late_sources

    def project_sources(self, diagnostics: list[Diagnostic] | None = None) -> list[PluginSource]:
        """The project's plugins: ``.pi/extensions`` and project settings ``extensions``.
        Only finding them; nothing is imported here."""
        diagnostics = diagnostics if diagnostics is not None else []
        pdir = project_dir(self.cwd)
        project_settings = self.settings.project
        if not self.project_trusted:
            try:
                project_settings = read_settings_file(pdir / "settings.json")
            except SettingsError:
                project_settings = {}
        sources = spec_sources(
            _as_list(project_settings.get("extensions")),
            "settings",
            pdir,
            diagnostics,
            entry_points=getattr(self, "_ep_index", None),
            settings_scope="project",
        )
        return sources + directory_sources(pdir / "extensions", "project", diagnostics)

    def _disabled_reason(self, source: PluginSource) -> str | None:
        if source.explicit:
            return None
        # each reason completes "disabled by ..."
        if self.options.no_extensions:
            return "--no-extensions"
        if self.allowed is not None and source.name not in self.allowed:
            return "PI_EXTENSIONS, which does not list it"
        disabled = set(_as_list(self.settings.merged.get("disabledExtensions")))
        if source.name in disabled and source.name not in self.required:
            return "the settings' disabledExtensions"
        return None

    @property
    def required(self) -> set[str]:
        """``requiredExtensions`` of the USER settings (a project cannot change it)."""
        return set(_as_list(self.settings.user.get("requiredExtensions")))

    def missing_required(self) -> list[str]:
        """Why each required plugin is not running (empty when all are): missing,
        disabled, or failed to load."""
        problems = []
        for name in sorted(self.required):
            record = next((r for r in self.records if r.name == name), None)
            if record is None:
                problems.append(f"{name!r} is not installed or not found")
            elif record.status == "disabled":
                problems.append(f"{name!r} is {record.error}")  # 'policy' is disabled by --no-extensions
            elif record.status != "loaded":
                problems.append(f"{name!r} {record.status}: {record.error}")
        return problems

    def _load_source(self, source: PluginSource) -> PluginRecord:
        record = PluginRecord(name=source.name, source=source)
        reason = self._disabled_reason(source)
        if reason:
            record.status = "disabled"
            record.error = f"disabled by {reason}"
            return record
        # a plugin made for another major version of the contract is not imported: one
        # error naming both versions, instead of an AttributeError somewhere inside it
        mismatch = contract_mismatch(source.distribution, source.version)
        if mismatch is not None:
            record.status, record.error = "error", mismatch
            self._diag("error", mismatch, plugin=record.name, source=source.kind, path=source.path)
            return record
        entry = None
        # a required plugin is imported at start: pi refuses to start without it
        indexed = self.lazy and source.kind == "entrypoint" and source.name not in self.required
        if indexed:
            entry = self.index.lookup(source)
            if entry is not None:
                stand = stand_in_for(record.name, entry, partial(self._forward, record), ON_DEMAND)
                if stand is not None:  # imported on its first hook call
                    record.deferred, record.indexed, record.plugin = True, entry["hooks"], stand
                    return record
        try:
            if source.path and (source.kind in ("user", "project", "settings", "cli")) and self.options.fresh_files:
                obj = import_file(Path(source.path), source.kind, fresh=True)
            else:
                obj = source.loader()
            record.plugin = resolve_plugin(obj, source.path or source.origin)
            if indexed and entry is None:  # a valid entry (a plugin needed at start) stays as it is
                self.index.store(source, obj, record.plugin)
        except PluginLoadError as exc:
            record.status, record.error = "error", str(exc)
        except (Exception, SystemExit) as exc:
            record.status = "error"
            record.error = f"import failed: {describe_exception(exc)}"
        if record.status == "error":
            self._diag("error", record.error or "", plugin=record.name, source=source.kind, path=source.path)
        return record

    # ------------------------------------------------------------------ phases

    def load_phase_one(self) -> PluginHost:
        """Load every source but the project's and register them (trust bootstrap)."""
        if self._phase >= 1:
            return self
        self._phase = 1
        self.records = [self._load_source(s) for s in self.phase_one_sources()]
        if self.lazy:
            self.index.save()
        self._register_all(self.pm)
        return self

    # ------------------------------------------------------------------ deferred plugins

    def plugin_of(self, record: PluginRecord) -> Any:
        """The plugin object of ``record``: for a deferred plugin, the plugin itself
        (imported now if it was not yet; ``None`` when that fails), not its stand-in."""
        if record.deferred:
            return record.realized if record.realized is not None else self._realize(record)
        return record.plugin

    def _rank(self, plugin: str) -> int:
        """The load-order position of plugin ``plugin``."""
        for position, record in enumerate(self.records):
            if record.name == plugin:
                return position
        return len(self.records)

    def _forward(self, record: PluginRecord, attr: str | None, hook: str | None = None) -> Any:
        """What a stand-in calls: attribute ``attr`` of the plugin, imported on the first
        call (``None`` when it cannot be imported; ``attr`` ``None``: only import it, for
        a call of ``hook``)."""
        if hook is None:
            hook = next((h["hook"] for h in record.indexed if h["attr"] == attr), None)
        plugin = record.realized if record.realized is not None else self._realize(record, hook)
        return getattr(plugin, attr, None) if plugin is not None and attr is not None else None

    def _realize(self, record: PluginRecord, hook: str | None = None) -> Any:
        """Import a deferred plugin (once); compare its hooks with the index."""
        with self._realizing:
            if record.realized is not None or record.status != "loaded":
                return record.realized
            source = record.source
            start = time.perf_counter()
            try:
                obj = source.loader()
                plugin = resolve_plugin(obj, source.path or source.origin)
            except PluginLoadError as exc:
                message = str(exc)
            except (Exception, SystemExit) as exc:
                message = f"import failed: {describe_exception(exc)}"
            else:
                record.realized = plugin
                self.runner.trace(
                    f"{record.name}: imported on its first hook call ({(time.perf_counter() - start) * 1000:.2f} ms)"
                )
                self._check_index(record, obj, plugin)
                return plugin
            record.status, record.error = "error", message
            if self.pm.is_registered(record.plugin):  # nothing more is dispatched to it
                self.pm.unregister(record.plugin)
                self.runner.invalidate()
            self._late_diagnostic("error", message, record, hook or "import")
            return None

    def _check_index(self, record: PluginRecord, loaded: Any, plugin: Any) -> None:
        """The hooks of a deferred plugin, once imported, against the index it was
        deferred by: a difference re-indexes it; hooks the stand-in lacks are reported
        and the plugin itself takes the stand-in's place from now on."""
        try:
            found = hooks_of(plugin)
        except Exception:  # not describable: the stand-in keeps forwarding what it has
            return
        if same_hooks(record.indexed, found) and is_static(loaded, plugin):
            # the entry holds: its files were checked when it was looked up, this start
            return
        self.index.store(record.source, loaded, plugin, found)
        self.index.save()
        missing = sorted({h["hook"] for h in found} - {h["hook"] for h in record.indexed})
        if not missing:
            return
        stand = record.plugin
        try:
            self.pm.unregister(stand)
            self.pm.register(plugin, name=record.name)
        except Exception as exc:  # the stand-in stays
            if not self.pm.is_registered(stand):
                self.pm.register(stand, name=record.name)
            detail = f"; registering them failed: {describe_exception(exc)}"
        else:
            record.plugin, detail = plugin, ""
            self.runner.invalidate()
        self._late_diagnostic(
            "warning",
            f"its hooks changed since pi indexed it: {', '.join(missing)} "
            f"not called before it was imported in this run (re-indexed){detail}",
            record,
        )

    def _late_diagnostic(
        self, level: Literal["error", "warning"], message: str, record: PluginRecord, hook: str = "import"
    ) -> None:
        """A problem of a deferred plugin found when it was imported: a diagnostic, and,
        once the session runs (its start-up diagnostics shown), one line now."""
        self.diagnostics.append(
            Diagnostic(level, message, plugin=record.name, source=record.kind, path=record.source.path)
        )
        if self._phase >= 2:
            self.runner.report(record.name, hook, message)

    def project_needs_trust(self) -> bool:
        """Whether the project has plugin sources that only load once trusted."""
        pdir = project_dir(self.cwd)
        if (pdir / "extensions").is_dir():
            return True
        try:
            return bool(read_settings_file(pdir / "settings.json").get("extensions"))
        except SettingsError:
            return True

    async def decide_project_trust(self) -> pi_hookspecs.ProjectTrustResult | None:
        """Fire ``project_trust`` at the phase-one plugins; the first yes/no wins."""
        self.load_phase_one()
        event = pi_hookspecs.ProjectTrustEvent(cwd=self.cwd)
        ctx = ProjectTrustContextImpl(self.context_host, self.liveness)
        result = await self.runner.emit("project_trust", event, ctx)
        # (an occasional model: Any to mypy, hence unused-ignore)
        return result  # type: ignore[no-any-return,unused-ignore]

    async def load_phase_two(self, *, project_trusted: bool) -> PluginHost:
        """Add the project's plugins when trusted, then finish loading."""
        self.load_phase_one()
        if self._phase >= 2:
            return self
        self._phase = 2
        self.project_trusted = project_trusted
        self.context_host.project_trusted = project_trusted
        diagnostics: list[Diagnostic] = []
        if project_trusted:
            self.settings = load_settings(self.cwd, agent_dir=self.agent_dir, project_trusted=True)
            self.context_host.use_settings(self.settings)
            self.runner.timeout = hook_timeout_setting(self.settings.merged)
        project = self.project_sources(diagnostics)
        for diagnostic in diagnostics:
            self._diag(
                diagnostic.level,
                diagnostic.message,
                plugin=diagnostic.plugin,
                source=diagnostic.source,
                path=diagnostic.path,
            )
        if project_trusted:
            project_records = [self._load_source(s) for s in project]
        else:
            project_records = [
                PluginRecord(name=s.name, source=s, status="skipped", error="skipped: the project is not trusted")
                for s in project
            ]
        late = len(self._late_sources)
        early = self.records[: len(self.records) - late] if late else self.records
        tail = self.records[len(self.records) - late :] if late else []
        self.records = early + project_records + tail
        if project_trusted:  # a project's disabledExtensions it cannot apply: one line each, not silence
            found = [(r.name, r.source, r.status == "loaded") for r in self.records]
            project_path = str(self.settings.project_path) if self.settings.project_path else None
            self.diagnostics += ignored_project_disables(self.settings.project, found, self.required, project_path)
        # The final manager, in load order, with the objects loaded above. Without a
        # project plugin it holds what phase one's does, in the same order: that one is
        # kept (registering every plugin again costs a few milliseconds of each start).
        if any(record.status == "loaded" for record in project_records):
            self.pm = self._new_pm()
            self.runner.attach(self.pm)
            self._register_all(self.pm)
        else:
            self.runner.invalidate()
        await self.run_registration("add_hookspecs")
        self._check_pending()
        for hook in REGISTRATIONS:  # in the order of the hookspecs: tools, commands, flags, providers, cli
            if hook != "add_hookspecs":
                await self.run_registration(hook, deferred=hook not in ON_DEMAND)
        for name, reg in self.registry.flags.items():
            self.context_host.flags.setdefault(name, reg.value.default)
        self.runner.invalidate()
        return self

    async def load(self, *, project_trusted: bool | None = None) -> PluginHost:
        """Both phases. Without an explicit decision, the ``project_trust`` hook decides
        (only when the project has plugins of its own); undecided means untrusted."""
        self.load_phase_one()
        if project_trusted is None:
            project_trusted = False
            if self.project_needs_trust():
                decision = await self.decide_project_trust()
                project_trusted = decision is not None and decision.trusted == "yes"
        return await self.load_phase_two(project_trusted=project_trusted)

    # ------------------------------------------------------------------ registration

    def _register_all(self, pm: pluggy.PluginManager) -> None:
        taken: set[str] = set()
        for record in self.records:
            if record.status != "loaded":
                continue
            name = record.name
            if name in taken:
                base, n = f"{record.name}@{record.kind}", 2
                name = base
                while name in taken:
                    name, n = f"{base}{n}", n + 1
                self._diag(
                    "warning",
                    f"another plugin is already named {record.name!r}; this one is registered as {name!r}",
                    plugin=record.name,
                    source=record.kind,
                    path=record.source.path,
                )
                record.name = name
            try:
                pm.register(record.plugin, name=name)
            except pluggy.PluginValidationError as exc:
                record.status = "error"
                record.error = f"invalid hook implementation: {exc}"
            except ValueError as exc:
                record.status = "error"
                other = pm.get_name(record.plugin) if pm.is_registered(record.plugin) else None
                record.error = f"already loaded as plugin {other!r}" if other else f"cannot register: {exc}"
            else:
                wrapped = self._wrapped_core_hooks(pm, record.plugin)
                if wrapped:
                    pm.unregister(record.plugin)
                    record.status = "error"
                    record.error = f"refused: implements {', '.join(wrapped)} as a wrapper; {WRAPPERS_REFUSED}"
            if record.status == "error":
                self._diag("error", record.error or "", plugin=record.name, source=record.kind, path=record.source.path)
                continue
            taken.add(name)
            record.hooks = sorted({caller.name for caller in pm.get_hookcallers(record.plugin) or []})

    @staticmethod
    def _wrapped_core_hooks(pm: pluggy.PluginManager, plugin: object) -> list[str]:
        """pi's hooks that ``plugin`` implements as a pluggy wrapper."""
        return sorted(
            caller.name
            for caller in pm.get_hookcallers(plugin) or []
            if caller.name in KNOWN_HOOKS
            and any(impl.plugin is plugin and (impl.wrapper or impl.hookwrapper) for impl in caller.get_hookimpls())
        )

    async def run_registration(self, hook: str, *, deferred: bool = True) -> list[Diagnostic]:
        """Call registration hook ``hook`` (``register_tools``, ``register_commands``,
        ``register_flags``, ``register_providers``, ``register_cli_commands`` or
        ``add_hookspecs``) of every loaded plugin, in load order, each with its own
        callback: what a plugin registers lands in :attr:`registry` under its name (a
        published hookspec in the plugin manager). An invalid registration, a conflict or
        an exception is a diagnostic naming the plugin; the other registrations stand.
        Returns the diagnostics added by this call.

        Loading (:meth:`load_phase_two`) runs every registration hook; the command line
        calls this after :meth:`load_phase_one` to read flags, subcommands or providers
        without starting a session. With ``deferred=False`` the plugins not imported yet
        are left out: their registrations are made when the hook's registry table is
        first read (:data:`~.registry.ON_DEMAND`)."""
        spec = REGISTRATIONS.get(hook)
        if spec is None:
            raise ValueError(f"{hook!r} is not a registration hook (one of {', '.join(REGISTRATIONS)})")
        before = len(self.diagnostics)
        caller = getattr(self.pm.hook, hook, None)
        impls = {impl.plugin_name: impl for impl in caller.get_hookimpls()} if caller is not None else {}
        later: list[PluginRecord] = []
        for record in self.loaded:
            impl = impls.get(record.name)
            if impl is None:
                continue
            if not deferred and hook in ON_DEMAND and self._can_wait(record, hook, impl.function):
                later.append(record)
                continue
            callback = self._registration_callback(hook, record)
            start = time.perf_counter()
            try:
                result = impl.function(**{name: callback for name in impl.argnames if name == spec.argument})
                if inspect.isawaitable(result):
                    await result
                self.runner.trace(f"{hook} <- {record.name}: done ({(time.perf_counter() - start) * 1000:.2f} ms)")
            except ExtensionLoadError:
                raise
            except Exception as exc:
                self.runner.trace(f"{hook} <- {record.name}: raised {describe_exception(exc)}")
                self._diag(
                    "error",
                    f"{hook} failed: {describe_exception(exc)}",
                    plugin=record.name,
                    source=record.kind,
                    path=record.source.path,
                )
        if later:
            table = getattr(self.registry, ON_DEMAND[hook])
            if isinstance(table, Table):
                table.defer(lambda: self._register_later(hook, later))
        return self.diagnostics[before:]

    def _can_wait(self, record: PluginRecord, hook: str, function: Any) -> bool:
        """Whether ``record``'s registration for an on-demand table can wait until the
        table is first read: a plugin not imported yet always; an imported one for the
        commands and subcommands (:data:`LOADED_ON_DEMAND`) when plugins load lazily
        (not with ``PI_LAZY_PLUGINS=0`` or in strict mode, whose registration errors
        are found at start) and its hook registers at once (an async one is awaited now)."""
        if record.deferred and record.realized is None:
            return True
        return hook in LOADED_ON_DEMAND and self.lazy and not inspect.iscoroutinefunction(function)

    def _register_later(self, hook: str, records: list[PluginRecord]) -> None:
        """Run registration hook ``hook`` of deferred plugins (importing them), when
        its table is first read; registrations go to the first plugin in load order."""
        spec = REGISTRATIONS[hook]
        caller = getattr(self.pm.hook, hook, None)
        impls = {impl.plugin_name: impl for impl in caller.get_hookimpls()} if caller is not None else {}
        for record in records:
            impl = impls.get(record.name)
            if impl is None or record.status != "loaded":
                continue
            callback = self._registration_callback(hook, record)
            try:
                result = impl.function(**{name: callback for name in impl.argnames if name == spec.argument})
                if inspect.isawaitable(result):
                    close = getattr(result, "close", None)
                    if close is not None:
                        close()
                    raise TypeError(f"{hook} returned an awaitable; it must register at once")
            except ExtensionLoadError:
                raise
            except Exception as exc:
                self._diag(
                    "error",
                    f"{hook} failed: {describe_exception(exc)}",
                    plugin=record.name,
                    source=record.kind,
                    path=record.source.path,
                )

    def _registration_callback(self, hook: str, record: PluginRecord) -> Callable[..., Any]:
        """The ``register`` (or ``add``) callable ``record``'s plugin receives for ``hook``."""
        registry = self.registry

        if hook == "add_hookspecs":

            def add(module_or_class: Any) -> None:
                try:
                    self.pm.add_hookspecs(module_or_class)
                except pluggy.PluginValidationError as exc:
                    self._unregister_invalid(getattr(exc, "plugin", None), f"invalid hook implementation: {exc}")
                except ValueError as exc:
                    self._diag("error", f"add_hookspecs failed: {exc}", plugin=record.name, source=record.kind)

            return add

        plugin, kind = record.name, record.kind
        registrars: dict[str, Callable[..., Any]] = {
            "register_tools": lambda value: registry.register_tool(value, plugin, kind),
            "register_commands": lambda name, handler=None, **kw: registry.register_command(
                name, handler, plugin, kind, **kw
            ),
            "register_flags": lambda name, **kw: registry.register_flag(name, plugin, kind, **kw),
            "register_providers": lambda value: registry.register_provider(value, plugin, kind),
            "register_virtual_models": lambda value: registry.register_virtual_model(value, plugin, kind),
            "register_cli_commands": lambda name, main=None, **kw: registry.register_cli_command(
                name, main, plugin, kind, **kw
            ),
            "register_shortcuts": lambda key, handler=None, **kw: registry.register_shortcut(
                key, handler, plugin, kind, **kw
            ),
            "register_message_renderers": lambda custom_type, render: registry.register_renderer(
                "message", custom_type, render, plugin, kind
            ),
            "register_entry_renderers": lambda custom_type, render: registry.register_renderer(
                "entry", custom_type, render, plugin, kind
            ),
            "register_tool_renderers": lambda resolve: registry.register_tool_renderer(resolve, plugin, kind),
            "register_markdown_transformers": lambda transform, message_types=None: (
                registry.register_markdown_transformer(transform, plugin, kind, message_types=message_types)
            ),
            "register_mcp_servers": lambda name, config: registry.register_mcp_server(name, config, plugin, kind),
        }
        registrar = registrars[hook]

        def register(*args: Any, **kwargs: Any) -> Any:
            try:
                return registrar(*args, **kwargs)
            except RegistrationError as exc:
                self._diag("error", f"{hook}: {exc}", plugin=plugin, source=kind, path=record.source.path)
                return None

        return register

    def _unregister_invalid(self, plugin_obj: Any, message: str) -> None:
        for record in self.loaded:
            if record.plugin is plugin_obj:
                self.pm.unregister(plugin_obj)
                record.status, record.error = "error", message
                self._diag("error", message, plugin=record.name, source=record.kind, path=record.source.path)

    def _check_pending(self) -> None:
        """Hook implementations without a spec: misspelled names (pluggy's
        ``check_pending``, reported for every plugin instead of raising for the first)."""
        known = sorted(name for name in vars(self.pm.hook) if not name.startswith("_"))
        for name in known:
            caller = getattr(self.pm.hook, name)
            if caller.has_spec():
                continue
            for impl in caller.get_hookimpls():
                if impl.optionalhook:
                    continue
                specced = [n for n in known if getattr(self.pm.hook, n).has_spec()]
                import difflib  # a misspelt hook name: suggest the closest

                close = difflib.get_close_matches(name, specced, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                record = next((r for r in self.records if r.name == impl.plugin_name), None)
                self._diag(
                    "warning",
                    f"implements unknown hook {name!r}{hint}; it will never be called",
                    plugin=impl.plugin_name,
                    source=record.kind if record else None,
                    path=record.source.path if record else None,
                )


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple):
        return [str(v) for v in value]
    return []
