"""What a ``pi -p`` run imports: neither provider SDK, on any of the three wire APIs.

``import anthropic`` costs 1.0–1.5 s and ``import openai`` about 0.4 s (measured:
pi_core/CHANGELOG.md, "Performance"); the wire APIs speak HTTP and SSE themselves.
``python -X importtime`` lists every module the real run imported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import run_pi, write_wire_models
from wire_server import (
    Canned,
    WireServer,
    anthropic_message,
    anthropic_stream,
    chat_chunks,
    responses_events,
    responses_stream,
    use_server,
)


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def _bash_then_text(api: str) -> list[Canned]:
    args = json.dumps({"command": "echo from-bash"})
    if api == "chat":
        return [
            chat_chunks(
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
            ),
            chat_chunks([{"content": "all done"}]),
        ]
    if api == "resp":
        return [
            responses_stream(
                responses_events([{"type": "function_call", "call_id": "call_1", "name": "bash", "json": [args]}])
            ),
            responses_stream(responses_events([{"type": "message", "text": "all done"}], response_id="resp_2")),
        ]
    return [
        anthropic_stream(
            anthropic_message(
                [{"type": "tool_use", "id": "toolu_1", "name": "bash", "json": [args]}], stop_reason="tool_use"
            )
        ),
        anthropic_stream(anthropic_message([{"type": "text", "text": "all done"}])),
    ]


@pytest.mark.parametrize("api", ["chat", "resp", "ant"])
def test_a_print_run_imports_no_provider_sdk(wire: WireServer, tmp_path: Path, api: str) -> None:
    write_wire_models(wire.url)
    wire.enqueue(*_bash_then_text(api))
    done = run_pi(
        "-p", "--no-session", "--model", f"{api}/m", "run it", cwd=tmp_path, env={"PYTHONPROFILEIMPORTTIME": "1"}
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "all done"
    # the tool ran and its output went back to the model
    assert "from-bash" in json.dumps(wire.requests[1].body)
    imported = {
        m.group(1).split(".")[0]
        for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.MULTILINE)
    }
    assert "h11" in imported  # the list is real: the HTTP client shows
    assert not imported & {"anthropic", "openai"}, sorted(imported & {"anthropic", "openai"})
    # the HTML export's libraries load only when exporting
    assert not imported & {"jinja2", "markdown_it", "pygments"}, sorted(
        imported & {"jinja2", "markdown_it", "pygments"}
    )
    # the provider clients speak HTTP on asyncio streams (pi_core.ai.apis._transport) and
    # decode SSE themselves (_sse): no HTTP library, no httpx2 (its import alone was ≈20 ms),
    # no httpcore2 or anyio; importlib.metadata is not asked anything
    modules = set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)", done.stderr, re.MULTILINE))
    assert {"pi_core.ai.apis._transport", "pi_core.ai.apis._sse"} <= modules
    assert not imported & {"httpx2", "httpcore2", "anyio"}, sorted(imported & {"httpx2", "httpcore2", "anyio"})
    assert "importlib.metadata" not in modules
    # models made on first use are not made: the occasional events (no plugin here implements
    # bash_spawn, file_access or hook_outcome), pi's retry events, the classifier and image
    # model types; nor is email imported (only an HTTP-date Retry-After needs it)
    lazy = {"pi_hookspecs._occasional", "pi_hookspecs.model_types", "pi_core.runtime._occasional_events"}
    assert not modules & lazy, sorted(modules & lazy)
    assert "email" not in imported
