"""Leftovers and permissions: session files and folders are the owner's only, an
interrupted rewrite's temporary file is removed when the session opens again, bash
overflow logs are private and removed when pi exits (and stale ones of a killed pi
when the next one writes one), ``mcp.json`` written with secrets is 0600, an
``auth.json`` readable by others gets a warning; two processes cannot both create the
session of one ``--session-id``."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest
from reliability_helpers import (
    RpcProcess,
    agent_dir,
    run_pi,
    scripted_model,
    session_files,
    session_records,
    steps_env,
)


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_session_files_and_folders_are_private(cwd: Path, tmp_path: Path) -> None:
    os.umask(0o022)
    out = run_pi("-p", *scripted_model(tmp_path), "go", cwd=cwd, env=steps_env())
    assert out.returncode == 0, out.stderr
    (session_file,) = session_files()
    assert _mode(session_file) == 0o600
    assert _mode(session_file.parent) == 0o700
    assert _mode(agent_dir() / "sessions") == 0o700


def test_an_interrupted_rewrite_leaves_no_temporary_file(cwd: Path, tmp_path: Path) -> None:
    run_pi("-p", *scripted_model(tmp_path), "go", cwd=cwd, env=steps_env())
    (session_file,) = session_files()
    leftover = session_file.with_name(session_file.name + ".4194303.tmp")  # a rewrite killed half-way
    leftover.write_text('{"type":"session"}\n')
    out = run_pi(
        "-p",
        *scripted_model(tmp_path),
        "--session",
        str(session_file),
        "again",
        cwd=cwd,
        env=steps_env(answer="second"),
    )
    assert out.returncode == 0, out.stderr
    assert not leftover.exists()
    assert session_files() == [session_file]


def test_bash_overflow_logs_are_private_and_removed(cwd: Path, tmp_path: Path) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    stale, fresh = temp / "pi-bash-killedpi.log", temp / "pi-bash-running.log"
    for path in (stale, fresh):
        path.write_text("old output")
    two_days_ago = time.time() - 2 * 86400
    os.utime(stale, (two_days_ago, two_days_ago))
    steps = steps_env("seq 1 200000", f"stat -c %a {temp}/pi-bash-*.log")
    out = run_pi("-p", *scripted_model(tmp_path), "go", cwd=cwd, env={**steps, "TMPDIR": str(temp)})
    assert out.returncode == 0, out.stderr
    (session_file,) = session_files()
    results = [
        r["message"]
        for r in session_records(session_file)
        if r["type"] == "message" and r["message"]["role"] == "toolResult"
    ]
    assert "Full output" in results[0]["content"][0]["text"]
    modes = results[1]["content"][0]["text"].split()
    assert modes.count("600") == 1  # the overflow log, while pi ran (the other two are this test's)
    assert not stale.exists()  # a killed pi's, removed
    assert fresh.exists()  # maybe another pi's, still in use: kept
    assert sorted(p.name for p in temp.glob("pi-bash-*.log")) == ["pi-bash-running.log"]  # pi's own: removed at exit


def test_an_auth_file_readable_by_others_gets_a_warning(cwd: Path, tmp_path: Path) -> None:
    auth = agent_dir() / "auth.json"
    auth.write_text(json.dumps({"someone": {"type": "api_key", "key": "k"}}))
    os.chmod(auth, 0o644)
    out = run_pi("-p", *scripted_model(tmp_path), "go", cwd=cwd, env=steps_env())
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if "auth.json" in line]
    assert len(warnings) == 1 and "readable by other users" in warnings[0] and "chmod 600" in warnings[0]
    os.chmod(auth, 0o600)
    out = run_pi("-p", *scripted_model(tmp_path), "go", cwd=cwd, env=steps_env())
    assert "auth.json" not in out.stderr


def test_mcp_json_written_with_secrets_is_private(cwd: Path) -> None:
    os.umask(0o022)
    out = run_pi("mcp", "add", "plain", "--", "server-command", cwd=cwd, env={"PI_EXTENSIONS": "mcp"})
    assert out.returncode == 0, out.stderr
    config = agent_dir() / "mcp.json"
    assert _mode(config) == 0o644
    out = run_pi(
        "mcp",
        "add",
        "tokens",
        "--env",
        "API_TOKEN=secret",
        "--",
        "server-command",
        cwd=cwd,
        env={"PI_EXTENSIONS": "mcp"},
    )
    assert out.returncode == 0, out.stderr
    assert _mode(config) == 0o600
    assert not list(config.parent.glob(".mcp.json.*.tmp"))


def test_two_processes_cannot_both_create_one_session_id(cwd: Path, tmp_path: Path) -> None:
    options = [*scripted_model(tmp_path), "--session-id", "shared-id"]
    with RpcProcess(*options, cwd=cwd, env={**steps_env(), "PI_EXTENSIONS": ""}) as first:
        first.ok("get_state")  # started: it holds the id
        second = run_pi("-p", *options, "go", cwd=cwd, env=steps_env())
        assert second.returncode == 1
        assert second.stderr.strip().splitlines()[-1] == (
            "pi: Session shared-id is in use by another pi process (started with the same --session-id). "
            "Close that pi, or choose another id."
        )
        first.prompt_and_settle("hello")
        first.close_stdin()
        assert first.wait() == 0
    (session_file,) = session_files()
    # once the first has ended, the id opens its session
    again = run_pi("-p", *options, "go on", cwd=cwd, env=steps_env(answer="continued"))
    assert again.returncode == 0, again.stderr
    assert session_files() == [session_file]
    assert not list(session_file.parent.glob(".*.claim"))


def test_an_interrupted_atomic_write_leaves_no_temporary_file_for_long(tmp_path: Path) -> None:
    """pi's own files (settings, auth, trust) are replaced through a temporary file; one
    left by a pi killed half-way is removed by the next write of that file once it is an
    hour old (a younger one may be another pi's write in progress)."""
    from pi_core._fs import atomic_write

    target = tmp_path / "settings.json"
    stale, fresh = tmp_path / ".settings.json.k1ll3d.pi-tmp", tmp_path / ".settings.json.inprog.pi-tmp"
    for path in (stale, fresh):
        path.write_text("{}")
    two_hours_ago = time.time() - 7200
    os.utime(stale, (two_hours_ago, two_hours_ago))
    atomic_write(target, '{"theme": "dark"}\n')
    assert target.read_text() == '{"theme": "dark"}\n'
    assert not stale.exists() and fresh.exists()
