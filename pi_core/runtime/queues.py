"""Messages that wait for a run: user steering and follow-ups queued while the agent
works (and shown to the host until they are delivered), plugin messages for the next
turn, user ``!cmd`` results held back until the run ends, and plugin messages
delivered as pi 1.6.0 delivers them (``send_custom_message``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from pi_hookspecs import AgentMessage, CustomMessage, MessageEndEvent, MessageStartEvent, UserMessage

from ..agent import Agent
from . import events  # QueueUpdateEvent: made when a message is first queued
from .navigation import message_text
from .ports import Emit, Sync


class MessageQueues:
    """The session's waiting messages.

    * ``persist(message)`` / ``hold(message)`` - store a message now / at the next turn end;
    * ``is_busy()`` - a run is active;
    * ``start_run(message)`` - run the agent on a plugin message that triggers a turn.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        emit: Emit,
        sync: Sync,
        persist: Callable[[AgentMessage], None],
        hold: Callable[[CustomMessage], None],
        is_busy: Callable[[], bool],
        start_run: Callable[[CustomMessage], Awaitable[None]],
    ) -> None:
        self.agent = agent
        self._emit = emit
        self._sync = sync
        self._persist = persist
        self._hold = hold
        self._is_busy = is_busy
        self._start_run = start_run
        self.next_turn: list[AgentMessage] = []
        """Plugin messages delivered as ``next_turn``: sent with the next prompt."""
        self._bash: list[AgentMessage] = []
        self._steer: list[str] = []
        self._follow_up: list[str] = []

    # ------------------------------------------------------------------ user input during a run

    def steer(self, text: str, message: UserMessage) -> None:
        self._steer.append(text)
        self.agent.steer(message)
        self._emit_queue()

    def follow_up(self, text: str, message: UserMessage) -> None:
        self._follow_up.append(text)
        self.agent.follow_up(message)
        self._emit_queue()

    def dequeue_display(self, message: UserMessage) -> None:
        """A queued user message reached the context: the host stops showing it as queued."""
        text = message_text(message.content)
        for queue in (self._steer, self._follow_up):
            if text in queue:
                queue.remove(text)
                self._emit_queue()
                return

    def clear(self) -> tuple[list[str], list[str]]:
        """Drop the queued steering and follow-up messages; returns their texts."""
        steering, follow_up = list(self._steer), list(self._follow_up)
        self.agent.clear_queues()
        self._steer, self._follow_up = [], []
        self._emit_queue()
        return steering, follow_up

    def _emit_queue(self) -> None:
        self._emit(events.QueueUpdateEvent(steering=list(self._steer), follow_up=list(self._follow_up)))

    # ------------------------------------------------------------------ held messages

    def take_next_turn(self) -> list[AgentMessage]:
        messages, self.next_turn = self.next_turn, []
        return messages

    def flush_bash(self) -> None:
        """Store the user ``!cmd`` results held during the run."""
        for message in self._bash:
            self._persist(message)
        self._bash = []
        self._sync()

    def record_bash(self, message: AgentMessage) -> None:
        """Store a user ``!cmd`` result now, or after the run when one is active (a bash
        message between a tool call and its result would break the transcript)."""
        if self._is_busy():
            self._bash.append(message)
        else:
            self._persist(message)
            self._sync()

    async def send_custom_message(
        self, message: CustomMessage, *, deliver_as: str = "follow_up", trigger_turn: bool | None = None
    ) -> None:
        """A plugin message for the context, as pi 1.6.0 delivers it: ``next_turn`` waits
        for the next prompt; during a run it is steering or a follow-up, unless
        ``trigger_turn`` is ``False`` (then it is stored at the next turn end, without a
        turn of its own); when idle it is stored, starting a run when ``trigger_turn``."""
        if deliver_as == "next_turn":
            self.next_turn.append(message)
            return
        if self._is_busy():
            if trigger_turn is False:
                self._hold(message)
            elif deliver_as == "steer":
                self.agent.steer(message)
            else:
                self.agent.follow_up(message)
            return
        if trigger_turn:
            await self._start_run(message)
            return
        self._persist(message)
        self._sync()
        # pi 1.6.0 announces the stored message to clients (RPC, json, terminal)
        self._emit(MessageStartEvent.model_construct(message=message))
        self._emit(MessageEndEvent.model_construct(message=message))


__all__ = ["MessageQueues"]
