"""pi_core.ai: import cost and the first request of each API against a local server.

* import of ``pi_core.ai`` in a fresh interpreter, against ``python -c pass`` (the
  provider SDKs must not be imported);
* the first request of each API in a fresh interpreter (SDK import + client + one
  streamed answer), and a warm request in this process.

Numbers only, never assertions.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ai"))

from wire_server import (  # noqa: E402
    WireServer,
    anthropic_message,
    anthropic_stream,
    chat_chunks,
    responses_events,
    responses_stream,
)

ROUNDS = 5
WARM = 30

APIS = {
    "anthropic-messages": ("", lambda: anthropic_stream(anthropic_message([{"type": "text", "text": "Hello there."}]))),
    "openai-responses": (
        "/v1",
        lambda: responses_stream(responses_events([{"type": "message", "text": "Hello there."}])),
    ),
    "openai-completions": ("/v1", lambda: chat_chunks([{"content": "Hello "}, {"content": "there."}])),
}

FIRST_REQUEST = """
import asyncio, sys, time
start = time.perf_counter()
from pi_core.ai import complete
from pi_hookspecs import LlmContext, Model, StreamOptions, UserMessage
model = Model(id="bench", provider="bench", api=sys.argv[1], base_url=sys.argv[2])
context = LlmContext(messages=[UserMessage(content="hi")])
message = asyncio.run(complete(model, context, StreamOptions(api_key="k")))
assert message.stop_reason == "stop", message.error_message
print(time.perf_counter() - start)
"""


def _environment() -> dict[str, str]:
    """Subprocesses run as an installed pi would: with a bytecode cache (kept in a
    temporary directory, so nothing is written into the tree)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(Path(tempfile.gettempdir()) / "pi-bench-pycache")
    return env


ENV = _environment()


def _run(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, env=ENV)
    return time.perf_counter() - start


def import_times() -> dict[str, float]:
    python = sys.executable
    results = {}
    for label, code in (
        ("python -c pass", "pass"),
        ("import pi_hookspecs", "import pi_hookspecs"),
        ("import pi_core.ai", "import pi_core.ai"),
        ("import anthropic", "import anthropic"),
        ("import openai", "import openai"),
    ):
        _run([python, "-c", code])  # fill the bytecode cache
        results[label] = min(_run([python, "-c", code]) for _ in range(ROUNDS))
    return results


def first_requests(server: WireServer) -> dict[str, float]:
    results = {}
    for api, (suffix, body) in APIS.items():
        times = []
        for _ in range(3):
            server.enqueue(body())
            done = subprocess.run(
                [sys.executable, "-c", FIRST_REQUEST, api, server.url + suffix],
                check=True,
                capture_output=True,
                text=True,
                env=ENV,
            )
            times.append(float(done.stdout.strip()))
        results[api] = min(times)
    return results


async def warm_requests(server: WireServer) -> dict[str, float]:
    from pi_core.ai import complete
    from pi_hookspecs import LlmContext, Model, StreamOptions, UserMessage

    results = {}
    context = LlmContext(messages=[UserMessage(content="hi")])
    for api, (suffix, body) in APIS.items():
        model = Model(id="bench", provider="bench", api=api, base_url=server.url + suffix)
        samples = []
        for _ in range(WARM):
            server.enqueue(body())
            start = time.perf_counter()
            message = await complete(model, context, StreamOptions(api_key="k"))
            samples.append(time.perf_counter() - start)
            assert message.stop_reason == "stop", message.error_message
        results[api] = statistics.median(samples[1:])
    return results


def report() -> list[str]:
    imports = import_times()
    base = imports["python -c pass"]
    server = WireServer()
    try:
        first = first_requests(server)
        warm = asyncio.run(warm_requests(server))
    finally:
        server.close()
    lines = ["ai (pi_core.ai; fresh interpreters with a bytecode cache)"]
    for label, seconds in imports.items():
        extra = "" if label == "python -c pass" else f"  (+{(seconds - base) * 1000:.0f} ms above python)"
        lines.append(f"  {label:<20} {seconds * 1000:6.0f} ms{extra}")
    lines.append("  request against a local server: first (fresh interpreter, incl. imports) | warm (median)")
    for api in APIS:
        lines.append(f"    {api:<20} {first[api] * 1000:7.0f} ms | {warm[api] * 1000:6.2f} ms")
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
