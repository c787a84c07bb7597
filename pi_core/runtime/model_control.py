"""The session's model and thinking level: the initial choice (recorded when the
session starts), the check before a run, and changes (stored in the session file,
announced through ``model_select`` / ``thinking_level_select``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pi_hookspecs import Model

from ..agent import AgentState
from ..ai import ModelRegistry, clamp_thinking_level
from ..ai.builtin import missing_plugin_message
from ..extensions import EventRunner
from ..resources.settings import Settings, SettingsError
from ..session import SessionContext, SessionManager
from . import events  # ThinkingLevelChangedEvent: made at the first change
from .errors import NoModelError, no_model_message
from .events import NoticeEvent
from .ports import Emit


class ModelControl:
    """Sets ``state.model`` and ``state.thinking_level``.

    * ``models`` - the model registry (lookups, credentials);
    * ``emit`` - the session's listeners (``thinking_level_changed``, notices);
    * ``api_key()`` - ``--api-key`` (it stands in for missing credentials);
    * ``settings()`` - the current settings (a model switch reads ``modelThinkingLevels``
      and ``defaultThinkingLevel``).
    """

    def __init__(
        self,
        state: AgentState,
        sm: SessionManager,
        runner: EventRunner,
        *,
        models: ModelRegistry,
        emit: Emit,
        api_key: Callable[[], str | None],
        settings: Callable[[], Settings] | None = None,
    ) -> None:
        self.state = state
        self.sm = sm
        self.runner = runner
        self.models = models
        self._emit = emit
        self._api_key = api_key
        self._settings = settings
        self._has_history = False
        self._selection_recorded = False

    def initial(self, model: Model | None, context: SessionContext, settings: Settings) -> Model | None:
        """The model to start with: the one asked for, else the session's, else the
        settings' default, else the registry's first usable one (``None`` without a
        provider with credentials: the offline demo is used only when named)."""
        if model is not None:
            return model
        if context.model is not None and self.models.virtual_models():
            from .virtual_routing import branch_virtual_selection

            virtual = branch_virtual_selection(self.sm.get_branch(), self.models)
            if virtual is not None:  # responses name the physical models a virtual selection routed to
                return virtual
        if context.model is not None:
            found = self.models.get(context.model.provider, context.model.model_id)
            if found is not None:
                return found
        if settings.default_model:
            try:
                return self.models.resolve(settings.default_model, provider=settings.default_provider).model
            except Exception as exc:
                self._emit(
                    NoticeEvent(level="warning", message=f"settings defaultModel {settings.default_model!r}: {exc}")
                )
        return self.models.default_model()

    def initial_thinking_level(self, level: str | None, context: SessionContext, settings: Settings) -> str:
        """The thinking level to start with, as pi 1.6.0 picks it (call after
        :meth:`initial` set the model): the level asked for; else a resumed session's
        own (its last thinking_level_change, or the default for a file without one);
        else the model's modelThinkingLevels entry; else defaultThinkingLevel. Clamped
        to what the model supports (off without a model)."""
        self._has_history = any(m.role != "system" for m in context.messages)
        if level is None and self._has_history:
            level = context.thinking_level if context.thinking_level_set else settings.default_thinking_level
        model_ref = self.state.model.ref if self.state.model is not None else None
        if level is None:
            level = settings.model_thinking_level(model_ref) or settings.default_thinking_level
        return self.clamp(level) if self.state.model is not None else "off"

    def record_selection(self) -> None:
        """Write the model and thinking level a session starts with, as pi 1.6.0 does: a
        new session opens with ``model_change`` and ``thinking_level_change`` entries
        (so resuming restores both); a file without a thinking level gets one."""
        if self._selection_recorded:
            return
        self._selection_recorded = True
        if self._has_history:
            self._record_virtual_selection()
            if not self.sm.build_session_context().thinking_level_set:
                self.sm.append_thinking_level_change(self.state.thinking_level)
            return
        if any(e.type in ("model_change", "thinking_level_change") for e in self.sm.get_branch()):
            return  # already recorded (a session reloaded before its first prompt)
        model = self.state.model
        if model is not None:
            self.sm.append_model_change(model.provider, model.id)
        self.sm.append_thinking_level_change(self.state.thinking_level)

    def _record_virtual_selection(self) -> None:
        """A resumed branch whose selection differs from the model the session starts
        with gets a ``model_change`` when either is virtual (responses name physical
        models, so they cannot record a virtual selection, nor replace one)."""
        model = self.state.model
        if model is None or not self.models.virtual_models():
            return
        from .virtual_routing import branch_virtual_selection

        held = branch_virtual_selection(self.sm.get_branch(), self.models)
        virtual = self.models.virtual_definition(model) is not None
        if (held is not None and held.ref != model.ref) or (virtual and held is None):
            self.sm.append_model_change(model.provider, model.id)

    def clamp(self, level: str) -> str:
        """``level`` as the current model supports it (unchanged without a model)."""
        model = self.state.model
        if model is None:
            return level
        return clamp_thinking_level(model, level)

    def check(self) -> Model:
        """The model a run uses; raises :class:`NoModelError` when there is none, its
        API's plugin is missing or it has no credentials."""
        model = self.state.model
        if model is None:
            raise NoModelError(no_model_message(self.models.models_path))
        if model.api != "faux" and model.api not in self.models.api_names():
            hint = missing_plugin_message(model)
            if hint is not None:
                raise NoModelError(hint)
        if model.api != "faux" and not self._api_key() and not self.models.has_auth(model.provider):
            raise NoModelError(
                f"No API key for provider {model.provider!r}: set its environment variable, run "
                f"`pi auth login {model.provider}`, or configure apiKey in models.json"
            )
        return model

    async def set_model(
        self, model: Model, *, source: Literal["set", "cycle"] = "set", thinking_level: str | None = None
    ) -> bool:
        """Switch to ``model`` (``False`` without credentials for it). The thinking level
        becomes, as in pi 1.6.0: ``thinking_level`` when given (a scoped model's own),
        else the model's ``modelThinkingLevels`` entry, else ``defaultThinkingLevel``,
        else the current level; clamped to what the model supports. So a level clamped
        to ``off`` on a model without reasoning comes back with a reasoning model."""
        if model.api != "faux" and not self.models.has_auth(model.provider):
            return False
        previous = self.state.model
        level = thinking_level if thinking_level is not None else self._level_for_switch(model)
        self.state.model = model
        self.sm.append_model_change(model.provider, model.id)
        await self.set_thinking_level(level)
        if self.runner.has_handlers("model_select"):
            from pi_hookspecs import ModelSelectEvent  # an occasional event: made on first use

            await self.runner.emit(
                "model_select", ModelSelectEvent(model=model, previous_model=previous, source=source)
            )
        return True

    def _level_for_switch(self, model: Model) -> str:
        settings = self._settings() if self._settings is not None else None
        if settings is None:
            return self.state.thinking_level
        try:
            per_model = settings.model_thinking_level(model.ref)
            if per_model is not None:
                return per_model
            if settings.lookup("defaultThinkingLevel")[0] is not None:
                return settings.default_thinking_level
        except SettingsError:
            pass  # a mistyped setting is reported where settings load; the level stays
        return self.state.thinking_level

    async def set_thinking_level(self, level: str) -> str:
        previous = self.state.thinking_level
        level = self.clamp(level)
        if level == previous:
            return level
        self.state.thinking_level = level
        self.sm.append_thinking_level_change(level)
        self._emit(events.ThinkingLevelChangedEvent(level=level))
        if self.runner.has_handlers("thinking_level_select"):
            from pi_hookspecs import ThinkingLevelSelectEvent

            await self.runner.emit(
                "thinking_level_select", ThinkingLevelSelectEvent(level=level, previous_level=previous)
            )
        return level


__all__ = ["ModelControl"]
