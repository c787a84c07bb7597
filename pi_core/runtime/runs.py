"""One prompt's run, from the model check to ``agent_settled``.

    flush held bash results -> threshold compaction -> before_agent_start
    -> system patch + message + next-turn messages -> agent runs
    -> retries, overflow recovery, compaction, queued work, agent_before_settle
    -> agent_settled

It also holds the run state the session's other parts read: whether a run is active,
the abort request, and the abort controllers of prompts whose agent run has not
started yet (``ctx.signal`` while no agent run is active).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from pi_hookspecs import (
    AbortController,
    AgentMessage,
    AgentSettledEvent,
    AssistantMessage,
    CustomMessage,
    ImageContent,
    Model,
)

from ..agent import Agent
from ..extensions import EventRunner
from .bridge import EventBridge
from .compactor import Compactor
from .loadout import Loadout
from .ports import Emit
from .queues import MessageQueues
from .retry import AutoRetry


class RunLoop:
    """Runs prompts on the agent and keeps the run state.

    * ``check_model()`` - the model a run uses (raises when there is none);
    * ``projection()`` - the context as the session file builds it;
    * ``last_assistant()`` - the newest assistant message of the agent's state;
    * ``on_settled()`` - called once a run settled (a requested shutdown runs there).
    """

    def __init__(
        self,
        agent: Agent,
        runner: EventRunner,
        *,
        bridge: EventBridge,
        compactor: Compactor,
        loadout: Loadout,
        retry: AutoRetry,
        queues: MessageQueues,
        emit: Emit,
        check_model: Callable[[], Model],
        projection: Callable[[], list[AgentMessage]],
        last_assistant: Callable[[], AssistantMessage | None],
        on_settled: Callable[[], Awaitable[None]],
        on_agent_settled: Callable[[], None],
    ) -> None:
        self.agent = agent
        self.runner = runner
        self._bridge = bridge
        self._compactor = compactor
        self._loadout = loadout
        self._retry = retry
        self._queues = queues
        self._emit = emit
        self._check_model = check_model
        self._projection = projection
        self._last_assistant = last_assistant
        self._on_settled = on_settled
        self._on_agent_settled = on_agent_settled
        self.busy = False
        """A prompt operation is running (including retries, compaction, queued work)."""
        self.settled = asyncio.Event()
        self.settled.set()
        self.abort_requested = False
        self._pre_runs: list[AbortController] = []
        """The abort controllers of prompts whose run has not started yet (``input``,
        compaction, ``before_agent_start``) or is between agent runs: :meth:`abort`
        aborts them, and handlers see the newest as ``ctx.signal`` while no agent run
        is active (:attr:`signal`)."""

    # ------------------------------------------------------------------ abort

    def begin_pre_run(self) -> AbortController:
        controller = AbortController()
        self._pre_runs.append(controller)
        return controller

    def end_pre_run(self, controller: AbortController) -> None:
        if controller in self._pre_runs:
            self._pre_runs.remove(controller)

    @property
    def signal(self) -> Any:
        """The agent run's abort signal while one is active; else the newest pending
        prompt's; ``None`` when nothing runs."""
        signal = self.agent.signal
        if signal is None and self._pre_runs:
            return self._pre_runs[-1].signal
        return signal

    def abort(self) -> None:
        """Stop the active run, the prompts ahead of theirs, and a retry backoff."""
        self.abort_requested = True
        for controller in list(self._pre_runs):
            controller.abort("aborted")
        self.agent.abort()
        self._retry.cancel()

    # ------------------------------------------------------------------ the run

    async def run(
        self,
        message: AgentMessage,
        *,
        prompt_text: str | None = None,
        images: Sequence[ImageContent] = (),
        custom: CustomMessage | None = None,
        pre_run: AbortController | None = None,
    ) -> None:
        """One run. ``pre_run``: the prompt's abort controller (made before the
        ``input`` hook); an abort through it, before or during the steps ahead of the
        first request, ends the run without asking the model."""
        self._check_model()
        self.busy = True
        self.settled.clear()
        own = pre_run is None
        if pre_run is None:
            pre_run = self.begin_pre_run()
        # an abort that arrived before this prompt (no run to stop) is forgotten; one
        # that arrived while this prompt's input hook ran is not
        self.abort_requested = pre_run.signal.aborted
        aborted = False
        try:
            self._queues.flush_bash()
            if not self.abort_requested:
                await self._compactor.maybe_compact()
            extra: list[AgentMessage] = []
            if not self.abort_requested:
                extra = await self._loadout.before_agent_start(prompt_text, images, custom)
            if not self.abort_requested:  # aborted before the first request: no run at all
                patch = self._loadout.patch(self._projection())
                messages: list[AgentMessage] = [patch] if patch is not None else []
                messages.append(message)
                messages += self._queues.take_next_turn()
                messages += extra
                self._retry.begin()
                await self.agent.prompt(messages)
                aborted = await self._after_runs()
        finally:
            self._loadout.end_run()
            self._queues.flush_bash()
            try:
                await self._settle(aborted or self.abort_requested)
            finally:
                if own:
                    self.end_pre_run(pre_run)

    async def _settle(self, aborted: bool) -> None:
        self.busy = False
        self._bridge.flush_custom()  # what a plugin sent without a turn of its own, not yet stored
        self._on_agent_settled()
        event = AgentSettledEvent.model_construct(aborted=aborted)
        if self.runner.has_handlers("agent_settled"):
            await self.runner.emit("agent_settled", event)
        self._emit(event)
        self.settled.set()
        await self._on_settled()

    async def _after_runs(self) -> bool:
        """Retries, overflow recovery, threshold compaction, queued work and the
        ``agent_before_settle`` boundary. Returns whether the run ended aborted."""
        while True:
            last = self._last_assistant()
            if self.abort_requested or (last is not None and last.stop_reason == "aborted"):
                return True
            if last is not None and last.stop_reason == "error":
                if await self._retry.prepare(last):
                    await self.agent.continue_()
                    continue
                if self._retry.take_overflow_recovery(last):
                    self._bridge.omit(last)
                    if await self._compactor.compact(reason="overflow", will_retry=True, raise_errors=False):
                        await self.agent.continue_()
                        continue
                    return False
            elif last is not None:
                self._retry.succeeded()
                await self._compactor.maybe_compact()
            if self.agent.has_queued_messages():
                await self.agent.continue_()
                continue
            outcome: Literal["completed", "error"] = (
                "error" if last is not None and last.stop_reason == "error" else "completed"
            )
            if await self._bridge.before_settle(outcome) and not self.abort_requested:
                messages = self.agent.state.messages
                if messages and messages[-1].role != "assistant":
                    await self.agent.continue_()
                    continue
            return False


__all__ = ["RunLoop"]
