"""The session runtime: the host's stable handle on the current AgentSession.

``/new``, ``/resume`` (switch), ``/fork`` replace the session; ``/reload`` rebuilds its
plugins, tools, resources and prompt while keeping the conversation. Every
replacement runs the same sequence:

    session_before_switch / session_before_fork (may cancel)
    -> session_shutdown of the old plugins -> old contexts go stale
    -> services (plugins, trust, resources, models) for the target's working directory
    -> the new AgentSession, the host's listeners moved over
    -> session_start (reason new / resume / fork / reload) -> resources_discover
    -> ``with_session(ctx)`` with a context of the NEW session
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import pi_hookspecs
from pi_hookspecs import Model, UserMessage

from .._async import maybe_await
from ..ai import ModelRegistry
from ..session import SessionManager
from .errors import MissingSessionCwdError
from .navigation import message_text
from .services import ServiceOptions, create_services
from .session import AgentSession

WithSession = Callable[[Any], Awaitable[Any] | Any] | None


class SessionRuntime:
    def __init__(
        self,
        session: AgentSession,
        options: ServiceOptions,
        *,
        stream_fn: Callable[..., Any] | None = None,
        session_dir: str | None = None,
    ) -> None:
        self.session = session
        self.options = options
        self.stream_fn = stream_fn
        self.session_dir = session_dir
        self._listeners: list[Callable[[Any], Any]] = []
        self._unsubscribe: Callable[[], Any] | None = None
        self.on_rebind: list[Callable[[AgentSession], Any]] = []
        session.runtime = self
        self._attach(session)

    @classmethod
    async def create(
        cls,
        cwd: str,
        options: ServiceOptions | None = None,
        *,
        session_manager: SessionManager | None = None,
        model: Model | Callable[[ModelRegistry], Model | None] | None = None,
        thinking_level: str | None = None,
        stream_fn: Callable[..., Any] | None = None,
        session_dir: str | None = None,
        start: bool = True,
    ) -> SessionRuntime:
        """``model`` may be a function of the session's model registry (the command line's
        ``--model``, resolved once the registry exists): the session then starts with it,
        without first choosing a default model it would drop."""
        options = options or ServiceOptions()
        services = await create_services(cwd, options)
        if callable(model):
            model = model(services.models)
        manager = session_manager or SessionManager.create(services.cwd, session_dir=session_dir)
        session = AgentSession(services, manager, model=model, thinking_level=thinking_level, stream_fn=stream_fn)
        runtime = cls(session, options, stream_fn=stream_fn, session_dir=session_dir)
        if start:
            await session.start("startup")
        return runtime

    # ------------------------------------------------------------------ listeners

    def subscribe(self, listener: Callable[[Any], Any]) -> Callable[[], None]:
        """Listen to the current session and every session that replaces it."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _dispatch(self, event: Any) -> None:
        for listener in list(self._listeners):
            listener(event)

    def _attach(self, session: AgentSession) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._unsubscribe = session.subscribe(self._dispatch)

    # ------------------------------------------------------------------ replacement

    async def _replace(
        self,
        manager: SessionManager,
        *,
        reason: Literal["new", "resume", "fork", "reload"],
        model: Model | None,
        thinking_level: str | None,
        with_session: WithSession,
        keep_active_tools: list[str] | None = None,
    ) -> AgentSession:
        old = self.session
        previous = old.session_file
        options = self.options if reason != "reload" else replace(self.options, fresh_files=True)
        # Load first: when plugins, settings or a required extension fail, this raises
        # and the old session stays live and untouched.
        services = await create_services(manager.get_cwd(), options)
        if model is not None and reason != "reload":
            # the model as the new services' registry has it (models.json read again), as
            # pi 1.6.0's replacement does; /reload keeps the session's model as it is
            model = services.models.get(model.provider, model.id) or model
        await old.shutdown(reason, manager.get_session_file())
        old.dispose(f"the session was replaced ({reason})") if reason != "reload" else old.plugins.invalidate("reload")
        session = AgentSession(services, manager, model=model, thinking_level=thinking_level, stream_fn=self.stream_fn)
        if keep_active_tools is not None:
            session.rebuild_tools(keep_active=keep_active_tools)
        session.runtime = self
        self.session = session
        self._attach(session)
        for callback in self.on_rebind:
            await maybe_await(callback(session))
        await session.start(reason, previous_session_file=previous if reason != "reload" else None)
        if with_session is not None:
            await maybe_await(with_session(session.context_host.command_context()))
        return session

    async def new_session(
        self,
        *,
        parent_session: str | None = None,
        setup: Callable[[SessionManager], Any] | None = None,
        with_session: WithSession = None,
    ) -> dict[str, Any]:
        old = self.session
        if await self._cancelled("session_before_switch", pi_hookspecs.SessionBeforeSwitchEvent(reason="new")):
            return {"cancelled": True}
        await old.abort_and_wait() if old.is_busy else None
        manager = SessionManager.create(old.cwd, session_dir=self.session_dir, parent_session=parent_session)
        if setup is not None:
            await maybe_await(setup(manager))
        await self._replace(
            manager, reason="new", model=old.model, thinking_level=old.thinking_level, with_session=with_session
        )
        return {"cancelled": False}

    async def switch_session(
        self, session_path: str, *, with_session: WithSession = None, cwd: str | None = None
    ) -> dict[str, Any]:
        """Continue the session at ``session_path``; ``cwd`` runs it in another working
        directory than its own (not stored: "Continue here" for a session whose folder is
        gone). Raises :class:`MissingSessionCwdError` when its folder no longer exists."""
        old = self.session
        path = str(Path(session_path).expanduser().resolve())
        event = pi_hookspecs.SessionBeforeSwitchEvent(reason="resume", target_session_file=path)
        if await self._cancelled("session_before_switch", event):
            return {"cancelled": True}
        manager = SessionManager.open(path, cwd=cwd)  # fails here, before the old session is torn down
        session_cwd = manager.get_cwd()
        if not Path(session_cwd).is_dir():
            manager.close()
            raise MissingSessionCwdError(path, session_cwd)
        await old.abort_and_wait() if old.is_busy else None
        await self._replace(manager, reason="resume", model=None, thinking_level=None, with_session=with_session)
        return {"cancelled": False}

    async def fork_file(self, session_path: str, *, with_session: WithSession = None) -> dict[str, Any]:
        """A new session of the current working directory holding a copy of the whole
        session at ``session_path`` (of any folder; the original stays unchanged)."""
        old = self.session
        path = str(Path(session_path).expanduser().resolve())
        if await self._cancelled(
            "session_before_fork", pi_hookspecs.SessionBeforeForkEvent(entry_id="", position="at")
        ):
            return {"cancelled": True}
        await old.abort_and_wait() if old.is_busy else None
        manager = SessionManager.fork_from(path, old.cwd, session_dir=old.sm.get_session_dir() or self.session_dir)
        await self._replace(
            manager, reason="fork", model=old.model, thinking_level=old.thinking_level, with_session=with_session
        )
        return {"cancelled": False}

    async def import_session(self, source: str, *, cwd: str | None = None) -> dict[str, Any]:
        """``/import``: copy a session file next to the current session (keeping its id
        and working directory) and continue it. ``cwd`` as in :meth:`switch_session`."""
        resolved = Path(source).expanduser().resolve()
        if not resolved.is_file():
            raise FileNotFoundError(f"no such session file: {resolved}")
        SessionManager.open(resolved, read_only=True).close()  # not a session: the error names the file given
        directory = Path(self.session.sm.get_session_dir() or resolved.parent)
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / resolved.name
        stored = target.resolve() == resolved
        suffix = 1
        while not stored and target.exists():
            target = directory / f"{resolved.stem}-{suffix}{resolved.suffix}"
            suffix += 1
        if not stored:
            import shutil  # only here: shutil imports the compression modules

            shutil.copyfile(resolved, target)
        try:
            result = await self.switch_session(str(target), cwd=cwd)
        except BaseException:
            if not stored:  # nothing was imported: no stray copy for a retry
                target.unlink(missing_ok=True)
            raise
        if result.get("cancelled") and not stored:
            target.unlink(missing_ok=True)
        return {**result, "path": str(target)}

    async def fork(
        self, entry_id: str, *, position: Literal["before", "at"] = "before", with_session: WithSession = None
    ) -> dict[str, Any]:
        old = self.session
        event = pi_hookspecs.SessionBeforeForkEvent(entry_id=entry_id, position=position)
        if await self._cancelled("session_before_fork", event):
            return {"cancelled": True}
        await old.abort_and_wait() if old.is_busy else None
        editor_text = None
        entry = old.sm.get_entry(entry_id)
        message = getattr(entry, "message", None)
        if position == "before" and isinstance(message, UserMessage):
            editor_text = message_text(message.content)
        manager = old.sm.fork(entry_id, position, session_dir=self.session_dir)
        await self._replace(
            manager, reason="fork", model=old.model, thinking_level=old.thinking_level, with_session=with_session
        )
        return {"cancelled": False, "editor_text": editor_text}

    async def reload(self) -> AgentSession:
        """Rebuild plugins, tools, resources and the prompt; keep the conversation."""
        old = self.session
        if old.is_busy:
            await old.wait_for_idle()
        active = old.tools.active_names
        return await self._replace(
            old.sm,
            reason="reload",
            model=old.model,
            thinking_level=old.thinking_level,
            with_session=None,
            keep_active_tools=active,
        )

    async def dispose(self, reason: str = "quit") -> None:
        session = self.session
        if session.is_busy:
            await session.abort_and_wait()
        await session.shutdown(reason)
        session.dispose("pi is shutting down")
        if self._unsubscribe is not None:
            self._unsubscribe()

    async def _cancelled(self, hook: str, event: Any) -> bool:
        runner = self.session.runner
        if not runner.has_handlers(hook):
            return False
        outcome = await runner.emit(hook, event)
        return bool(outcome is not None and outcome.cancel)
