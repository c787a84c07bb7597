"""Break-out attacks on the sandbox, one test each: a sandboxed command run through the
model's bash tool, pi as the user the suite runs as (root in CI containers), on both
Linux backends.

* kernel interfaces and capabilities: nothing of the host's kernel is writable, no
  capability is left, ``no_new_privs`` is set;
* the repository: renamed, copied back, relinked, reconfigured, re-created: git never
  runs a hook or a configuration a command planted;
* Landlock: pi's ``/proc`` files, ``/dev/shm`` and ``setsid`` jobs;
* unix sockets outside the project, session transcripts, the guarantees a backend
  cannot keep.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_testkit import Machine, backend, machine, need, sandboxed  # noqa: F401

from pi_core.testing import ECHO, PiHarness, call
from pi_sandbox import sandbox as sandbox_module
from pi_sandbox.guard import config_problem
from pi_sandbox.sandbox import Backend, weaker_guarantees

ROOT = os.geteuid() == 0
GIT = shutil.which("git")


def run(pi: PiHarness, command: str) -> str:
    pi.script(call("bash", command=command), ECHO)
    return pi.prompt("probe").tool_results[0].text


def git(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=60)


def repository(project: Path) -> None:
    assert GIT is not None
    git("init", "-q", cwd=project)
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "x", cwd=project)


def commit_runs_a_hook(project: Path, marker: Path) -> bool:
    """Commit as the user would, after the command (outside the sandbox)."""
    git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "--allow-empty", "-m", "y", cwd=project)
    return marker.exists()


HOOK = "#!/bin/sh\ntouch {marker}\n"


# --------------------------------------------------------------------------- kernel


def test_no_kernel_interface_is_writable_and_no_capability_is_left(
    pi: PiHarness, machine: Machine, backend: str
) -> None:
    sandboxed(pi, backend)
    probe = (
        "v=$(cat /proc/sys/kernel/printk_ratelimit); "
        "(echo $v > /proc/sys/kernel/printk_ratelimit) 2>/dev/null && echo WROTE-PROC-SYS; "
        "test -w /proc/sys/kernel/core_pattern && echo CORE-PATTERN-WRITABLE; "
        "test -e /proc/sysrq-trigger && test -w /proc/sysrq-trigger && echo SYSRQ-WRITABLE; "
        "touch /sys/kernel/pi-probe 2>/dev/null && echo WROTE-SYS; "
        "grep -E '^(CapEff|CapPrm|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status; "
        "hostname pi-probe 2>/dev/null && echo HOSTNAME-SET; echo done"
    )
    text = run(pi, probe)
    assert "done" in text
    for escape in ("WROTE-PROC-SYS", "CORE-PATTERN-WRITABLE", "SYSRQ-WRITABLE", "WROTE-SYS", "HOSTNAME-SET"):
        assert escape not in text
    assert "CapEff:\t0000000000000000" in text and "CapAmb:\t0000000000000000" in text
    assert "NoNewPrivs:\t1" in text
    if ROOT:
        assert "CapPrm:\t0000000000000000" in text


# --------------------------------------------------------------------------- the repository


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_renaming_the_repository_and_copying_it_back_plants_no_hook(
    pi: PiHarness, machine: Machine, backend: str, tmp_path: Path
) -> None:
    sandboxed(pi, backend)
    repository(pi.project)
    marker = tmp_path / "hook-ran"
    hook = HOOK.format(marker=marker)
    run(
        pi,
        f"mv .git .gitx && cp -a .gitx .git && printf '{hook}' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit; git config core.hooksPath /tmp; echo done",
    )
    assert not commit_runs_a_hook(pi.project, marker)
    assert not (pi.project / ".gitx").exists() or not (pi.project / ".gitx" / "hooks" / "pre-commit").exists()
    assert "hookspath" not in (pi.project / ".git" / "config").read_text().lower()


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_a_hook_or_a_configuration_written_directly_does_not_stay(
    pi: PiHarness, machine: Machine, backend: str, tmp_path: Path
) -> None:
    sandboxed(pi, backend)
    repository(pi.project)
    marker = tmp_path / "hook-ran"
    text = run(
        pi,
        f"printf '{HOOK.format(marker=marker)}' > .git/hooks/post-commit; chmod +x .git/hooks/post-commit; "
        "git config core.fsmonitor 'touch /tmp/x'; echo '[alias] x = !id' >> .git/config; echo done",
    )
    assert "done" in text
    assert not commit_runs_a_hook(pi.project, marker)
    config = (pi.project / ".git" / "config").read_text().lower()
    assert "fsmonitor" not in config and "alias" not in config


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_a_symlinked_repository_cannot_be_swapped(
    pi: PiHarness, machine: Machine, backend: str, tmp_path: Path
) -> None:
    sandboxed(pi, backend)
    real = pi.project / "repo.git"
    git("init", "-q", "--separate-git-dir", str(real), cwd=pi.project)
    (pi.project / ".git").unlink()
    (pi.project / ".git").symlink_to("repo.git")
    marker = tmp_path / "hook-ran"
    run(
        pi,
        f"rm .git && git init -q . && printf '{HOOK.format(marker=marker)}' > .git/hooks/pre-commit && "
        f"chmod +x .git/hooks/pre-commit; printf '{HOOK.format(marker=marker)}' > repo.git/hooks/pre-commit; echo done",
    )
    assert (pi.project / ".git").is_symlink() and os.readlink(pi.project / ".git") == "repo.git"
    assert not commit_runs_a_hook(pi.project, marker)


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_a_new_repository_with_a_planted_hook_is_moved_aside(
    pi: PiHarness, machine: Machine, backend: str, tmp_path: Path
) -> None:
    """The project had no repository: a clean ``git init`` stays, one with a hook or a
    configuration that runs programs is moved aside where git never looks."""
    sandboxed(pi, backend)
    marker = tmp_path / "hook-ran"
    text = run(
        pi,
        f"git init -q . && printf '{HOOK.format(marker=marker)}' > .git/hooks/pre-commit && "
        "chmod +x .git/hooks/pre-commit && echo planted",
    )
    assert "planted" in text and "moved aside" in text
    assert not (pi.project / ".git").exists() and (pi.project / ".git.pi-sandbox-quarantine").is_dir()
    assert git("status", cwd=pi.project).returncode != 0  # no repository here any more
    clean = run(pi, "rm -rf .git.pi-sandbox-quarantine && git init -q . && git config user.name model && echo made")
    assert "made" in clean and "moved aside" not in clean
    assert (pi.project / ".git" / "HEAD").exists()


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_git_init_in_a_subfolder_is_allowed(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend)
    repository(pi.project)
    text = run(pi, "mkdir -p sub && cd sub && git init -q . && git config user.name model && echo ok")
    assert "ok" in text
    assert (pi.project / "sub" / ".git" / "HEAD").exists()


def test_a_new_pi_folder_is_moved_aside(pi: PiHarness, machine: Machine, backend: str) -> None:
    sandboxed(pi, backend)
    text = run(pi, "mkdir -p .pi/extensions && echo 'import os' > .pi/extensions/evil.py && echo planted")
    assert "planted" in text and "moved aside" in text
    assert not (pi.project / ".pi").exists()


def test_the_safe_git_configuration_is_what_git_writes() -> None:
    assert (
        config_problem(
            '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n[remote "origin"]\n'
            "\turl = https://example.org/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n"
            '[branch "main"]\n\tremote = origin\n\tmerge = refs/heads/main\n[user]\n\tname = m\n'
        )
        is None
    )
    assert config_problem("[core]\n\thooksPath = /tmp\n") == "core.hookspath"
    assert config_problem("[core]\nfsmonitor = x\n") == "core.fsmonitor"
    assert config_problem("[alias]\n\tst = !sh\n") == "alias.st"
    assert config_problem("[include]\n\tpath = ../x\n") == "include.path"
    assert config_problem('[filter "lfs"]\n\tsmudge = x\n') == "filter.smudge"


# --------------------------------------------------------------------------- Landlock, processes


def test_pis_environment_and_processes_are_out_of_reach(
    pi: PiHarness, machine: Machine, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PROBE_SECRET_API_KEY", "value-only-pi-has")
    sandboxed(pi, backend)
    text = run(
        pi,
        f"grep -l value-only-pi-has /proc/*/environ 2>/dev/null; "
        f"cat /proc/{os.getpid()}/environ 2>/dev/null | tr '\\0' '\\n' | grep -c value-only; echo done",
    )
    assert "done" in text and "value-only-pi-has" not in text.replace("grep -l value-only-pi-has", "")


def test_shared_memory_is_private_or_read_only(pi: PiHarness, machine: Machine, backend: str) -> None:
    marker = f"pi-probe-{os.getpid()}"
    sandboxed(pi, backend)
    run(pi, f"touch /dev/shm/{marker} 2>/dev/null; echo done")
    assert not Path(f"/dev/shm/{marker}").exists()


def test_processes_a_command_detaches_end_with_it(pi: PiHarness, machine: Machine, backend: str) -> None:
    marker = f"{time.time_ns() % 10**9}"
    sandboxed(pi, backend)
    try:
        run(pi, f"(setsid sleep 31{marker} &); (nohup sleep 32{marker} >/dev/null 2>&1 &); echo started")
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and _running(marker):
            time.sleep(0.05)
        assert not _running(marker)
    finally:
        subprocess.run(["pkill", "-f", f"sleep 3[12]{marker}"], capture_output=True)


def _running(marker: str) -> bool:
    done = subprocess.run(["pgrep", "-f", f"sleep 3[12]{marker}"], capture_output=True, text=True)
    return bool(done.stdout.strip())


# --------------------------------------------------------------------------- sockets, transcripts


@pytest.fixture
def outside_socket(machine: Machine) -> Iterator[Path]:
    folder = machine.home / "run"
    folder.mkdir()
    path = folder / "service.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(8)
    try:
        yield path
    finally:
        server.close()


CONNECT = (
    "python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); print('CONNECTED')\""
    " {path}"
)


def test_unix_sockets_outside_the_project_are_hidden(
    pi: PiHarness, machine: Machine, backend: str, outside_socket: Path
) -> None:
    if backend == "landlock" and not ROOT:
        pytest.skip("Landlock as a user cannot hide unix sockets (acceptWeaker: unix-sockets, docs/sandbox.md)")
    sandboxed(pi, backend)
    assert "CONNECTED" not in run(pi, CONNECT.format(path=outside_socket) + "; echo done")


def test_a_socket_allowed_by_path_is_reachable(
    pi: PiHarness, machine: Machine, backend: str, outside_socket: Path
) -> None:
    sandboxed(pi, backend, allowSockets=[str(outside_socket)])
    assert "CONNECTED" in run(pi, CONNECT.format(path=outside_socket))


def test_session_transcripts_are_not_readable(pi: PiHarness, machine: Machine, backend: str) -> None:
    old = machine.agent / "sessions" / "--elsewhere--" / "2026-01-01_x.jsonl"
    old.parent.mkdir(parents=True, exist_ok=True)
    old.write_text('{"type":"message","text":"a secret from another project"}\n')
    sandboxed(pi, backend)
    text = run(pi, f"cat {old}; grep -r 'another project' {machine.agent}/sessions; echo done")
    assert "done" in text and "a secret from another project" not in text.replace("grep -r", "")


# --------------------------------------------------------------------------- guarantees


def test_landlock_as_a_user_names_what_it_cannot_keep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox_module.landlock, "has_capability", lambda cap: False)
    assert set(weaker_guarantees(Backend("landlock", "Landlock ABI 7", sys.executable, 7))) == {"unix-sockets"}
    assert set(weaker_guarantees(Backend("landlock", "Landlock ABI 5", sys.executable, 5))) == {
        "unix-sockets",
        "signals",
        "process-cleanup",
        "abstract-sockets",
    }
    monkeypatch.setattr(sandbox_module.landlock, "has_capability", lambda cap: True)
    assert weaker_guarantees(Backend("landlock", "Landlock ABI 7", sys.executable, 7)) == {}
    assert weaker_guarantees(Backend("bwrap", "bubblewrap", "/bin/bwrap")) == {}


def test_a_weaker_backend_refuses_every_command_until_the_user_accepts(
    pi: PiHarness, machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    need("landlock")
    monkeypatch.setattr(sandbox_module.landlock, "has_capability", lambda cap: False)
    sandboxed(pi, "landlock")
    pi.script(call("bash", command="echo ran"), ECHO)
    result = pi.prompt("run").tool_results[0]
    assert result.is_error and "ran" not in result.text.split("\n")[-1]
    assert "cannot keep what the sandbox promises here: unix-sockets" in result.text
    assert '"acceptWeaker": ["unix-sockets"]' in result.text and str(machine.agent / "settings.json") in result.text
