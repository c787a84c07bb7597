"""Which pydantic validators a ``pi -p`` run builds, and which threads it starts.

The contract's models build their validator (and serializer) the first time they are
used (``defer_build``): about a millisecond each. pi constructs the objects it makes
from values it already holds (stream events, the streamed message, its own events, the
definitions of its built-in tools and of its plugins' tools, flags and commands), so a
run builds only the validators of the data it reads: ``models.json``, the model, the
tool arguments, a tool's result (docs/architecture.md, "The fast path"; the measurements: pi_core/CHANGELOG.md).

Plain (``def``) hook handlers run on a worker thread; the hooks of pi's default plugins
are coroutines, so a ``pi -p`` run starts no worker thread and makes no thread hop per
event. A real run, with those three plugins, logs every build and every thread started
through a ``sitecustomize`` hook.

What a run generates depends on the schemas pi keeps beside its bytecode
(``pi_core._schema_cache``): the first run with a cold cache generates the schema of
``models.json``'s validator and keeps it, a later run reads it back and builds nothing. So
the test owns that cache (``PYTHONPYCACHEPREFIX``: a fresh folder, bytecode written as
users have it) and runs pi twice, asserting what each run must build.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import run_pi, write_wire_models
from wire_server import Canned, WireServer, anthropic_message, anthropic_stream, chat_chunks, use_server

_HOOK = """\
import os

_log = os.environ.get("PI_TEST_BUILD_LOG")
if _log:
    with open(_log, "a", encoding="utf-8") as out:
        out.write(f"hook:{os.getpid()}\\n")  # this process runs the hook

    import pydantic._internal._model_construction as _construction

    _real = _construction.complete_model_class

    def complete_model_class(cls, *args, **kwargs):
        with open(_log, "a", encoding="utf-8") as out:
            out.write(f"{cls.__module__}.{cls.__qualname__}\\n")
        return _real(cls, *args, **kwargs)

    _construction.complete_model_class = complete_model_class

    import threading

    _start = threading.Thread.start

    def start(self):
        with open(_log, "a", encoding="utf-8") as out:
            out.write(f"thread:{self.name}\\n")
        return _start(self)

    threading.Thread.start = start
"""

CONSTRUCTED = {
    # stream events and the message the stream assembles
    "pi_hookspecs.llm.StartEvent",
    "pi_hookspecs.llm.TextStartEvent",
    "pi_hookspecs.llm.TextDeltaEvent",
    "pi_hookspecs.llm.TextEndEvent",
    "pi_hookspecs.llm.ToolCallStartEvent",
    "pi_hookspecs.llm.ToolCallDeltaEvent",
    "pi_hookspecs.llm.ToolCallEndEvent",
    "pi_hookspecs.llm.DoneEvent",
    "pi_hookspecs.messages.AssistantMessage",
    "pi_hookspecs.messages.Usage",
    "pi_hookspecs.messages.Cost",
    "pi_hookspecs.messages.ToolCall",
    "pi_hookspecs.llm.StreamOptions",
    # pi's own events and messages
    "pi_hookspecs.events.BoundaryResult",
    "pi_hookspecs.events.BeforeAgentStartEvent",
    "pi_hookspecs.events.SystemPromptOptions",
    "pi_hookspecs.events.AfterProviderResponseEvent",
    "pi_hookspecs.events.AgentSettledEvent",
    "pi_hookspecs.events.SessionStartEvent",
    "pi_hookspecs.events.SessionShutdownEvent",
    "pi_hookspecs.events.ToolExecutionStartEvent",
    "pi_hookspecs.events.ToolExecutionEndEvent",
    "pi_hookspecs.events.ToolCallEvent",
    "pi_hookspecs.events.ToolResultEvent",
    "pi_hookspecs.messages.UserMessage",
    "pi_hookspecs.messages.ToolResultMessage",
    # definitions and registrations of pi and its plugins
    "pi_hookspecs.tools.ToolDefinition",
    "pi_hookspecs.tools.ToolAnnotations",
    "pi_hookspecs.messages.ToolDeclaration",
    "pi_hookspecs.llm.ApiDefinition",
    "pi_hookspecs.auth.LoginMethod",
    "pi_hookspecs.registration.CommandDefinition",
    "pi_hookspecs.registration.FlagDefinition",
    "pi_hookspecs.registration.CliCommandDefinition",
    # settings and models.json models read without their own validators
    "pi_core.compaction.settings.CompactionSettings",
    "pi_core.compaction.settings.BranchSummarySettings",
    "pi_core.tools.edit.EditBlock",
    "pi_core.ai.config.ModelConfig",
}


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def _replies(api: str, tool: bool) -> list[Canned]:
    args = json.dumps({"command": "echo from-bash"})
    if api == "chat":
        call = chat_chunks(
            [
                {
                    "tool_calls": [
                        {
                            "index": 0,
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "bash", "arguments": args},
                        }
                    ]
                }
            ],
            finish_reason="tool_calls",
        )
        text = chat_chunks([{"content": "all done"}])
    else:
        call = anthropic_stream(
            anthropic_message(
                [{"type": "tool_use", "id": "toolu_1", "name": "bash", "json": [args]}], stop_reason="tool_use"
            )
        )
        text = anthropic_stream(anthropic_message([{"type": "text", "text": "all done"}]))
    return [call, text] if tool else [text]


@pytest.mark.parametrize("tool", [False, True], ids=["text", "bash"])
@pytest.mark.parametrize("api", ["chat", "ant"])
def test_a_print_run_builds_no_validator_for_what_pi_constructs_and_no_hook_thread(
    wire: WireServer, tmp_path: Path, api: str, tool: bool
) -> None:
    write_wire_models(wire.url)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_HOOK)
    path = os.pathsep.join(p for p in (str(hook), os.environ.get("PYTHONPATH", "")) if p)
    work = tmp_path / "work"
    work.mkdir()
    pycache = tmp_path / "pycache"  # the bytecode and the schemas kept beside it: cold
    # bytecode written, as users have it (an empty PYTHONDONTWRITEBYTECODE is unset for Python)
    env = {
        "PYTHONPATH": path,
        "PI_EXTENSIONS": "mcp,codemode,tool_search",
        "PYTHONPYCACHEPREFIX": str(pycache),
        "PYTHONDONTWRITEBYTECODE": "",
    }

    def run(name: str) -> list[str]:
        log = tmp_path / f"{name}.txt"
        wire.enqueue(*_replies(api, tool))
        before = len(wire.requests)
        done = run_pi(
            "-p", "--no-session", "--model", f"{api}/m", "run it", cwd=work, env={**env, "PI_TEST_BUILD_LOG": str(log)}
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == "all done"
        if tool:
            assert "from-bash" in json.dumps(wire.requests[before + 1].body)
        logged = log.read_text().split()
        assert len([line for line in logged if line.startswith("hook:")]) == 1, logged  # the log is real
        assert "thread:pi-hook-worker" not in logged, logged
        built = [line for line in logged if not line.startswith(("hook:", "thread:"))]
        assert not set(built) & CONSTRUCTED, f"built {sorted(set(built) & CONSTRUCTED)}; every build: {built}"
        return built

    read = {"pi_core.ai.config.ModelsFile", "pi_hookspecs.llm.Model"}  # models.json, its models
    cold = run("cold")
    assert read <= set(cold), cold  # validated: their schemas generated
    kept = sorted(pycache.rglob("*.pickle"))
    assert {p.name.split(".")[0] for p in kept} >= {"pi-models-schema", "pi-model-schema"}, kept  # and kept

    warm = run("warm")
    assert not read & set(warm), warm  # read back: not generated again
    assert sorted(pycache.rglob("*.pickle")) == kept
