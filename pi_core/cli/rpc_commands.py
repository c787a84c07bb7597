"""The RPC commands: one ``cmd_<type>`` method of :class:`RpcCommands` per command
``type`` of ``pi --mode rpc``.

A handler receives the command object and returns the response's ``data``
(:data:`~.rpc_ui.NO_DATA` for none, :data:`SENT` when it wrote the response itself),
or raises :class:`RpcError` with the response's ``error``. Reading commands, writing
responses and events, and the process's life cycle are :mod:`.rpc`'s; what the handlers
need of it is :class:`RpcHost`.

``prompt``, ``steer`` and ``follow_up`` are answered as soon as the input is accepted
(``data.disposition``); the run goes on in the background (tracked by the host) and
reports through events. The choices ``set_auto_compaction``, ``set_auto_retry``,
``set_steering_mode`` and ``set_follow_up_mode`` make last for the process: they are
applied again to each session that replaces the current one (:meth:`RpcCommands.apply_choices`).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, Literal, Protocol

from pi_hookspecs import (
    AbortController,
    AssistantMessage,
    ImageContent,
    MessageEntry,
    TextContent,
    UserMessage,
)

from ..agent.types import QueueMode
from ..ai.models import supported_thinking_levels
from ..compaction import estimate_context_tokens
from ..runtime import AgentSession, SessionBusyError, SessionRuntime
from ..session.persistence import SessionWriteError
from .bootstrap import model_scope
from .rpc_ui import NO_DATA, RawJson, RpcOutput, RpcUI, dumps

Command = dict[str, Any]
Handler = Callable[[Command], Awaitable[Any]]

SENT: Any = object()
"""Returned by a handler that has written its response itself."""

STREAMING_BEHAVIORS: dict[str, Literal["steer", "follow_up"]] = {
    "steer": "steer",
    "followUp": "follow_up",
    "follow_up": "follow_up",
}
QUEUE_MODES: dict[str, QueueMode] = {"all": "all", "one-at-a-time": "one-at-a-time"}


class RpcError(Exception):
    """A command failed; the message is the response's ``error``."""


class RpcHost(Protocol):
    """What the handlers need of the server that speaks the protocol."""

    args: argparse.Namespace
    output: RpcOutput
    ui: RpcUI
    runtime: SessionRuntime | None

    @property
    def is_compacting(self) -> bool:
        """Whether a compaction is running (between its start and end events)."""
        ...

    @property
    def session_write_failed(self) -> bool:
        """Whether the session file could not be written (already reported)."""
        ...

    def track_run(self, run: Coroutine[Any, Any, str]) -> asyncio.Future[str]:
        """``run`` started as a task that shutdown waits for."""
        ...


class RpcCommands:
    """The command handlers of one RPC server."""

    def __init__(self, host: RpcHost) -> None:
        self.host = host
        self._accept_lock = asyncio.Lock()
        self._bash: set[AbortController] = set()
        # per-process choices that survive new_session / switch_session / fork
        self._auto_compaction: bool | None = None
        self._auto_retry: bool | None = None
        self._steering_mode: QueueMode | None = None
        self._follow_up_mode: QueueMode | None = None

    def handlers(self) -> dict[str, Handler]:
        """Command ``type`` -> handler."""
        return {name[len("cmd_") :]: getattr(self, name) for name in dir(self) if name.startswith("cmd_")}

    @property
    def runtime(self) -> SessionRuntime:
        runtime = self.host.runtime
        assert runtime is not None
        return runtime

    @property
    def session(self) -> AgentSession:
        return self.runtime.session

    def apply_choices(self, session: AgentSession) -> None:
        """Give ``session`` (the first one, or one that replaces it) the choices made so far."""
        if self._auto_compaction is not None:
            session.auto_compaction = self._auto_compaction
        if self._auto_retry is not None:
            session.auto_retry = self._auto_retry
        if self._steering_mode is not None:
            session.agent.steering_mode = self._steering_mode
        if self._follow_up_mode is not None:
            session.agent.follow_up_mode = self._follow_up_mode

    def abort_bash(self) -> None:
        """Abort every ``bash`` command in flight."""
        for controller in list(self._bash):
            controller.abort()

    # ================================================================== prompting

    async def _submit(
        self, command: Command, *, name: str, behavior: Literal["steer", "follow_up"] | None, commands: bool
    ) -> Any:
        text = _string(command, "message")
        images = _images(command)
        session = self.session
        if not commands and text.startswith("/"):
            command_name = text[1:].split(" ", 1)[0]
            if command_name in session.plugins.registry.commands:
                raise RpcError(f"Extension commands are not allowed with {name}: send /{command_name} with prompt")
        loop = asyncio.get_running_loop()
        started: asyncio.Future[None] = loop.create_future()

        def on_started() -> None:  # the response goes out before any event of the run
            if not started.done():
                started.set_result(None)
                self.host.output.response(name, id=command.get("id"), data={"disposition": "started"})

        async with self._accept_lock:  # inputs are accepted (started, queued, rejected) in order
            run = self.host.track_run(self._prompt(session, text, images, behavior, on_started, started))
            waiters: list[asyncio.Future[Any]] = [started, run]
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        if started.done():
            return SENT
        try:
            return {"disposition": run.result()}
        except SessionBusyError as exc:
            raise RpcError(
                'Agent is busy with a run: set "streamingBehavior" to "steer" or "followUp" to queue the message'
            ) from exc

    async def _prompt(
        self,
        session: AgentSession,
        text: str,
        images: list[ImageContent],
        behavior: Literal["steer", "follow_up"] | None,
        on_started: Callable[[], None],
        started: asyncio.Future[None],
    ) -> str:
        try:
            return await session.prompt(
                text, images=images, source="rpc", streaming_behavior=behavior, on_started=on_started
            )
        except Exception as exc:
            if not started.done():
                raise
            if not (isinstance(exc, SessionWriteError) and self.host.session_write_failed):
                print(f"pi: the run failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            return "started"

    async def cmd_prompt(self, command: Command) -> Any:
        behavior = command.get("streamingBehavior")
        if behavior is not None and behavior not in STREAMING_BEHAVIORS:
            raise RpcError(f'Invalid streamingBehavior {behavior!r}: use "steer" or "followUp"')
        return await self._submit(
            command, name="prompt", behavior=STREAMING_BEHAVIORS.get(behavior or ""), commands=True
        )

    async def cmd_steer(self, command: Command) -> Any:
        return await self._submit(command, name="steer", behavior="steer", commands=False)

    async def cmd_follow_up(self, command: Command) -> Any:
        return await self._submit(command, name="follow_up", behavior="follow_up", commands=False)

    async def cmd_abort(self, command: Command) -> Any:
        session = self.session
        session.abort()
        self.host.ui.cancel_pending()  # a dialog the run waits for must not keep it alive
        await session.abort_and_wait()
        return NO_DATA

    async def cmd_clear_queue(self, command: Command) -> Any:
        steering, follow_up = self.session.clear_queue()
        return {"steering": steering, "followUp": follow_up}

    # ================================================================== state

    async def cmd_get_state(self, command: Command) -> Any:
        session = self.session
        agent = session.agent
        state: dict[str, Any] = {}
        if session.model is not None:
            state["model"] = session.model.to_json()
        state.update(
            thinkingLevel=session.thinking_level,
            isStreaming=session.is_busy,
            isCompacting=self.host.is_compacting,
            steeringMode=agent.steering_mode,
            followUpMode=agent.follow_up_mode,
        )
        if session.session_file is not None:
            state["sessionFile"] = session.session_file
        state["sessionId"] = session.sm.get_session_id()
        name = session.sm.get_session_name()
        if name:
            state["sessionName"] = name
        state.update(
            autoCompactionEnabled=session.auto_compaction_enabled,
            autoRetryEnabled=session.auto_retry_enabled,
            messageCount=len(session.messages),
            pendingMessageCount=len(agent.queued_steering) + len(agent.queued_follow_up),
        )
        return state

    async def cmd_get_messages(self, command: Command) -> Any:
        return {"messages": [message.to_json() for message in self.session.messages]}

    # ================================================================== model and thinking

    async def cmd_set_model(self, command: Command) -> Any:
        provider, model_id = _string(command, "provider"), _string(command, "modelId")
        session = self.session
        model = session.models.get(provider, model_id)
        if model is None:
            raise RpcError(f"Model not found: {provider}/{model_id}")
        if not await session.set_model(model):
            raise RpcError(f"No API key for provider {provider!r}: cannot select {provider}/{model_id}")
        return model.to_json()

    async def cmd_cycle_model(self, command: Command) -> Any:
        session = self.session
        registry = session.models
        patterns = model_scope(self.host.args, session.services.resources.settings)
        scoped = bool(patterns)
        offered = registry.available(session.model)
        if scoped:
            selections, _warnings = registry.resolve_scope(patterns)
            offered_refs = {model.ref for model in offered}
            candidates = [(s.model, s.thinking_level) for s in selections if s.model.ref in offered_refs]
        else:
            candidates = [(model, None) for model in offered]
        if len(candidates) < 2:
            return None
        current = session.model
        refs = [model.ref for model, _ in candidates]
        index = refs.index(current.ref) if current is not None and current.ref in refs else -1
        model, level = candidates[(index + 1) % len(candidates)]
        if not await session.set_model(model, source="cycle", thinking_level=level):
            raise RpcError(f"No API key for provider {model.provider!r}")
        return {"model": model.to_json(), "thinkingLevel": session.thinking_level, "isScoped": scoped}

    async def cmd_get_available_models(self, command: Command) -> Any:
        session = self.session
        return {"models": [model.to_json() for model in session.models.available(session.model)]}

    async def cmd_set_thinking_level(self, command: Command) -> Any:
        # As pi 1.6.0: a level the model does not support, an unknown one included, is
        # clamped (an unknown one to the model's first level).
        await self.session.set_thinking_level(_string(command, "level"))
        return NO_DATA

    async def cmd_cycle_thinking_level(self, command: Command) -> Any:
        session = self.session
        levels = _thinking_levels(session)
        if len(levels) < 2:
            return None
        current = session.thinking_level
        index = levels.index(current) if current in levels else -1
        return {"level": await session.set_thinking_level(levels[(index + 1) % len(levels)])}

    async def cmd_get_available_thinking_levels(self, command: Command) -> Any:
        return {"levels": _thinking_levels(self.session)}

    async def cmd_set_steering_mode(self, command: Command) -> Any:
        self._steering_mode = self.session.agent.steering_mode = _queue_mode(command)
        return NO_DATA

    async def cmd_set_follow_up_mode(self, command: Command) -> Any:
        self._follow_up_mode = self.session.agent.follow_up_mode = _queue_mode(command)
        return NO_DATA

    # ================================================================== compaction and retry

    async def cmd_compact(self, command: Command) -> Any:
        instructions = command.get("customInstructions")
        if instructions is not None and not isinstance(instructions, str):
            raise RpcError('"customInstructions" must be a string')
        session = self.session
        if session.is_busy:
            raise RpcError("Cannot compact while a run is active: abort it or wait for agent_settled")
        entry = await session.compact(instructions or None)
        if entry is None:
            raise RpcError("Compaction was cancelled by an extension")
        data: dict[str, Any] = {
            "summary": entry.summary,
            "firstKeptEntryId": entry.first_kept_entry_id,
            "tokensBefore": entry.tokens_before,
            # as compaction_end reports it: every message of the new context estimated
            "estimatedTokensAfter": estimate_context_tokens(list(session.messages), use_usage=False).tokens,
        }
        if entry.usage is not None:
            data["usage"] = entry.usage.to_json()
        data["details"] = entry.details if entry.details is not None else {}
        return data

    async def cmd_set_auto_compaction(self, command: Command) -> Any:
        self._auto_compaction = self.session.auto_compaction = _bool(command, "enabled")
        return NO_DATA

    async def cmd_set_auto_retry(self, command: Command) -> Any:
        self._auto_retry = self.session.auto_retry = _bool(command, "enabled")
        return NO_DATA

    async def cmd_abort_retry(self, command: Command) -> Any:
        self.session.abort_retry()
        return NO_DATA

    # ================================================================== bash

    async def cmd_bash(self, command: Command) -> Any:
        text = _string(command, "command")
        exclude = command.get("excludeFromContext", False)
        if not isinstance(exclude, bool):
            raise RpcError('"excludeFromContext" must be true or false')
        command_id = command.get("id")
        output = self.host.output

        def on_data(chunk: str) -> None:
            record: dict[str, Any] = {"type": "bash_execution_update"}
            if command_id is not None:
                record["id"] = command_id
            record["delta"] = chunk
            output.write(record)

        controller = AbortController()
        self._bash.add(controller)
        try:
            message = await self.session.execute_bash(
                text, exclude_from_context=exclude, on_data=on_data, signal=controller.signal
            )
        finally:
            self._bash.discard(controller)
        data: dict[str, Any] = {"output": message.output}
        if message.exit_code is not None:  # absent when cancelled, as pi 1.6.0
            data["exitCode"] = message.exit_code
        data["cancelled"] = bool(message.cancelled)
        data["truncated"] = bool(message.truncated)
        if message.full_output_path:
            data["fullOutputPath"] = message.full_output_path
        return data

    async def cmd_abort_bash(self, command: Command) -> Any:
        self.abort_bash()
        return NO_DATA

    # ================================================================== session

    async def cmd_new_session(self, command: Command) -> Any:
        parent = command.get("parentSession")
        if parent is not None and not isinstance(parent, str):
            raise RpcError('"parentSession" must be a string')
        result = await self.runtime.new_session(parent_session=parent)
        return {"cancelled": bool(result.get("cancelled"))}

    async def cmd_switch_session(self, command: Command) -> Any:
        # As pi 1.6.0: a path where no file is yet starts a new session to be saved there.
        path = _string(command, "sessionPath")
        if Path(path).expanduser().is_dir():
            raise RpcError(f"Not a session file: {path} is a directory")
        result = await self.runtime.switch_session(path)
        return {"cancelled": bool(result.get("cancelled"))}

    async def cmd_fork(self, command: Command) -> Any:
        entry_id = _string(command, "entryId")
        entry = self.session.sm.get_entry(entry_id)
        if entry is None or not isinstance(getattr(entry, "message", None), UserMessage):
            raise RpcError("Invalid entry ID for forking")  # pi 1.6.0's words, for both
        self._check_saved(entry.parent_id)
        result = await self.runtime.fork(entry_id, position="before")
        if result.get("cancelled"):
            return {"cancelled": True}
        return {"text": result.get("editor_text") or "", "cancelled": False}

    async def cmd_clone(self, command: Command) -> Any:
        leaf = self.session.sm.get_leaf_id()
        if leaf is None:
            raise RpcError("Cannot clone session: no current entry selected")
        self._check_saved(leaf)
        result = await self.runtime.fork(leaf, position="at")
        return {"cancelled": bool(result.get("cancelled"))}

    def _check_saved(self, target_leaf: str | None) -> None:
        """As pi 1.6.0: a fork or clone that keeps entries copies them from the session
        file, which a new session has only once its first answer is saved."""
        session_file = self.session.session_file
        if target_leaf is not None and session_file is not None and not Path(session_file).exists():
            raise RpcError("This session has not been saved yet. Send a message before cloning or forking it.")

    async def cmd_get_fork_messages(self, command: Command) -> Any:
        # As pi 1.6.0: every user message of the session (all branches, in file order),
        # not only those of the current branch; messages without text are left out.
        messages = []
        for entry in self.session.sm.get_entries():
            message = getattr(entry, "message", None)
            if isinstance(message, UserMessage):
                text = _text(message.content)
                if text:
                    messages.append({"entryId": entry.id, "text": text})
        return {"messages": messages}

    async def cmd_get_entries(self, command: Command) -> Any:
        since = command.get("since")
        if since is not None and not isinstance(since, str):
            raise RpcError('"since" must be an entry id (a string)')
        sm = self.session.sm
        entries = sm.get_entries()
        if since is not None:
            index = next((i for i, entry in enumerate(entries) if entry.id == since), None)
            if index is None:
                raise RpcError(f"Entry not found: {since}")
            entries = entries[index + 1 :]
        return {"entries": [entry.to_json() for entry in entries], "leafId": sm.get_leaf_id()}

    async def cmd_get_tree(self, command: Command) -> Any:
        sm = self.session.sm
        return RawJson('{"tree":' + _tree_json(sm.get_tree()) + ',"leafId":' + dumps(sm.get_leaf_id()) + "}")

    async def cmd_get_last_assistant_text(self, command: Command) -> Any:
        # As pi 1.6.0: the last reply that ended normally or has text (a run that was
        # aborted, failed or only called tools is skipped), trimmed; no "text" without one.
        for message in reversed(self.session.messages):
            if not isinstance(message, AssistantMessage):
                continue
            text = "".join(block.text for block in message.content if isinstance(block, TextContent))
            if message.stop_reason != "stop" and not text.strip():
                continue
            return {"text": text.strip()} if text.strip() else {}
        return {}

    async def cmd_set_session_name(self, command: Command) -> Any:
        name = _string(command, "name").strip()
        if not name:
            raise RpcError("Session name cannot be empty")
        await self.session.set_session_name(name)
        return NO_DATA

    async def cmd_get_session_stats(self, command: Command) -> Any:
        return _session_stats(self.session)

    async def cmd_export_html(self, command: Command) -> Any:
        output = command.get("outputPath")
        if output is not None and not isinstance(output, str):
            raise RpcError('export_html "outputPath" must be a file path (a string)')
        from ..export.html import ExportError, snapshot_session  # only when exporting

        session = self.session
        try:
            snapshot = snapshot_session(session.sm)
            tools = [d.declaration() for d in session.tools.declared_definitions()]
            # the page is rendered away from the event loop; the session may go on meanwhile
            path = await asyncio.to_thread(
                snapshot.write_html, output or None, system_prompt=session.system_prompt, tools=tools
            )
        except ExportError as exc:
            raise RpcError(str(exc)) from None
        return {"path": str(path)}

    async def cmd_get_commands(self, command: Command) -> Any:
        return {"commands": _commands(self.session)}


# ====================================================================== helpers


def _string(command: Command, key: str) -> str:
    value = command.get(key)
    if not isinstance(value, str):
        raise RpcError(f'{command.get("type")} needs a string "{key}"')
    return value


def _bool(command: Command, key: str) -> bool:
    value = command.get(key)
    if not isinstance(value, bool):
        raise RpcError(f'{command.get("type")} needs "{key}": true or false')
    return value


def _queue_mode(command: Command) -> QueueMode:
    mode = command.get("mode")
    if not isinstance(mode, str) or mode not in QUEUE_MODES:
        raise RpcError(f'Invalid mode {mode!r}: use "all" or "one-at-a-time"')
    return QUEUE_MODES[mode]


def _images(command: Command) -> list[ImageContent]:
    raw = command.get("images")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RpcError('"images" must be a list of {"type": "image", "data": ..., "mimeType": ...}')
    images = []
    for index, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("data"), str) or not item.get("mimeType"):
            raise RpcError(f'images[{index}] needs "data" (base64) and "mimeType"')
        images.append(ImageContent(data=item["data"], mime_type=item["mimeType"]))
    return images


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(block, "text", "") for block in content or [])


def js_number(value: Any) -> Any:
    """``value`` as JavaScript writes it: a whole float without ``.0`` (``0``, not ``0.0``)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _thinking_levels(session: AgentSession) -> list[str]:
    model = session.model
    return supported_thinking_levels(model) if model is not None else ["off"]


def _tree_json(roots: list[Any]) -> str:
    """The session tree as nested JSON, built without recursion (a long session is a
    chain thousands of nodes deep, beyond what ``json.dumps`` can nest)."""
    parts: list[str] = ["["]
    stack: list[tuple[list[Any], int]] = [(roots, 0)]
    while stack:
        nodes, index = stack.pop()
        if index >= len(nodes):
            parts.append("]")
            if stack:
                parts.append("}")
            continue
        if index:
            parts.append(",")
        node = nodes[index]
        stack.append((nodes, index + 1))
        parts.append('{"entry":' + dumps(node.entry.to_json()))
        if node.label is not None:
            parts.append(',"label":' + dumps(node.label))
        if node.label_timestamp is not None:
            parts.append(',"labelTimestamp":' + dumps(node.label_timestamp))
        parts.append(',"children":[')
        stack.append((node.children, 0))
    return "".join(parts)


def _session_stats(session: AgentSession) -> dict[str, Any]:
    counts = {"user": 0, "assistant": 0, "toolResult": 0}
    tool_calls = total_messages = 0
    tokens = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    cost = 0.0

    def add(usage: Any) -> None:
        nonlocal cost
        if usage is None:
            return
        tokens["input"] += usage.input
        tokens["output"] += usage.output
        tokens["cacheRead"] += usage.cache_read
        tokens["cacheWrite"] += usage.cache_write
        tokens["total"] += usage.total_tokens or (usage.input + usage.output + usage.cache_read + usage.cache_write)
        cost += usage.cost.total

    for entry in session.sm.get_entries():
        kind = entry.type
        if isinstance(entry, MessageEntry):
            message = entry.message
            role = getattr(message, "role", None)
            total_messages += 1
            if role in counts:
                counts[role] += 1
            if isinstance(message, AssistantMessage):
                tool_calls += sum(1 for block in message.content if getattr(block, "type", None) == "toolCall")
            add(getattr(message, "usage", None))
        elif kind in ("compaction", "branch_summary", "usage"):
            add(getattr(entry, "usage", None))
    stats: dict[str, Any] = {}
    if session.session_file is not None:
        stats["sessionFile"] = session.session_file
    stats.update(
        sessionId=session.sm.get_session_id(),
        userMessages=counts["user"],
        assistantMessages=counts["assistant"],
        toolCalls=tool_calls,
        toolResults=counts["toolResult"],
        totalMessages=total_messages,
        tokens=tokens,
        cost=js_number(cost),
    )
    usage = session.context_host.action_get_context_usage()
    if usage is not None and usage.context_window:
        stats["contextUsage"] = {
            "tokens": usage.tokens,
            "contextWindow": usage.context_window,
            "percent": js_number(usage.percent),
        }
    return stats


def _source_info(path: str | None, source: str, cwd: str, agent_dir: Path) -> dict[str, Any]:
    scope = "temporary"
    if path:
        resolved = Path(path).resolve()
        if resolved.is_relative_to(Path(cwd).resolve() / ".pi"):
            scope = "project"
        elif resolved.is_relative_to(agent_dir.resolve()):
            scope = "user"
    info: dict[str, Any] = {"source": source, "scope": scope, "origin": "top-level"}
    if path:
        info["path"] = path
    return info


def _commands(session: AgentSession) -> list[dict[str, Any]]:
    cwd, agent_dir = session.cwd, session.services.agent_dir
    records = {record.name: record for record in session.plugins.records}
    out: list[dict[str, Any]] = []
    for name, registered in session.plugins.registry.commands.items():
        record = records.get(registered.plugin)
        path = (record.source.path or record.source.origin) if record is not None else None
        item: dict[str, Any] = {"name": name}
        if registered.value.description:
            item["description"] = registered.value.description
        item["source"] = "extension"
        item["sourceInfo"] = _source_info(path, registered.source, cwd, agent_dir)
        out.append(item)
    resources = session.services.resources
    for template in resources.prompt_templates:
        out.append(
            {
                "name": template.name,
                "description": template.description,
                "source": "prompt",
                "sourceInfo": _source_info(template.file_path, template.source, cwd, agent_dir),
            }
        )
    for skill in resources.skills:
        out.append(
            {
                "name": f"skill:{skill.name}",
                "description": skill.description,
                "source": "skill",
                "sourceInfo": {
                    **_source_info(skill.file_path, skill.source, cwd, agent_dir),
                    "baseDir": skill.base_dir,
                },
            }
        )
    return out


__all__ = ["SENT", "Command", "Handler", "RpcCommands", "RpcError", "RpcHost"]
