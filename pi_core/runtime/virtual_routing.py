"""Routing the session's requests when a virtual model is selected.

The selection stays in the agent state (``ctx.model`` is the virtual model); before each
request of the agent loop :meth:`VirtualRouting.prepare` asks the router where this one
request goes and puts the physical model and level into the request's context, so
providers, provider hooks and the assistant message (``provider``, ``api``, ``model``,
``thinkingLevel``) only ever see the physical model. Router state is kept on the branch
in ``custom`` entries of type ``pi.virtual-model-state``, as pi 1.6.0 keeps it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pi_hookspecs import (
    VIRTUAL_MODEL_STATE_ENTRY,
    AgentMessage,
    AssistantMessage,
    Model,
    is_virtual_model,
)

from ..agent import AgentContext
from ..ai import ModelRegistry
from ..ai.virtual import VirtualRouteError, latest_response
from ..session import SessionManager, convert_to_llm


def branch_state(branch: Sequence[Any], provider: str, model_id: str) -> Any:
    """The latest router state the branch stores for virtual model ``provider/model_id``."""
    for entry in reversed(branch):
        if getattr(entry, "type", None) != "custom" or entry.custom_type != VIRTUAL_MODEL_STATE_ENTRY:
            continue
        data = entry.data
        if isinstance(data, dict) and data.get("provider") == provider and data.get("modelId") == model_id:
            return data.get("state")
    return None


def branch_virtual_selection(branch: Sequence[Any], models: ModelRegistry) -> Model | None:
    """The virtual model the branch selects: its last ``model_change`` when that names a
    registered virtual model (responses name physical models, so they do not replace
    it). ``None`` otherwise - the usual rule applies, and a virtual model that is no
    longer registered falls back to the physical model that answered last."""
    for entry in reversed(branch):
        if getattr(entry, "type", None) == "model_change":
            model = models.get(entry.provider, entry.model_id)
            return model if model is not None and models.virtual_definition(model) is not None else None
    return None


def _user_turn(messages: Sequence[AgentMessage]) -> bool:
    """Whether a message the user wrote follows the latest assistant message."""
    for message in reversed(messages):
        if message.role == "assistant":
            return False
        if message.role == "user":
            return True
    return False


class VirtualRouting:
    """The session's router calls.

    * ``models`` - the registry (routing, lookups);
    * ``sm`` - the session file (router state entries);
    * ``ctx()`` - the plugins' context, for a ``route(request, ctx)``.
    """

    def __init__(self, models: ModelRegistry, sm: SessionManager, *, ctx: Callable[[], Any]) -> None:
        self._models = models
        self._sm = sm
        self._ctx = ctx
        self._last_response: AssistantMessage | None = None
        self._failure: VirtualRouteError | None = None

    def on_agent_event(self, event: Any) -> None:
        """Remember the latest response: when it failed and a retry left it out of the
        context, the next request is routed as ``retry`` with it as ``failed``."""
        if getattr(event, "type", None) == "message_end" and isinstance(event.message, AssistantMessage):
            self._last_response = event.message

    def _failed(self, messages: Sequence[AgentMessage]) -> AssistantMessage | None:
        last = self._last_response
        if last is None or last.stop_reason != "error":
            return None
        present = any(
            isinstance(m, AssistantMessage) and m.timestamp == last.timestamp and m.stop_reason == "error"
            for m in messages
        )
        return None if present else last

    async def prepare(self, context: AgentContext, signal: Any = None) -> None:
        """Route ``context``'s request when its model is virtual: ``context.model`` and
        ``context.thinking_level`` become the physical ones. A failed route is kept and
        raised by the stream (:meth:`wrap`), so the request ends with an error response
        naming the virtual model."""
        self._failure = None
        model = context.model
        if model is None or not is_virtual_model(model):
            return
        failed = self._failed(context.messages)
        self._last_response = None
        reason = "retry" if failed is not None else ("user" if _user_turn(context.messages) else "continuation")
        state = branch_state(self._sm.get_branch(), model.provider, model.id)
        try:
            target, level, new_state = await self._models.route(
                model,
                list(context.messages),
                reason=reason,
                thinking_level=context.thinking_level,
                state=state,
                failed=failed,
                signal=signal,
                ctx=self._ctx(),
            )
        except VirtualRouteError as error:
            self._failure = error
            return
        if new_state is not None:
            self._sm.append_custom_entry(
                VIRTUAL_MODEL_STATE_ENTRY, {"provider": model.provider, "modelId": model.id, "state": new_state}
            )
        context.model = target
        context.thinking_level = level

    def wrap(self, stream_fn: Callable[..., Any]) -> Callable[..., Any]:
        """``stream_fn`` that fails a request whose route failed (the agent turns the
        exception into the error response)."""

        def stream(model: Model, context: Any, options: Any) -> Any:
            failure, self._failure = self._failure, None
            if failure is not None and is_virtual_model(model):
                raise failure
            return stream_fn(model, context, options)

        return stream

    async def summary_target(
        self, model: Model, messages: Sequence[AgentMessage], thinking_level: str, signal: Any = None
    ) -> tuple[Model, str]:
        """The model and thinking level a summary (compaction, branch summary) is
        requested with. Under a virtual selection the router is asked, as for a ``direct``
        request without router state (as pi 1.6.0 does: a summary sizes its input and
        output from the model that will write it); raises
        :class:`~pi_core.ai.virtual.VirtualRouteError` when it cannot route. Else
        ``model`` and ``thinking_level``."""
        if not is_virtual_model(model):
            return model, thinking_level
        target, level, _state = await self._models.route(
            model,
            convert_to_llm(list(messages)),
            reason="direct",
            thinking_level=thinking_level,
            signal=signal,
            ctx=self._ctx(),
        )
        return target, level

    def limits_model(self, model: Model | None, messages: Sequence[AgentMessage]) -> Model | None:
        """The model whose limits apply: under a virtual selection, the physical model of
        the latest successful response (else the virtual model's declared limits)."""
        if model is None or not is_virtual_model(model):
            return model
        latest = latest_response(messages)
        physical = self._models.physical_model(latest.provider, latest.model) if latest is not None else None
        return physical or model


__all__ = ["VirtualRouting", "branch_state", "branch_virtual_selection"]
