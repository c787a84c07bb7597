"""Resource limits and trust, with the real ``pi`` against a local scripted endpoint.

* The ``read`` tool holds no more of a file than it returns: one line of a 1 GB file
  costs pi megabytes, not gigabytes; a binary file is described, not sent.
* An untrusted project's ``.pi/settings.json`` does not apply at all: its ``sessionDir``
  does not put the transcript inside the repository.
* Oversized files are refused or cut from their size alone, with one line naming the
  file: a 5 MB ``AGENTS.md`` reaches the model as its first 256 KiB; a 512 MB (sparse)
  settings file is never read.

pi's peak memory is measured by a small wrapper process that runs pi and reports its
children's ``ru_maxrss``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from reliability_helpers import PI, agent_dir, configure_local_endpoint, session_files, text_reply
from wire_server import Canned, WireServer, chat_chunks, use_server

GIB = 1 << 30
PEAK_LIMIT_MB = 300  # pi itself takes ~100 MB; reading the 1 GB file whole took 3.1 GB

MEASURE = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[2:]).returncode\n"
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n"
    "sys.exit(code)\n"
)


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def run_measured(
    *args: str, cwd: Path, tmp_path: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run pi; returns its result and its peak resident memory in MB."""
    peak_file = tmp_path / "peak.txt"
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", "PI_EXTENSIONS": "", **(env or {})}
    out = subprocess.run(
        [sys.executable, "-c", MEASURE, str(peak_file), *PI, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=180,
    )
    return out, int(peak_file.read_text()) / 1024


def tool_reply(name: str, args: dict[str, Any]) -> Canned:
    return chat_chunks(
        [
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                ]
            }
        ],
        finish_reason="tool_calls",
    )


def sparse(path: Path, head: bytes, size: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


def tool_results(body: Any) -> list[str]:
    return [m["content"] for m in body["messages"] if m.get("role") == "tool"]


# --------------------------------------------------------------------------- read


def test_reading_one_line_of_a_1gb_file_keeps_pi_small(wire: WireServer, tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    sparse(cwd / "huge.log", b"first line\n" + b"".join(b"line %d\n" % i for i in range(2, 3000)), GIB)
    model = configure_local_endpoint(wire.url)
    wire.enqueue(tool_reply("read", {"path": "huge.log", "offset": 1, "limit": 1}))
    wire.enqueue(text_reply("done"))
    out, peak = run_measured("-p", "--model", model, "read it", cwd=cwd, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert tool_results(wire.requests[1].body) == ["first line\n\n[2999 more lines in file. Use offset=2 to continue.]"]
    assert peak < PEAK_LIMIT_MB, f"pi peaked at {peak:.0f} MB"


def test_a_binary_file_is_described_not_sent_as_text(wire: WireServer, tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    sparse(cwd / "disk.img", b"\x7fELF\x02\x01\x01\x00", GIB)
    model = configure_local_endpoint(wire.url)
    wire.enqueue(tool_reply("read", {"path": "disk.img"}))
    wire.enqueue(text_reply("done"))
    out, peak = run_measured("-p", "--model", model, "read it", cwd=cwd, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    [result] = tool_results(wire.requests[1].body)
    assert result.startswith(
        "[disk.img is a binary file (ELF executable or shared library, 1024.0MB); it is not shown as text."
    )
    assert "\x00" not in result and "\\u0000" not in wire.requests[1].raw.decode()
    assert peak < PEAK_LIMIT_MB, f"pi peaked at {peak:.0f} MB"


# --------------------------------------------------------------------------- sessionDir and trust


def _project_with_session_dir(tmp_path: Path) -> Path:
    cwd = tmp_path / "repo"
    (cwd / ".pi").mkdir(parents=True)
    (cwd / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": "in-repo-sessions"}))
    return cwd


def test_an_untrusted_projects_session_dir_is_not_used(wire: WireServer, tmp_path: Path) -> None:
    cwd = _project_with_session_dir(tmp_path)
    model = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("ok"))
    out, _ = run_measured("-p", "--model", model, "hi", cwd=cwd, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert not (cwd / "in-repo-sessions").exists()  # nothing written inside the repository
    assert len(session_files()) == 1  # the transcript is in the agent folder
    skipped = [line for line in out.stderr.splitlines() if "not trusted" in line]
    assert len(skipped) == 1 and ".pi/settings.json" in skipped[0], out.stderr


def test_a_saved_trusted_projects_session_dir_is_used(wire: WireServer, tmp_path: Path) -> None:
    cwd = _project_with_session_dir(tmp_path)
    (agent_dir() / "trust.json").write_text(json.dumps({str(cwd.resolve()): True}))
    model = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("ok"))
    out, _ = run_measured("-p", "--model", model, "hi", cwd=cwd, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(list((cwd / "in-repo-sessions").glob("*.jsonl"))) == 1
    assert session_files() == []


def test_approve_flags_decide_whether_the_projects_session_dir_counts(wire: WireServer, tmp_path: Path) -> None:
    cwd = _project_with_session_dir(tmp_path)
    model = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("ok"), text_reply("ok"))
    (agent_dir() / "trust.json").write_text(json.dumps({str(cwd.resolve()): True}))
    out, _ = run_measured("-p", "--no-approve", "--model", model, "hi", cwd=cwd, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert not (cwd / "in-repo-sessions").exists() and len(session_files()) == 1  # --no-approve: untrusted
    (agent_dir() / "trust.json").write_text("{}")
    out, _ = run_measured("-p", "--approve", "--model", model, "hi", cwd=cwd, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert len(list((cwd / "in-repo-sessions").glob("*.jsonl"))) == 1  # --approve: trusted


# --------------------------------------------------------------------------- oversized files


def test_a_5mb_agents_md_reaches_the_model_cut_to_256kib_with_one_line(wire: WireServer, tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    (cwd / "AGENTS.md").write_text("".join(f"rule {i}: be careful\n" for i in range(300_000)))  # ~5.7 MB
    model = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("ok"))
    out, peak = run_measured("-p", "--model", model, "hi", cwd=cwd, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    request = wire.requests[0].raw
    assert len(request) < 300 * 1024, len(request)  # was the whole 5.7 MB
    assert b"rule 0: be careful" in request and b"only its first 256 KiB were loaded" in request
    named = [line for line in out.stderr.splitlines() if "AGENTS.md" in line]
    assert len(named) == 1 and "larger than the 256 KiB limit" in named[0], out.stderr
    assert peak < PEAK_LIMIT_MB


@pytest.mark.parametrize("approve", [False, True])
def test_a_512mb_project_settings_file_is_never_read(wire: WireServer, tmp_path: Path, approve: bool) -> None:
    cwd = tmp_path / "repo"
    settings = sparse(cwd / ".pi" / "settings.json", b'{"sessionDir": "in-repo"}', 512 << 20)
    model = configure_local_endpoint(wire.url)
    wire.enqueue(text_reply("ok"))
    flags = ["--approve"] if approve else []
    out, peak = run_measured("-p", *flags, "--model", model, "hi", cwd=cwd, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert peak < PEAK_LIMIT_MB, f"pi peaked at {peak:.0f} MB"
    assert not (cwd / "in-repo").exists()
    named = [line for line in out.stderr.splitlines() if "settings.json" in line]
    assert len(named) == 1, out.stderr
    if approve:  # trusted: refused from its size, one line naming it
        assert str(settings) in named[0] and "larger than the 4.0 MiB limit" in named[0], out.stderr
    else:  # untrusted: not even looked at, the trust line names it
        assert "not trusted" in named[0]


def test_a_512mb_user_settings_file_is_refused_with_one_line(wire: WireServer, tmp_path: Path) -> None:
    cwd = tmp_path / "work"
    cwd.mkdir()
    model = configure_local_endpoint(wire.url)
    settings = sparse(agent_dir() / "settings.json", b"{", 512 << 20)
    wire.enqueue(text_reply("ok"))
    out, peak = run_measured("-p", "--model", model, "hi", cwd=cwd, tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert peak < PEAK_LIMIT_MB, f"pi peaked at {peak:.0f} MB"
    named = [line for line in out.stderr.splitlines() if str(settings) in line]
    assert len(named) == 1 and "larger than the 4.0 MiB limit" in named[0], out.stderr
