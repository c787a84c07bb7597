"""The ACP agent: sessions of pi's runtime behind the ``acp`` SDK's connection.

pluggable-pi-acp is a front end like ``pi --mode rpc``: it creates sessions with pluggable-pi's
public SDK (:func:`pi_core.runtime.create_agent_session`, ``docs/sdk.md``) and reads
them through :class:`~pi_core.runtime.AgentSession`; everything it adds to a session
goes through pi's hooks (:mod:`pi_acp.session`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from datetime import UTC
from typing import Any, cast

from acp import PROTOCOL_VERSION, Agent, RequestError, run_agent
from acp.schema import (
    AgentCapabilities,
    AvailableCommand,
    AvailableCommandsUpdate,
    ClientCapabilities,
    ConfigOptionUpdate,
    CurrentModeUpdate,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionConfigOptionSelect,
    SessionConfigSelectOption,
    SessionInfo,
    SessionListCapabilities,
    SessionMode,
    SessionModeState,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    UnstructuredCommandInput,
)

from pi_core.runtime import AgentSession, SessionRuntime, create_agent_session
from pi_core.session import SessionManager
from pi_hookspecs import THINKING_LEVELS, AssistantMessage

from . import __version__
from .cli import Options
from .convert import history_updates, prompt_input
from .handshake import initialize_result
from .remembered import Remembered, SessionInUseError
from .session import Capabilities, ClientMcpServers, EditorHooks, EditorUI, EventBridge, Link
from .transport import StdioTransport

MODEL_OPTION = "model"
THINKING_OPTION = "thinking"
PAGE = 50
"""Sessions per ``session/list`` page."""


class AcpSession:
    """One ACP session: a pi :class:`SessionRuntime` and what links it to the client."""

    def __init__(self, runtime: SessionRuntime, link: Link, ui: EditorUI) -> None:
        self.runtime = runtime
        self.link = link
        self.ui = ui
        self.prompting: asyncio.Task[Any] | None = None
        self.cancelled = False
        self.remembered: Remembered | None = None
        """The claim on this session's id while pi has not written its file."""
        self.sender = asyncio.ensure_future(link.send_loop())
        self.unsubscribe = runtime.subscribe(EventBridge(link))

    @property
    def session(self) -> AgentSession:
        return self.runtime.session

    def forget_if_written(self) -> None:
        """The session's file exists: a later process finds it, the marker can go."""
        file = self.session.sm.get_session_file()
        if self.remembered is not None and file is not None and os.path.exists(file):
            self.remembered.forget()
            self.remembered = None

    async def close(self) -> None:
        self.unsubscribe()
        with contextlib.suppress(Exception):
            await self.link.flush()
        self.sender.cancel()
        try:
            await self.runtime.dispose("quit")
        finally:
            if self.remembered is not None:
                self.forget_if_written()
            if self.remembered is not None:
                self.remembered.release()


class PiAgent:
    """The ``acp.Agent`` (duck-typed: the SDK routes each method by name)."""

    def __init__(self, options: Options, initialized: dict[str, Any] | None) -> None:
        self.options = options
        self.client: Any = None
        self.capabilities = Capabilities()
        if initialized is not None:
            self.capabilities = Capabilities.of(
                ClientCapabilities.model_validate(initialized.get("clientCapabilities") or {})
            )
        self.sessions: dict[str, AcpSession] = {}
        self._lock = asyncio.Lock()

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    # ------------------------------------------------------------------ handshake

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        self.capabilities = Capabilities.of(client_capabilities)
        result = initialize_result(__version__)
        agent = result["agentCapabilities"]
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=agent["loadSession"],
                prompt_capabilities=PromptCapabilities(**agent["promptCapabilities"]),
                mcp_capabilities=McpCapabilities(**agent["mcpCapabilities"]),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            auth_methods=[],
            agent_info=Implementation(name="pi", title="pi", version=__version__),
        )

    async def authenticate(self, method_id: str, **kwargs: Any) -> None:
        raise RequestError.invalid_params(
            {"details": "pi needs no authentication through ACP: log in with `pi auth login`"}
        )

    # ------------------------------------------------------------------ sessions

    async def _open(
        self, cwd: str, mcp_servers: list[Any] | None, session: SessionManager | str | None, *, fresh: bool
    ) -> AcpSession:
        """A session runtime: a new one (``session`` None), a file to resume, or a
        manager; ``fresh``: it has no conversation yet (the options' model applies)."""
        link = Link(client=self.client, capabilities=self.capabilities, cwd=cwd)
        ui = EditorUI(link)
        plugins: list[Any] = [EditorHooks(link)]
        if mcp_servers:
            plugins.append(ClientMcpServers(mcp_servers))
        options = self.options
        try:
            runtime = await create_agent_session(
                cwd=cwd,
                model=options.model if fresh else None,
                thinking_level=options.thinking if fresh else None,
                plugins=plugins,
                extensions=options.extensions,
                no_extensions=options.no_extensions,
                approve=options.approve,
                tools=options.tools,
                session=session,
                in_memory=options.no_session and session is None,
                mode="acp",
                ui=ui,
            )
        except Exception as exc:
            raise RequestError.internal_error({"details": f"{type(exc).__name__}: {exc}"}) from exc
        link.session_id = runtime.session.sm.get_session_id()
        link.cwd = runtime.session.cwd
        acp_session = AcpSession(runtime, link, ui)
        old = self.sessions.pop(link.session_id, None)
        if old is not None:
            await old.close()
        self.sessions[link.session_id] = acp_session
        return acp_session

    def _get(self, session_id: str) -> AcpSession:
        found = self.sessions.get(session_id)
        if found is None:
            raise RequestError.invalid_params(
                {"details": f"unknown session {session_id!r}: use session/new or session/load"}
            )
        return found

    async def new_session(self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any) -> NewSessionResponse:
        _check_cwd(cwd)
        async with self._lock:
            opened = await self._open(cwd, mcp_servers, None, fresh=True)
            if not self.options.no_session:  # loadable by a later process before its first prompt
                opened.remembered = await asyncio.to_thread(Remembered.create, opened.link.session_id, opened.link.cwd)
        self._announce(opened)
        return NewSessionResponse(
            session_id=opened.link.session_id, modes=_modes(opened.session), config_options=_config(opened.session)
        )

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> LoadSessionResponse:
        """The session with this id, its conversation replayed as updates. A session open
        in this process is taken as it is (written or not, in memory or not; its MCP
        servers stay those it was opened with); one pi has written is resumed from its
        file; one this or an earlier ``pi acp`` created and pi has not written yet (no
        prompt) opens empty under its id (:mod:`pi_acp.remembered`)."""
        _check_cwd(cwd)
        async with self._lock:
            opened = self.sessions.get(session_id)
            if opened is not None:
                if opened.prompting is not None and not opened.prompting.done():
                    raise RequestError.invalid_request(
                        {"details": "a prompt is running in this session: cancel it or wait for its answer"}
                    )
            else:
                opened = await self._load(cwd, session_id, mcp_servers)
        for update in history_updates(opened.session.messages, opened.link.cwd):
            opened.link.push(update)
        self._announce(opened)
        await opened.link.flush()
        return LoadSessionResponse(modes=_modes(opened.session), config_options=_config(opened.session))

    async def _load(self, cwd: str, session_id: str, mcp_servers: list[Any] | None) -> AcpSession:
        try:
            path: str | None = await asyncio.to_thread(SessionManager.find, session_id, cwd=cwd)
        except Exception:
            path = None
        if path is not None:
            return await self._open(cwd, mcp_servers, path, fresh=False)
        if self.options.no_session:
            raise RequestError.resource_not_found(session_id)
        try:
            claim = await asyncio.to_thread(Remembered.claim, session_id)
        except SessionInUseError as exc:
            raise RequestError.internal_error({"details": str(exc)}) from exc
        if claim is None:
            raise RequestError.resource_not_found(session_id)
        try:
            manager = SessionManager.create(cwd, session_id=session_id)
            opened = await self._open(cwd, mcp_servers, manager, fresh=True)
        except BaseException:
            claim.release()
            raise
        opened.remembered = claim
        return opened

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        found = (
            await asyncio.to_thread(SessionManager.list, cwd)
            if cwd
            else await asyncio.to_thread(SessionManager.list_all)
        )
        start = int(cursor) if cursor and cursor.isdigit() else 0
        page = found[start : start + PAGE]
        sessions = [
            SessionInfo(
                session_id=info.id,
                cwd=info.cwd,
                title=info.name or _short(info.first_message) or None,
                updated_at=info.modified.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            )
            for info in page
        ]
        more = start + PAGE < len(found)
        return ListSessionsResponse(sessions=sessions, next_cursor=str(start + PAGE) if more else None)

    def _announce(self, opened: AcpSession) -> None:
        """``available_commands_update``: pi's slash commands, skills, templates."""
        opened.link.push(
            AvailableCommandsUpdate(
                session_update="available_commands_update", available_commands=_commands(opened.session)
            )
        )

    # ------------------------------------------------------------------ prompting

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        opened = self._get(session_id)
        session = opened.session
        if opened.prompting is not None and not opened.prompting.done():
            raise RequestError.invalid_request({"details": "a prompt is already running in this session"})
        text, images = prompt_input(prompt)
        before = len(session.messages)
        opened.cancelled = False
        opened.prompting = asyncio.ensure_future(session.prompt(text, images=images))
        try:
            await opened.prompting
        except asyncio.CancelledError:
            if not opened.cancelled:
                raise
        except Exception as exc:
            await opened.link.flush()
            raise RequestError.internal_error({"details": f"{type(exc).__name__}: {exc}"}) from exc
        finally:
            opened.prompting = None
            opened.forget_if_written()
        await opened.link.flush()
        if opened.cancelled:
            return PromptResponse(stop_reason="cancelled")
        last = next((m for m in reversed(session.messages[before:]) if isinstance(m, AssistantMessage)), None)
        if last is not None and last.stop_reason == "aborted":
            return PromptResponse(stop_reason="cancelled")
        if last is not None and last.stop_reason == "error":
            raise RequestError.internal_error({"details": last.error_message or "the model request failed"})
        if last is not None and last.stop_reason == "length":
            return PromptResponse(stop_reason="max_tokens")
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        opened = self.sessions.get(session_id)
        if opened is None:
            return
        if opened.prompting is not None and not opened.prompting.done():
            opened.cancelled = True
        opened.session.abort()

    # ------------------------------------------------------------------ modes and models

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        opened = self._get(session_id)
        await self._set_thinking(opened, mode_id)
        return SetSessionModeResponse()

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse:
        opened = self._get(session_id)
        session = opened.session
        if config_id == MODEL_OPTION and isinstance(value, str):
            provider, _, model_id = value.partition("/")
            model = session.models.get(provider, model_id)
            if model is None:
                raise RequestError.invalid_params({"details": f"unknown model {value!r}"})
            if not await session.set_model(model):
                raise RequestError.invalid_params({"details": f"no credentials for provider {provider!r}"})
            opened.link.push(
                CurrentModeUpdate(session_update="current_mode_update", current_mode_id=session.thinking_level)
            )
        elif config_id == THINKING_OPTION and isinstance(value, str):
            await self._set_thinking(opened, value)
        else:
            raise RequestError.invalid_params({"details": f"unknown option {config_id!r}"})
        return SetSessionConfigOptionResponse(config_options=_config(session))

    async def _set_thinking(self, opened: AcpSession, level: str) -> None:
        if level not in THINKING_LEVELS:
            raise RequestError.invalid_params({"details": f"unknown thinking level {level!r}"})
        session = opened.session
        await session.set_thinking_level(level)
        opened.link.push(
            CurrentModeUpdate(session_update="current_mode_update", current_mode_id=session.thinking_level)
        )
        opened.link.push(ConfigOptionUpdate(session_update="config_option_update", config_options=_config(session)))

    # ------------------------------------------------------------------ extensions

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def close(self) -> None:
        for opened in list(self.sessions.values()):
            with contextlib.suppress(Exception):
                if opened.prompting is not None and not opened.prompting.done():
                    opened.session.abort()
                await opened.close()
        self.sessions.clear()


def _check_cwd(cwd: str) -> None:
    if not os.path.isabs(cwd) or not os.path.isdir(cwd):
        raise RequestError.invalid_params({"details": f"cwd must be an existing absolute directory: {cwd!r}"})


def _short(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _levels(session: AgentSession) -> list[str]:
    levels: list[str] = []
    for level in THINKING_LEVELS:
        clamped = session.clamp_thinking_level(level)
        if clamped not in levels:
            levels.append(clamped)
    return levels


def _modes(session: AgentSession) -> SessionModeState:
    """pi's thinking levels as ACP session modes (for clients without config options)."""
    return SessionModeState(
        current_mode_id=session.thinking_level,
        available_modes=[
            SessionMode(id=level, name=f"Thinking: {level}", description=f"pi's {level} thinking level")
            for level in _levels(session)
        ],
    )


def _model_ref(model: Any) -> str:
    return f"{model.provider}/{model.id}"


def _config(session: AgentSession) -> list[Any]:
    """The model (every model with credentials) and the thinking level as config options."""
    current = session.model
    models = list(session.models.available())
    if current is not None and all(_model_ref(m) != _model_ref(current) for m in models):
        models.insert(0, current)
    options: list[Any] = []
    if models:
        options.append(
            SessionConfigOptionSelect(
                type="select",
                id=MODEL_OPTION,
                name="Model",
                category="model",
                current_value=_model_ref(current) if current is not None else _model_ref(models[0]),
                options=[
                    SessionConfigSelectOption(
                        value=_model_ref(m), name=getattr(m, "name", None) or m.id, description=_model_ref(m)
                    )
                    for m in models
                ],
            )
        )
    options.append(
        SessionConfigOptionSelect(
            type="select",
            id=THINKING_OPTION,
            name="Thinking",
            category="thought_level",
            current_value=session.thinking_level,
            options=[SessionConfigSelectOption(value=level, name=level) for level in _levels(session)],
        )
    )
    return options


def _commands(session: AgentSession) -> list[AvailableCommand]:
    """Plugin slash commands, prompt templates and skills (``/skill:name``)."""
    out: list[AvailableCommand] = []
    for name, registered in session.plugins.registry.commands.items():
        definition = registered.value
        hint = getattr(definition, "argument_hint", None)
        out.append(
            AvailableCommand(
                name=name,
                description=definition.description or f"/{name}",
                input=UnstructuredCommandInput(hint=hint) if hint else None,
            )
        )
    resources = session.services.resources
    for template in resources.prompt_templates:
        hint = getattr(template, "argument_hint", None)
        out.append(
            AvailableCommand(
                name=template.name,
                description=template.description or f"prompt template {template.name}",
                input=UnstructuredCommandInput(hint=hint) if hint else None,
            )
        )
    for skill in resources.skills:
        out.append(AvailableCommand(name=f"skill:{skill.name}", description=skill.description or f"skill {skill.name}"))
    return out


async def serve(
    options: Options, *, in_fd: int, out_fd: int, initialized: dict[str, Any] | None, pending: bytes
) -> int:
    """Serve until the client closes stdin (or a signal): then dispose every session."""
    transport = StdioTransport(in_fd, out_fd, pending)
    await transport.start()
    agent = PiAgent(options, initialized)
    loop = asyncio.get_running_loop()
    # PiAgent implements the stable protocol; the SDK answers the unstable methods it
    # lacks (session/fork, session/resume, session/close) with "method not found".
    main = asyncio.ensure_future(run_agent(cast(Agent, agent), transport))

    stopped_by: list[int] = []

    def stop(signum: int) -> None:
        stopped_by.append(signum)
        main.cancel()

    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, stop, signum)
    try:
        await main
    except asyncio.CancelledError:
        pass
    except Exception as exc:
        print(f"pi acp: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        await agent.close()
        await transport.close()
    return 128 + stopped_by[0] if stopped_by else 0  # the conventional status of a signal


__all__ = ["AcpSession", "PiAgent", "serve"]
