"""Recognising refusals in a command's output costs linear time, is bounded, and runs
off the event loop.

Regexes run over whole lines are quadratic: one line of 40,000 characters takes seconds
to scan that way, while pi's loop waits. Timings here are CPU time of the scanning
thread (robust on a loaded machine): 1 MB must take well under the ceiling, which such a
per-line regex scan (:func:`_reference`) misses by orders of magnitude.
"""

from __future__ import annotations

import os
import random
import re
import threading
import time
from pathlib import Path
from typing import Any, Literal

import pytest
from sandbox_testkit import Machine, machine, need_some_sandbox  # noqa: F401

from pi_core.testing import ECHO, PiHarness, call
from pi_sandbox import SandboxPlugin, violations
from pi_sandbox.settings import Plan
from pi_sandbox.violations import MAX_FINDINGS, MAX_SCAN, PATH_WINDOW, find

MB = 1_000_000
CEILING = 2.0
"""CPU seconds 1 MB may cost at most (it costs about 0.1 s; the old scan took hours)."""


@pytest.fixture
def plan(tmp_path: Path) -> Plan:
    (tmp_path / "project" / ".pi").mkdir(parents=True)
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    project = str(tmp_path / "project")
    return Plan(cwd=project, writable=[project], protected=[f"{project}/.pi"], deny=[str(tmp_path / "home" / ".ssh")])


def timed(output: str, plan: Plan, **options: Any) -> list[tuple[str, str]]:
    started = time.thread_time()
    found = find(output, plan, **options)
    spent = time.thread_time() - started
    assert spent < CEILING, f"{len(output)} characters took {spent:.2f} s of CPU"
    return [(kind, target) for kind, target, _, _ in found]


# --------------------------------------------------------------------------- linear time


def test_a_1mb_line_without_a_refusal(plan: Plan) -> None:
    for line in (
        "a" * MB,
        "P" * MB,
        "/" * MB,
        "socket " * (MB // 7),
        "Failed to connect to " + "a" * MB,
        "Permission denied: '/" + "a" * MB,
        " : Permission denied" * (MB // 20),
        "aaaa: Permission denied" * (MB // 23),
    ):
        assert timed(line, plan, limit=None) == []


def test_a_1mb_line_with_a_refusal_at_its_very_end(plan: Plan, tmp_path: Path) -> None:
    outside = f"{tmp_path}/home/outside"
    secret = f"{tmp_path}/home/.ssh/id_rsa"
    ends = [
        (f" {outside}: Read-only file system", [("write", outside)]),
        (f"bash: line 1: '{secret}': Permission denied", [("read", secret)]),
        (f"PermissionError: [Errno 13] Permission denied: '{outside}'", [("write", outside)]),
        ("curl: (6) Could not resolve host: example.com", [("network", "example.com")]),
        ("curl: (7) Failed to connect to example.com port 443 after 1 ms", [("network", "example.com:443")]),
        ("socket.socket(): Operation not permitted", [("network", "network")]),
    ]
    for end, expected in ends:
        for filler in ("a" * MB, "x: " * (MB // 3)):
            assert timed(filler + end, plan, limit=None) == expected, (filler[:10], end)
        # "socket", then a denial later on the line: a socket refused (and the path too)
        denial = "Permission denied" in end or "Operation not permitted" in end
        socket = [("network", "network")] if denial and expected[0][0] != "network" else []
        assert timed("socket " * (MB // 7) + end, plan, limit=None) == expected + socket, end


def test_a_1mb_line_of_many_refusals(plan: Plan, tmp_path: Path) -> None:
    same = f"touch: {tmp_path}/home/outside: Read-only file system "
    assert timed(same * (MB // len(same)), plan, limit=None) == [("write", f"{tmp_path}/home/outside")]
    distinct = "".join(f"{tmp_path}/home/f{i}: Permission denied " for i in range(MB // 60))
    found = timed(distinct, plan, limit=None)
    assert len(found) == MAX_FINDINGS  # the scan stops there
    assert found[:2] == [("write", f"{tmp_path}/home/f0"), ("write", f"{tmp_path}/home/f1")]
    inside = "".join(f"cat: f{i}: Permission denied\n" for i in range(MB // 30))  # ordinary permissions
    assert timed(inside, plan, limit=None) == []


def test_many_lines_with_a_refusal_at_the_end(plan: Plan, tmp_path: Path) -> None:
    for filler in ("\n" * MB, "x\r\n" * (MB // 3), "Connection refused\n" * (MB // 19)):
        end = f"cp: cannot create regular file '{tmp_path}/home/outside': Read-only file system"
        found = timed(filler + end, plan, limit=None)
        assert found[-1] == ("write", f"{tmp_path}/home/outside")


def test_time_grows_linearly(plan: Plan) -> None:
    """A hundred times the output costs about a hundred times the CPU time, never ten
    thousand (the quadratic scan): the bound leaves a factor ten for a loaded machine,
    whose caches make a large scan dearer per character than a small one."""

    def cost(size: int) -> float:
        best = float("inf")
        for _ in range(3):
            started = time.thread_time()
            find("a" * size + " /x: Permission denied " + "socket " * (size // 7), plan, limit=None)
            best = min(best, time.thread_time() - started)
        return best

    small, large = cost(MB // 100), cost(MB)
    assert large < 1000 * small + 0.2, (small, large)


# --------------------------------------------------------------------------- bounds


def test_only_the_end_of_a_long_output_is_scanned(plan: Plan, tmp_path: Path) -> None:
    refusal = f"{tmp_path}/home/outside: Read-only file system"
    assert timed(refusal + "\n" + "a" * MB, plan) == []  # beyond MAX_SCAN from the end
    assert timed("a" * MB + "\n" + refusal, plan) == [("write", f"{tmp_path}/home/outside")]
    # the scan starting in the middle of a path never reports the rest of it as a path
    cut = f"{tmp_path}/home/.ssh/id_rsa: Permission denied"
    assert find("x" * 10 + cut, plan, limit=len(cut) - 5) == []
    assert len("x" * (MAX_SCAN - len(cut)) + cut) == MAX_SCAN
    assert [k for k, *_ in find("x " * MAX_SCAN + cut, plan)] == ["read"]


def test_a_run_longer_than_a_path_is_no_path(plan: Plan, tmp_path: Path) -> None:
    long = f"{tmp_path}/home/" + "a" * PATH_WINDOW
    assert find(f"{long}: Read-only file system", plan) == []
    assert find(f"Permission denied: '{long}'", plan) == []
    short = f"{tmp_path}/home/" + "a" * 200
    assert [t for _, t, _, _ in find(f"{short}: Read-only file system", plan)] == [short]


def test_the_line_of_a_refusal_in_a_long_line_is_an_excerpt(plan: Plan, tmp_path: Path) -> None:
    refusal = f"{tmp_path}/home/outside: Read-only file system"
    [(_, _, _, line)] = find("a" * MB + " " + refusal + " and more", plan, limit=None)
    assert line.startswith("…a") and line.endswith(refusal) and len(line) <= 301
    [(_, _, _, short)] = find(f"  bash: {refusal}  \nnext", plan)
    assert short == f"bash: {refusal}"


def test_a_set_stop_ends_the_scan(plan: Plan, tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    assert find(f"{tmp_path}/home/outside: Read-only file system\n" * 1000, plan, stop=stop) == []


# --------------------------------------------------------------------------- same findings as the reference scan


def _reference(output: str, plan: Plan) -> list[tuple[str, str, str, str]]:
    """A per-line regex scan for the same refusals: quadratic on long lines, simple enough
    to trust on short ones, so ``find`` must agree with it there."""
    errors = "Read-only file system|Permission denied|Operation not permitted"
    path_first = re.compile(rf"['\"‘`]?(?P<path>[^\s:'\"‘’`]+)['\"’`]?: (?P<error>{errors})")
    error_first = re.compile(rf"(?P<error>{errors}): ['\"](?P<path>/[^'\"]+)['\"]")
    network = [
        re.compile(r"Could not resolve host:? (?P<host>[\w.-]+)"),
        re.compile(r"Failed to connect to (?P<host>[\w.:\[\]-]+) port (?P<port>\d+)"),
        *(re.compile(re.escape(p)) for p in violations._NETWORK_PHRASES[2:]),
        re.compile(r"socket\b.*(Permission denied|Operation not permitted)", re.IGNORECASE),
    ]
    found: list[tuple[str, str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for line in output.splitlines():
        for pattern in (path_first, error_first):
            for match in pattern.finditer(line):
                verdict = violations.classify(match.group("path"), match.group("error"), plan)
                if verdict is None:
                    continue
                kind, why = verdict
                target = os.path.realpath(os.path.join(plan.cwd, os.path.expanduser(match.group("path"))))
                if (kind, target) not in seen:
                    seen.add((kind, target))
                    found.append((kind, target, why, line.strip()[:300]))
        if plan.network != "on":
            for net in network:
                hit = net.search(line)
                if hit is None:
                    continue
                host = hit.groupdict().get("host") or "network"
                port = hit.groupdict().get("port")
                target = f"{host}:{port}" if port else host
                if ("network", target) not in seen and ("network", "network") not in seen:
                    seen.add(("network", target))
                    why = "network is off" if plan.network == "off" else "not through the proxy, or a host not allowed"
                    found.append(("network", target, why, line.strip()[:300]))
                break
    return found


@pytest.mark.parametrize("network", ["off", "proxy", "on"])
def test_short_outputs_give_what_the_reference_scan_gives(
    plan: Plan, tmp_path: Path, network: Literal["off", "proxy", "on"]
) -> None:
    plan.network = network
    home, project = f"{tmp_path}/home", plan.cwd
    paths = [
        f"{home}/x",
        f"{home}/.ssh/id",
        f"{project}/.pi/s",
        f"{project}/a",
        "/etc/passwd",
        "rel/a",
        "~/.ssh/k",
        "/",
        "/a b",
        "x",
        "",
    ]
    quotes = ["", "'", '"', "‘", "’", "`"]
    errors = ["Read-only file system", "Permission denied", "Operation not permitted", "permission denied"]
    noise = [
        " ",
        "",
        "\n",
        ": ",
        ":",
        "bash: line 1: ",
        "cat: ",
        "x",
        "\t",
        "socket ",
        "SOCKET:",
        "'",
        "\r\n",
        "\x0b",
        "\u2028",
    ]
    hosts = ["Failed to connect to ", "Could not resolve host", "Could not resolve host: ", "Could not resolve host "]
    rng = random.Random(30)

    def piece() -> str:
        roll = rng.random()
        if roll < 0.4:
            return (
                rng.choice(noise)
                + rng.choice(quotes)
                + rng.choice(paths)
                + rng.choice(quotes)
                + rng.choice([": ", ":", " : "])
                + rng.choice(errors)
            )
        if roll < 0.7:
            return (
                rng.choice(errors)
                + rng.choice([": ", ":"])
                + rng.choice(quotes)
                + rng.choice(paths)
                + rng.choice(quotes)
            )
        if roll < 0.85:
            return (
                rng.choice(hosts) + rng.choice(["h.org", "[::1]", "", " "]) + rng.choice([" port 443", " port x", ""])
            )
        return rng.choice([*noise, *violations._NETWORK_PHRASES])

    recognised = 0
    for _ in range(600):
        output = "".join(piece() for _ in range(rng.randint(1, 8)))
        expected = _reference(output, plan)
        assert find(output, plan) == expected, output
        recognised += bool(expected)
    assert recognised > 100


# --------------------------------------------------------------------------- in a session


def test_a_1mb_line_of_output_is_reported_promptly(pi: PiHarness, machine: Machine) -> None:
    need_some_sandbox()
    pi.use(SandboxPlugin).configure(sandbox={"preset": "workspace-write"})
    scans: list[int] = []
    real_find = violations.find

    def recording(*args: Any, **kwargs: Any) -> Any:
        scans.append(threading.get_ident())
        return real_find(*args, **kwargs)

    # one line of 1 MB ("a"s, then bash's own refusal on the same line)
    pi.script(call("bash", command="printf '%*s' 1000000 '' | tr ' ' a; echo x > ~/outside"), ECHO)
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(violations, "find", recording)
        result = pi.prompt("write outside").tool_results[0]
    assert time.monotonic() - started < 5  # 0.05 s; a per-line regex scan takes 15 s here
    assert result.is_error and f"writing {machine.home / 'outside'} (outside the writable folders)" in result.text
    assert scans and threading.get_ident() not in scans  # scanned in a worker thread, not on pi's loop


def test_a_stuck_scan_never_holds_the_loop(pi: PiHarness, machine: Machine) -> None:
    """However long a scan took, the hookTimeout ends the wait, and the scan is told to stop."""
    need_some_sandbox()
    pi.use(SandboxPlugin).configure(sandbox={"preset": "workspace-write"}, hookTimeout=0.5)
    stopped = threading.Event()

    def stuck(output: str, plan: Plan, *, stop: threading.Event | None = None, **_: Any) -> list[Any]:
        assert stop is not None
        if stop.wait(30):
            stopped.set()
        return []

    pi.script(call("bash", command="echo x > ~/outside"), ECHO)
    started = time.monotonic()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(violations, "find", stuck)
        result = pi.prompt("write outside").tool_results[0]
    assert time.monotonic() - started < 10
    assert result.is_error and "[pluggable-pi-sandbox]" not in result.text
    assert stopped.wait(5)
