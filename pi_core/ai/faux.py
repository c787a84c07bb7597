"""A scripted, offline model: the ``faux`` API.

    script = FauxScript([
        FauxResponse(tool_calls=[("bash", {"command": "ls"})]),
        lambda context: FauxResponse(text="I saw: " + last_tool_result_text(context)),
    ])
    model = faux_model(script)
    message = await complete(model, LlmContext(messages=[...]))

Each request takes the next entry of the script (a :class:`FauxResponse`, a string,
or a callable receiving the :class:`LlmContext`), and streams it with the same event
shapes as a real provider: text in small deltas, tool-call arguments as JSON pieces.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pi_hookspecs import (
    AbortError,
    LlmContext,
    Model,
    StreamOptions,
    SystemMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

from .._async import maybe_await
from ._offline_demo import OFFLINE_DEMO, OFFLINE_DEMO_KEY
from .errors import ProviderError
from .message_stream import MessageBuilder
from .transform import current_tools

_CHUNK = re.compile(r"\S+\s*|\s+")


@dataclass
class FauxResponse:
    """One scripted answer.

    ``tool_calls`` holds ``(name, arguments)`` pairs or :class:`ToolCall` values.
    ``stop_reason`` defaults to ``toolUse`` with tool calls, else ``stop``; an
    ``error_message`` ends the answer with ``stop_reason="error"`` after streaming the
    content. ``usage`` (a :class:`Usage` or a dict of its fields) defaults to an
    estimate of four characters a token.
    """

    text: str = ""
    thinking: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]] | ToolCall] = field(default_factory=list)
    stop_reason: str | None = None
    error_message: str | None = None
    usage: Usage | dict[str, Any] | None = None
    thinking_signature: str | None = None


FauxResult = FauxResponse | str
FauxEntry = FauxResponse | str | Callable[[LlmContext], FauxResult | Awaitable[FauxResult]]


class FauxScriptExhausted(ProviderError):
    """A request arrived after the script's last response."""


class FauxScript:
    """A queue of scripted answers, consumed one per request.

    ``fallback`` (a callable like the entries) answers every request once the queue
    is empty; without one, such a request fails with a clear error message.
    ``contexts`` records the context of every request, for assertions (unless
    ``keep_contexts`` is false, for long-running scripts).
    """

    def __init__(
        self, responses: Iterable[FauxEntry] = (), *, fallback: FauxEntry | None = None, keep_contexts: bool = True
    ) -> None:
        self._queue: deque[FauxEntry] = deque(responses)
        self.fallback = fallback
        self.contexts: list[LlmContext] = []
        self.keep_contexts = keep_contexts
        self._requests = 0
        self._scripted = len(self._queue)
        self._call_ids = 0

    def add(self, *responses: FauxEntry) -> FauxScript:
        """Append responses; returns the script."""
        self._queue.extend(responses)
        self._scripted += len(responses)
        return self

    @property
    def remaining(self) -> int:
        return len(self._queue)

    @property
    def requests(self) -> int:
        """How many requests the script has answered (or refused)."""
        return self._requests

    def next_call_id(self) -> str:
        self._call_ids += 1
        return f"faux_call_{self._call_ids}"

    async def next_response(self, context: LlmContext) -> FauxResponse:
        """The answer to one request (records ``context`` unless ``keep_contexts`` is off)."""
        self._requests += 1
        if self.keep_contexts:
            self.contexts.append(context)
        if self._queue:
            entry: FauxEntry = self._queue.popleft()
        elif self.fallback is not None:
            entry = self.fallback
        else:
            raise FauxScriptExhausted(
                f"Faux script exhausted: request {self.requests} has no scripted response "
                f"(the script had {self._scripted}). Add responses with FauxScript.add()."
            )
        result: Any = entry
        if callable(entry) and not isinstance(entry, FauxResponse):
            result = await maybe_await(entry(context))
        if isinstance(result, str):
            return FauxResponse(text=result)
        if not isinstance(result, FauxResponse):
            raise TypeError(f"a faux script entry returned {type(result).__name__}, expected FauxResponse or str")
        return result


_SCRIPTS: dict[tuple[str, str], FauxScript] = {}


def faux_model(script: FauxScript, id: str = "faux", provider: str = "faux", **model_fields: Any) -> Model:
    """A :class:`Model` with ``api="faux"`` answered by ``script`` (registered for the
    process under ``provider/id``; a later call with the same pair replaces it)."""
    fields: dict[str, Any] = {"name": f"Faux ({id})", "context_window": 128_000, "max_tokens": 16_384}
    fields.update(model_fields)
    model = Model(id=id, provider=provider, api="faux", **fields)
    _SCRIPTS[(provider, id)] = script
    return model


def faux_script_for(model: Model) -> FauxScript | None:
    """The script registered for ``model`` (by provider and id); ``faux/offline-demo``'s
    is registered when first asked for."""
    key = (model.provider, model.id)
    script = _SCRIPTS.get(key)
    if script is None and key == OFFLINE_DEMO_KEY:
        script = _SCRIPTS[key] = offline_demo_script()
    return script


def register_faux_script(provider: str, id: str, script: FauxScript) -> None:
    _SCRIPTS[(provider, id)] = script


def _chunks(text: str, words: int = 2) -> list[str]:
    pieces = _CHUNK.findall(text)
    return ["".join(pieces[i : i + words]) for i in range(0, len(pieces), words)] or ([text] if text else [])


def _estimate(text: str) -> int:
    return (len(text) + 3) // 4


def _message_chars(message: Any) -> int:
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return len(content)
    total = 0
    if isinstance(content, list):
        for block in content:
            total += len(getattr(block, "text", "") or getattr(block, "thinking", "") or "")
            if isinstance(block, ToolCall):
                total += len(json.dumps(block.arguments))
    return total


_prefix: list[Any] = [0, None, 0]  # messages counted, the last of them, their characters


def _context_chars(context: LlmContext) -> int:
    """The characters of a request, for the usage estimate. A conversation grows by
    appending, so the total of the part seen in the previous request is reused: the
    scripted model must not cost O(history) per turn."""
    messages = context.messages
    count, last, total = _prefix
    if not (count and len(messages) >= count and messages[count - 1] is last):
        count, total = 0, 0
    for message in messages[count:]:
        total += _message_chars(message)
    if messages:
        _prefix[:] = [len(messages), messages[-1], total]
    return int(total) + len(context.system_prompt or "")


async def stream_faux(model: Model, context: LlmContext, options: StreamOptions, out: MessageBuilder) -> None:
    """The ``faux`` API: stream the next scripted answer of ``model``'s script."""
    script = faux_script_for(model)
    if script is None:
        raise ProviderError(
            f"No faux script is registered for {model.provider}/{model.id}; create it with faux_model()."
        )
    response = await script.next_response(context)
    out.start()
    produced = 0
    if response.thinking:
        index = out.thinking_start(signature=response.thinking_signature)
        for piece in _chunks(response.thinking):
            await asyncio.sleep(0)
            out.thinking_delta(index, piece)
        out.thinking_end(index)
        produced += len(response.thinking)
    if response.text:
        index = out.text_start()
        for piece in _chunks(response.text):
            await asyncio.sleep(0)
            out.text_delta(index, piece)
        out.text_end(index)
        produced += len(response.text)
    for call in response.tool_calls:
        if isinstance(call, ToolCall):
            call_id, name, arguments = call.id or script.next_call_id(), call.name, call.arguments
        else:
            name, arguments = call
            call_id = script.next_call_id()
        index = out.tool_start(call_id, name)
        text = json.dumps(arguments or {})
        for start in range(0, len(text), 16):
            await asyncio.sleep(0)
            out.tool_delta(index, text[start : start + 16])
        out.tool_end(index)
        produced += len(text)
    usage = response.usage
    if isinstance(usage, Usage):
        usage = usage.model_dump()
    if usage:
        known = {"input", "output", "cache_read", "cache_write", "cache_write_1h", "reasoning", "total_tokens"}
        out.set_usage(**{k: v for k, v in Usage.model_validate(usage).model_dump().items() if k in known})
    else:
        out.set_usage(input=_estimate("x" * _context_chars(context)), output=_estimate("x" * produced))
    out.message.response_id = f"faux-{script.requests}"
    if response.stop_reason == "aborted":
        raise AbortError("scripted abort")
    if response.error_message or response.stop_reason == "error":
        raise ProviderError(response.error_message or "Scripted error")
    out.stop(response.stop_reason or ("toolUse" if response.tool_calls else "stop"))


# --------------------------------------------------------------------------- offline demo

DEMO_NOTE = "(This is pi's offline demo model. Configure a provider, e.g. set ANTHROPIC_API_KEY, for real answers.)"


def _last_turn(context: LlmContext) -> Any:
    for message in reversed(context.messages):
        if not isinstance(message, SystemMessage):
            return message
    return None


def _user_text(message: UserMessage) -> str:
    if isinstance(message.content, str):
        return message.content
    return " ".join(b.text for b in message.content if isinstance(b, TextContent))


def _demo_answer(context: LlmContext) -> FauxResponse:
    last = _last_turn(context)
    if isinstance(last, ToolResultMessage):
        output = "\n".join(b.text for b in last.content if isinstance(b, TextContent)).strip()
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        if last.is_error:
            detail = lines[0] if lines else "no output"
            return FauxResponse(text=f"The `ls` command failed: {detail}\n\n{DEMO_NOTE}")
        if not lines:
            return FauxResponse(
                text=f"The `ls` command ran and printed nothing: the directory looks empty.\n\n{DEMO_NOTE}"
            )
        shown = ", ".join(lines[:8]) + (", …" if len(lines) > 8 else "")
        plural = "entry" if len(lines) == 1 else "entries"
        return FauxResponse(text=f"The `ls` command listed {len(lines)} {plural}: {shown}.\n\n{DEMO_NOTE}")
    prompt = _user_text(last).strip() if isinstance(last, UserMessage) else ""
    quoted = f' "{prompt[:60]}{"…" if len(prompt) > 60 else ""}"' if prompt else ""
    tools = {tool.name for tool in (current_tools(context.messages) or context.tools)}
    if "bash" not in tools:
        return FauxResponse(text=f"I am pi's offline demo model and cannot really answer{quoted}.\n\n{DEMO_NOTE}")
    return FauxResponse(
        text=f"I am pi's offline demo model, so I cannot really answer{quoted}, but I can run a tool: "
        "let me list the files here.",
        tool_calls=[("bash", {"command": "ls"})],
    )


def offline_demo_script() -> FauxScript:
    """The CLI's offline default: for every prompt, call the ``bash`` tool once with
    ``ls``, then answer with a short summary of what it printed."""
    return FauxScript(fallback=_demo_answer, keep_contexts=False)


def offline_demo_model() -> Model:
    """``faux/offline-demo``, answered by :func:`offline_demo_script`."""
    return faux_model(offline_demo_script(), id="offline-demo", provider="faux", name="Offline demo (scripted)")


def register_offline_demo() -> dict[str, Any]:
    """Register ``faux/offline-demo``'s script and return the model's fields as the
    registry keeps them (:data:`pi_core.ai._offline_demo.OFFLINE_DEMO`)."""
    _SCRIPTS[OFFLINE_DEMO_KEY] = offline_demo_script()
    return copy.deepcopy(OFFLINE_DEMO)
