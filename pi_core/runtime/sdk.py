"""The Python SDK: the same runtime the ``pi`` command uses, for embedding programs.

from pi_core import create_agent_session

runtime = await create_agent_session(cwd=".", model="anthropic/claude-sonnet-4-5")
await runtime.session.prompt("What files are here?")
print(runtime.session.get_last_assistant_text())
await runtime.dispose()
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pi_hookspecs import Model, ToolDefinition, tool

from ..session import SessionManager
from .host import SessionRuntime
from .services import ServiceOptions


async def create_agent_session(
    *,
    cwd: str | os.PathLike[str] | None = None,
    model: Model | str | None = None,
    thinking_level: str | None = None,
    custom_tools: Sequence[ToolDefinition | Callable[..., Any]] = (),
    plugins: Sequence[Any] = (),
    extensions: Sequence[str] = (),
    no_extensions: bool = False,
    installed_plugins: bool = True,
    session: SessionManager | str | None = None,
    in_memory: bool = False,
    agent_dir: str | os.PathLike[str] | None = None,
    tools: Sequence[str] | None = None,
    exclude_tools: Sequence[str] = (),
    no_tools: bool = False,
    approve: bool | None = None,
    stream_fn: Callable[..., Any] | None = None,
    mode: str = "sdk",
    ui: Any = None,
    flags: dict[str, Any] | None = None,
) -> SessionRuntime:
    """Create a started session runtime.

    * ``model``: a :class:`~pi_hookspecs.Model` (e.g. from ``pi_core.ai.faux_model``) or a
      pattern like ``"provider/id:high"``; default: settings, then the first provider
      with a key.
    * ``custom_tools``: tools of the embedding program (``@tool`` functions or
      definitions); they win over plugin and built-in tools of the same name.
    * ``plugins``: plugin objects (modules, classes, instances) loaded like ``-e``.
    * ``session``: a SessionManager, a session file to resume, or None for a new file
      session (``in_memory=True`` for one that is never written).
    * ``flags``: values of plugin flags, as ``--name [VALUE]`` on the command line would
      set them (``{"dry-run": True}``); plugins read them with ``ctx.get_flag``.
    """
    cwd = str(Path(cwd or os.getcwd()).resolve())
    options = ServiceOptions(
        agent_dir=Path(agent_dir) if agent_dir is not None else None,
        mode=mode,
        ui=ui,
        cli_extensions=list(extensions),
        sdk_plugins=list(plugins),
        no_extensions=no_extensions,
        entry_points=installed_plugins,
        approve=approve,
        tools=list(tools) if tools is not None else None,
        exclude_tools=list(exclude_tools),
        no_tools=no_tools,
        sdk_tools=[t if isinstance(t, ToolDefinition) else tool(t) for t in custom_tools],
        flags={name.removeprefix("--"): value for name, value in (flags or {}).items()},
    )
    if isinstance(session, str):
        manager: SessionManager | None = SessionManager.open(session)
    elif session is not None:
        manager = session
    elif in_memory:
        manager = SessionManager.in_memory(cwd)
    else:
        manager = None
    resolved: Model | None = model if isinstance(model, Model) else None
    runtime = await SessionRuntime.create(
        cwd,
        options,
        session_manager=manager,
        model=resolved,
        thinking_level=thinking_level,
        stream_fn=stream_fn,
        start=False,
    )
    if isinstance(model, str):
        selection = runtime.session.models.resolve(model)
        runtime.session.agent.state.model = selection.model
        if selection.thinking_level and thinking_level is None:
            runtime.session.agent.state.thinking_level = runtime.session.clamp_thinking_level(selection.thinking_level)
        elif thinking_level is None and not runtime.session.sm.get_entry_count():
            # a new session's level follows the model chosen here, not the default model
            settings = runtime.session.services.resources.settings
            level = settings.model_thinking_level(selection.model.ref) or settings.default_thinking_level
            runtime.session.agent.state.thinking_level = runtime.session.clamp_thinking_level(level)
    await runtime.session.start("startup")
    return runtime
