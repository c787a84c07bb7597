"""What the model is told besides the conversation: the system prompt and the tool
declarations, and how a run's ``before_agent_start`` handlers change them.

A transcript carries its prompt and tools as system messages; before a request,
:meth:`Loadout.patch` computes the system message (the *loadout patch*) that brings
them up to date, so only what changed is added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pi_hookspecs import (
    AgentMessage,
    BeforeAgentStartEvent,
    CustomMessage,
    ImageContent,
    SystemMessage,
    SystemPromptOptions,
)

from ..extensions import EventRunner
from ..resources.loader import Resources
from ..resources.system_prompt import build_system_prompt_sections, diff_system_prompt_sections, render_system_prompt
from ..session import current_system_message
from .tool_binding import ToolBinding


class Loadout:
    """The system prompt of the session's requests.

    * ``binding`` - the tools (their prompt lines; a handler may change the selection);
    * ``resources`` - everything else the prompt is built from;
    * ``runner`` - the ``before_agent_start`` handlers.
    """

    def __init__(self, binding: ToolBinding, *, resources: Resources, runner: EventRunner) -> None:
        self.binding = binding
        self.runner = runner
        self._resources = resources
        self.run_options: SystemPromptOptions | None = None
        """The options ``before_agent_start`` handlers saw (and changed) for this run."""
        self.forced_prompt: str | None = None
        """A whole system prompt a handler forced for this run."""
        self._head_cache: tuple[int, AgentMessage | None, SystemMessage | None] | None = None

    # ------------------------------------------------------------------ the prompt

    def system_prompt_options(self) -> SystemPromptOptions:
        tools = self.binding.tools
        declared = [d.name for d in tools.declared_definitions()]
        active = tools.active_definitions()
        return self._resources.system_prompt_options(
            selected_tools=[d.name for d in active],
            hidden_tools=[d.name for d in active if d.name not in declared],
            tool_snippets={d.name: d.prompt_snippet for d in active if d.prompt_snippet},
            tool_guidelines={d.name: list(d.prompt_guidelines) for d in active if d.prompt_guidelines},
        )

    def sections(self, options: SystemPromptOptions | None = None) -> dict[str, str]:
        return build_system_prompt_sections(options or self.run_options or self.system_prompt_options())

    @property
    def system_prompt(self) -> str:
        if self.forced_prompt is not None:
            return self.forced_prompt
        return render_system_prompt(self.sections())

    # ------------------------------------------------------------------ a run

    async def before_agent_start(
        self, prompt_text: str | None, images: Sequence[ImageContent], custom: CustomMessage | None
    ) -> list[AgentMessage]:
        """``before_agent_start``: handlers may add messages (returned), change the tool
        selection and the prompt's options, or force a whole system prompt."""
        if not self.runner.has_handlers("before_agent_start"):
            return []
        options = self.system_prompt_options()
        base_prompt = render_system_prompt(self.sections(options))
        fields: dict[str, Any] = {
            "message_type": "user" if custom is None else "custom",
            "prompt": prompt_text,
            "images": list(images),
            "message": custom,
            "system_prompt": base_prompt,
            "system_prompt_options": options,
        }
        typed = (custom is None or isinstance(custom, CustomMessage)) and all(
            isinstance(image, ImageContent) for image in images
        )
        # pi's own values (the options model, the prompt's blocks): constructed, not validated
        # (anything else a caller passed is validated, which names what is wrong).
        event = BeforeAgentStartEvent.model_construct(**fields) if typed else BeforeAgentStartEvent(**fields)
        self.run_options = options
        self.forced_prompt = None
        selected = list(options.selected_tools)
        results = await self.runner.emit("before_agent_start", event)
        self._settle_selection(options, selected)
        extra: list[AgentMessage] = []
        for result in results:
            if result.message is not None:
                draft = result.message
                extra.append(
                    CustomMessage(
                        custom_type=draft.custom_type,
                        content=draft.content,
                        display=draft.display,
                        details=draft.details,
                    )
                )
        if event.system_prompt != base_prompt:
            self.forced_prompt = event.system_prompt
        elif options.force_system_prompt:
            self.forced_prompt = options.force_system_prompt
        return extra

    def end_run(self) -> None:
        """The run is over: its forced prompt and options no longer apply."""
        self.forced_prompt = None
        self.run_options = None

    def _settle_selection(self, options: SystemPromptOptions, selected: list[str]) -> None:
        """After ``before_agent_start``: a handler that changed ``selected_tools`` chose the
        active tools; otherwise tools a handler (de)activated or registered through its
        ``ctx`` show in the options (with their prompt lines)."""
        active = [d.name for d in self.binding.tools.active_definitions()]
        if options.selected_tools != selected:
            if options.selected_tools != active:
                self.binding.set_active(options.selected_tools)
            return
        if active == selected:
            return
        fresh = self.system_prompt_options()
        options.selected_tools = fresh.selected_tools
        options.hidden_tools = fresh.hidden_tools
        for name in fresh.selected_tools:
            if name not in selected:
                if name in fresh.tool_snippets:
                    options.tool_snippets[name] = fresh.tool_snippets[name]
                if name in fresh.tool_guidelines:
                    options.tool_guidelines[name] = fresh.tool_guidelines[name]

    # ------------------------------------------------------------------ the transcript

    def patch(self, messages: Sequence[AgentMessage]) -> SystemMessage | None:
        """The system message that brings the transcript's prompt and tool declarations
        up to date (``None`` when they already are)."""
        sections = self.sections()
        declared = {d.name: d.declaration() for d in self.binding.tools.declared_definitions()}
        head = self.current_head(messages)
        if head is None:
            return SystemMessage.model_construct(
                sections=dict[str, str | None](sections), tools_added=list(declared.values())
            )
        section_patch = diff_system_prompt_sections(head.sections or {}, sections)
        current = {t.name: t for t in head.tools_added or []}
        added = [d for name, d in declared.items() if name not in current or current[name] != d]
        removed = [{"name": name} for name in current if name not in declared]
        if not section_patch and not added and not removed:
            return None
        return SystemMessage.model_validate(
            {
                "sections": section_patch or None,
                "toolsAdded": [a.model_dump() for a in added] or None,
                "toolsRemoved": removed or None,
            }
        )

    def current_head(self, messages: Sequence[AgentMessage]) -> SystemMessage | None:
        """The transcript's prompt and tools replayed into one system message. Replays
        only the messages added since the last call when the transcript just grew."""
        cached = self._head_cache
        if cached is not None:
            count, last, head = cached
            if len(messages) >= count and count and messages[count - 1] is last:
                tail = [m for m in messages[count:] if isinstance(m, SystemMessage)]
                if tail:
                    head = current_system_message([head, *tail] if head is not None else tail)
                self._head_cache = (len(messages), messages[-1] if messages else None, head)
                return head
        head = current_system_message(messages)
        self._head_cache = (len(messages), messages[-1] if messages else None, head) if messages else None
        return head


__all__ = ["Loadout"]
