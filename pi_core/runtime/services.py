"""Everything one working directory needs before a session can run in it.

Building services is where project trust is decided, in the order that keeps an
untrusted project from running anything:

1. user settings, then the plugins that are not the project's own (phase one);
2. the trust decision: ``--approve``/``--no-approve``, the ``project_trust`` hook,
   ``trust.json``, ``defaultProjectTrust`` (asking the user when there is a UI);
3. the project's plugins (phase two, only when trusted) and the registration hooks;
4. resources (settings, context files, SYSTEM.md, skills, prompt templates) and the
   model registry with the providers plugins registered.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from pi_hookspecs import ToolDefinition
from pi_hookspecs.record import dataclass

from .._paths import agent_dir as default_agent_dir
from ..ai import ModelRegistry
from ..extensions import LoadOptions, PluginHost
from ..resources.loader import ResourceOptions, Resources, load_resources
from ..resources.settings import load_settings
from ..resources.trust import (
    TrustDecision,
    has_trust_requiring_project_resources,
    resolve_project_trust,
    untrusted_note,
)


@dataclass
class ServiceOptions:
    """What the command line or an embedding program asks for, for any working dir."""

    agent_dir: Path | None = None
    mode: str = "print"
    ui: Any = None
    cli_extensions: Sequence[str] = ()
    sdk_plugins: Sequence[Any] = ()
    no_extensions: bool = False
    builtins: Sequence[Any] | None = None
    entry_points: bool = True
    approve: bool | None = None
    resource_options: ResourceOptions = field(default_factory=ResourceOptions)
    flags: dict[str, Any] = field(default_factory=dict)
    tools: Sequence[str] | None = None
    """``--tools`` entries (plain names/patterns, or only ``+name``/``-name``)."""
    exclude_tools: Sequence[str] = ()
    no_tools: bool = False
    no_builtin_tools: bool = False
    sdk_tools: Sequence[ToolDefinition] = ()
    model_registry: ModelRegistry | None = None
    ask_user_trust: Callable[[str], Awaitable[Any]] | None = None
    fresh_files: bool = False
    trust_cache: dict[str, TrustDecision] = field(default_factory=dict)
    """Trust decisions made in this process, per working directory: ``/reload`` and a
    session replacement (new, resume, fork) in a folder already decided do not ask again
    (as pi 1.6.0); ``/trust`` clears it, so ``/reload`` applies the decision it saved."""


class RequiredExtensionError(RuntimeError):
    """A plugin listed in the user settings' ``requiredExtensions`` is not running:
    pi refuses to start a session without it."""


@dataclass
class SessionServices:
    """The services a session runtime is built from."""

    cwd: str
    agent_dir: Path
    options: ServiceOptions
    plugins: PluginHost
    resources: Resources
    models: ModelRegistry
    trust: TrustDecision
    diagnostics: list[str] = field(default_factory=list)

    @property
    def settings(self) -> Any:
        return self.resources.settings

    @property
    def project_trusted(self) -> bool:
        return self.trust.trusted


async def create_services(cwd: str | os.PathLike[str], options: ServiceOptions | None = None) -> SessionServices:
    """The services of ``cwd``; trust is decided once per folder and process
    (``options.trust_cache``: ``/reload``, new, resume and fork sessions reuse it)."""
    options = options or ServiceOptions()
    cwd = str(Path(cwd).resolve())
    adir = options.agent_dir or default_agent_dir()
    diagnostics: list[str] = []
    plugins = PluginHost(
        LoadOptions(
            cwd=cwd,
            agent_dir=adir,
            builtins=options.builtins,
            cli_extensions=list(options.cli_extensions),
            sdk_plugins=list(options.sdk_plugins),
            no_extensions=options.no_extensions,
            entry_points=options.entry_points,
            mode=options.mode,
            ui=options.ui,
            flags=dict(options.flags),
            fresh_files=options.fresh_files,
        )
    )
    plugins.load_phase_one()
    user_settings = load_settings(cwd, agent_dir=adir, project_trusted=False)
    has_ui = options.ui is not None and options.mode in ("tui", "rpc", "acp")
    cached = options.trust_cache.get(cwd) if options.approve is None else None
    if cached is not None and has_trust_requiring_project_resources(cwd):
        trust = cached
    else:
        trust = await resolve_project_trust(
            cwd,
            override=options.approve,
            ask_plugins=plugins.decide_project_trust,
            has_ui=has_ui and options.ask_user_trust is not None,
            ask_user=options.ask_user_trust,
            default_project_trust=user_settings.user.get("defaultProjectTrust"),
            agent_dir=adir,
            on_diagnostic=lambda diagnostic: diagnostics.append(str(diagnostic)),
        )
        if trust.source not in ("cli", "no-project-resources"):
            options.trust_cache[cwd] = trust
    await plugins.load_phase_two(project_trusted=trust.trusted)
    if not trust.trusted:
        skipped = untrusted_note(cwd)
        if skipped:
            diagnostics.append(f"warning: {skipped}")
    missing = plugins.missing_required()
    if missing:
        settings_file = adir / "settings.json"
        raise RequiredExtensionError(
            f"required plugins are not running (requiredExtensions in {settings_file}): " + "; ".join(missing)
        )
    resources = load_resources(
        cwd,
        project_trusted=trust.trusted,
        agent_dir=adir,
        options=options.resource_options,
        plugin_names=[record.name for record in plugins.records],
    )
    if trust.trusted and resources.settings.project.get("packages"):
        from ..resources.packages import missing_message, missing_packages

        packages = missing_packages(resources.settings.project)
        if packages:
            diagnostics.append("warning: " + missing_message(cwd, packages))
    plugins.context_host.use_settings(resources.settings)
    # pi's own providers are a plugin of the host: the registry takes them from there
    models = options.model_registry or ModelRegistry(models_path=adir / "models.json", builtins=False)
    diagnostics += [
        f"error: {problem}" for problem in models.use_registrations(plugins.registry.provider_registrations())
    ]
    diagnostics += [
        f"error: {problem}" for problem in models.use_virtual_models(plugins.registry.virtual_model_registrations())
    ]
    # dynamic catalogues start offline, from their stored snapshots (pi 1.6.0)
    diagnostics += [
        f"warning: model catalogue {problem}"
        for problem in (await models.refresh_catalogues(allow_network=False)).values()
    ]
    diagnostics += [f"error: {e}" for e in models.errors]
    if models.auth.warning and not models.auth.error:  # one line per file: a broken one is reported as such
        diagnostics.append(f"warning: {models.auth.warning}")
    return SessionServices(
        cwd=cwd,
        agent_dir=adir,
        options=options,
        plugins=plugins,
        resources=resources,
        models=models,
        trust=trust,
        diagnostics=diagnostics,
    )
