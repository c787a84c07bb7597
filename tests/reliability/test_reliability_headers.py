"""A request header with a line break never reaches the wire: a plugin's
``before_provider_headers`` handler that sets one gets the request refused before it is
sent, with one line naming the header; one that sets a header to a number is reported
naming the plugin, its change undone, and the request goes out."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from reliability_helpers import configure_local_endpoint, run_pi, text_reply
from wire_server import WireServer, use_server

HEADERS = """
import os
from pi_hookspecs import hookimpl

@hookimpl
def before_provider_headers(event):
    if os.environ["HEADER_FAULT"] == "crlf":
        event.headers["X-Trace"] = "abc\\r\\nX-Injected: yes"
    elif os.environ["HEADER_FAULT"] == "ascii":
        event.headers["X-Trace"] = "naïve"
    else:
        event.headers["X-Count"] = 5
"""


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def test_a_header_with_a_line_break_is_refused_before_the_request(wire: WireServer, tmp_path: Path) -> None:
    model = configure_local_endpoint(wire.url)
    plugin = tmp_path / "headers.py"
    plugin.write_text(textwrap.dedent(HEADERS))
    out = run_pi("-p", "--model", model, "-e", str(plugin), "hi", cwd=tmp_path, env={"HEADER_FAULT": "crlf"})
    assert out.returncode == 1
    assert wire.requests == []  # nothing was sent
    lines = [line for line in out.stderr.splitlines() if "X-Trace" in line]
    assert len(lines) == 1 and "line break" in lines[0] and "not sent" in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_a_header_that_is_not_ascii_is_refused_at_once_not_retried(wire: WireServer, tmp_path: Path) -> None:
    model = configure_local_endpoint(wire.url)
    plugin = tmp_path / "headers.py"
    plugin.write_text(textwrap.dedent(HEADERS))
    out = run_pi("-p", "--model", model, "-e", str(plugin), "hi", cwd=tmp_path, env={"HEADER_FAULT": "ascii"})
    assert out.returncode == 1
    assert wire.requests == []
    lines = [line for line in out.stderr.splitlines() if "X-Trace" in line]
    assert len(lines) == 1 and "not ASCII" in lines[0] and "not sent" in lines[0], out.stderr
    assert "Traceback" not in out.stderr and "retry" not in out.stderr.lower()


def test_a_header_set_to_a_number_is_undone_and_reported(wire: WireServer, tmp_path: Path) -> None:
    model = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("hello"))
    plugin = tmp_path / "headers.py"
    plugin.write_text(textwrap.dedent(HEADERS))
    out = run_pi("-p", "--model", model, "-e", str(plugin), "hi", cwd=tmp_path, env={"HEADER_FAULT": "int"})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "hello\n"
    assert "headers.py" in out.stderr and "headers.X-Count" in out.stderr and "undone" in out.stderr
    (request,) = wire.requests
    assert "x-count" not in {name.lower() for name in request.headers}
