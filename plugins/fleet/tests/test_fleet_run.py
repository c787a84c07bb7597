"""``pi fleet run`` end to end: the real ``pi`` command in a subprocess, on a local Ray
with 2 CPUs (started once for the module with ``ray start --head``; one test uses the
embedded Ray a run starts itself), against a scripted OpenAI-compatible model."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_kit import (
    MODEL,
    RayHead,
    ScriptedModel,
    fleet_env,
    make_repo,
    results,
    run_args,
    run_fleet,
    start_fleet,
    wait_for,
    write_models,
    write_tasks,
)

pytest.importorskip("ray", reason="Ray is not installed (a dependency of pluggable-pi-fleet)")


@pytest.fixture(scope="module")
def head(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RayHead]:
    # Ray's socket paths must stay short: a folder of its own under /tmp
    import tempfile

    temp = Path(tempfile.mkdtemp(prefix="rayf-", dir="/tmp"))
    ray_head = RayHead(num_cpus=2, temp_dir=temp)
    try:
        yield ray_head
    finally:
        ray_head.stop()
        shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def model() -> Iterator[ScriptedModel]:
    server = ScriptedModel().start()
    try:
        yield server
    finally:
        server.close()


@dataclass
class Fleet:
    base: Path
    agent: Path
    env: dict[str, str]
    repos: list[Path]


def _fleet(base: Path, server: ScriptedModel, settings: dict[str, object] | None = None) -> Fleet:
    agent = base / "agent"
    write_models(agent, server.url, settings)
    repos = [
        make_repo(base / "alpha", {"README.md": "alpha project\n", "app.py": "print('alpha')\n"}),
        make_repo(base / "beta", {"README.md": "beta project\n"}),
        make_repo(base / "gamma", {"README.md": "gamma project\n", "VERSION": "1.0\n"}),
    ]
    return Fleet(base, agent, fleet_env(agent), repos)


def _on(head: RayHead, tasks: Path, out: Path, *options: str) -> list[str]:
    """``pi fleet run``'s arguments for a run on the module's Ray head."""
    return run_args(tasks, out, "--address", head.address, *options)


# --------------------------------------------------------------------------- many tasks, re-runs, a missing repo


@dataclass
class MainRun:
    fleet: Fleet
    server: ScriptedModel
    out: Path
    tasks: Path
    done: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def main_run(head: RayHead, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MainRun]:
    server = ScriptedModel().start()
    base = tmp_path_factory.mktemp("fleet-main")
    fleet = _fleet(base, server)
    alpha, beta, gamma = fleet.repos
    tasks = write_tasks(
        base / "tasks.jsonl",
        [
            {"id": "alpha-new", "repo": str(alpha), "prompt": "write CHANGES.md: alpha was migrated"},
            {"id": "alpha-edit", "repo": str(alpha), "prompt": "edit app.py: print('alpha') => print('ALPHA')"},
            {"id": "beta-new", "repo": "beta", "prompt": "write docs/notes.md: beta notes"},
            {"id": "beta-edit", "repo": str(beta), "prompt": "edit README.md: beta project => Beta Project"},
            {"id": "gamma-new", "repo": str(gamma), "prompt": "write NEW.txt: gamma", "ref": "main"},
            {"id": "gamma-edit", "repo": str(gamma), "prompt": "edit VERSION: 1.0 => 2.0", "model": MODEL},
            {"id": "missing", "repo": str(base / "no-such-repo"), "prompt": "write X: never"},
        ],
    )
    out = base / "out"
    done = run_fleet(*_on(head, tasks, out), env=fleet.env, cwd=base)
    try:
        yield MainRun(fleet, server, out, tasks, done)
    finally:
        server.close()


def test_six_tasks_over_three_repositories_and_a_missing_one(main_run: MainRun) -> None:
    done, out = main_run.done, main_run.out
    assert done.returncode == 1, done.stderr  # one task failed
    lines = results(out)
    assert sorted(r["id"] for r in lines) == sorted(
        ["alpha-new", "alpha-edit", "beta-new", "beta-edit", "gamma-new", "gamma-edit", "missing"]
    )
    by_id = {r["id"]: r for r in lines}
    missing = by_id.pop("missing")
    assert missing["status"] == "error"
    assert "no-such-repo does not exist" in missing["error"]
    assert missing["session"] is None and missing["patch"] is None
    for result in by_id.values():
        assert result["status"] == "ok", result
        assert result["error"] is None
        assert result["tokens"] == 240  # two answers of 120 tokens
        assert result["cost"] == pytest.approx(0.0012)
        assert result["duration_s"] > 0
        assert (out / result["session"]).is_file()
        assert (out / result["session"]).with_suffix(".html").is_file(), done.stderr
    assert set(by_id["alpha-new"]) == {"id", "status", "session", "patch", "tokens", "cost", "duration_s", "error"}
    new_file = (out / by_id["beta-new"]["patch"]).read_text()
    assert "new file mode" in new_file and "+++ b/docs/notes.md" in new_file and "+beta notes" in new_file
    edit = (out / by_id["alpha-edit"]["patch"]).read_text()
    assert "-print('alpha')" in edit and "+print('ALPHA')" in edit
    assert "+2.0" in (out / by_id["gamma-edit"]["patch"]).read_text()
    # each session ran in its own copy, with the prompt, and recorded its working directory
    header = json.loads((out / by_id["beta-edit"]["session"]).read_text().splitlines()[0])
    assert header["cwd"] == str(out / "work" / "beta-edit" / "repo")
    # the originals are untouched
    for repo in main_run.fleet.repos:
        status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True)
        assert status.stdout == ""
    assert not (main_run.fleet.repos[0] / "CHANGES.md").exists()
    assert main_run.server.count() == 12
    # the summary table and the plain progress lines (stderr is not a terminal)
    assert "pi fleet: 7 task(s)" in done.stdout and "ok 6, error 1, cancelled 0" in done.stdout
    assert "[7/7]" in done.stderr and "cost so far $0.0072" in done.stderr
    assert (out / "report.html").is_file()


def test_a_rerun_makes_no_request_and_rerun_forces_all(main_run: MainRun, head: RayHead) -> None:
    fleet, out = main_run.fleet, main_run.out
    before = main_run.server.count()
    first = {r["id"]: r for r in results(out)}
    again = run_fleet(*_on(head, main_run.tasks, out), env=fleet.env, cwd=fleet.base)
    assert again.returncode == 1  # the missing repository is tried again, and fails again
    assert "6 task(s) already ok" in again.stderr
    assert main_run.server.count() == before  # no model request
    lines = results(out)
    assert len(lines) == 7
    second = {r["id"]: r for r in lines}
    assert {i: r for i, r in second.items() if i != "missing"} == {i: r for i, r in first.items() if i != "missing"}
    assert second["missing"]["status"] == "error"

    forced = run_fleet(*_on(head, main_run.tasks, out, "--rerun"), env=fleet.env, cwd=fleet.base)
    assert forced.returncode == 1
    assert main_run.server.count() == before + 12
    assert len(results(out)) == 7


# --------------------------------------------------------------------------- a worker killed mid-task


def test_a_worker_killed_mid_task_is_retried_and_leaves_one_result(
    head: RayHead, model: ScriptedModel, tmp_path: Path
) -> None:
    fleet = _fleet(tmp_path, model)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "victim", "repo": str(fleet.repos[0]), "prompt": "[block] write KILLED.md: second attempt"},
            {"id": "other", "repo": str(fleet.repos[1]), "prompt": "write OTHER.md: fine"},
            {"id": "third", "repo": str(fleet.repos[2]), "prompt": "write THIRD.md: fine"},
        ],
    )
    out = tmp_path / "out"
    process = start_fleet(*_on(head, tasks, out, "--retries", "2"), env=fleet.env, cwd=tmp_path)
    try:
        assert model.blocked.wait(timeout=60), "the blocked request never arrived"
        worker = json.loads((out / "work" / "victim" / "worker.json").read_text())
        assert worker["attempt"] == 1
        # the first attempt's copy holds a file of its own: the retry must not see it
        (out / "work" / "victim" / "repo" / "PARTIAL").write_text("left by the dead attempt\n")
        os.kill(worker["pid"], signal.SIGKILL)
        model.release.set()
        _stdout, stderr = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    lines = results(out)
    assert sorted(r["id"] for r in lines) == ["other", "third", "victim"]  # one line each
    victim = next(r for r in lines if r["id"] == "victim")
    assert victim["status"] == "ok"
    assert json.loads((out / "work" / "victim" / "worker.json").read_text())["attempt"] == 2
    patch = (out / victim["patch"]).read_text()
    assert "KILLED.md" in patch and "PARTIAL" not in patch
    first_turns = [r for r in model.requests if "KILLED.md" in r.key and r.turn == 0]
    assert len(first_turns) == 2  # the dead attempt's request and the retry's


# --------------------------------------------------------------------------- rate limits shared by every worker


def test_a_429_holds_back_every_worker_until_the_shared_deadline(
    head: RayHead, model: ScriptedModel, tmp_path: Path
) -> None:
    model.first_429 = True
    model.retry_after_ms = 1500
    fleet = _fleet(tmp_path, model)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "one", "repo": str(fleet.repos[0]), "prompt": "write ONE.md: one"},
            {"id": "two", "repo": str(fleet.repos[1]), "prompt": "write TWO.md: two"},
        ],
    )
    out = tmp_path / "out"
    done = run_fleet(*_on(head, tasks, out), env=fleet.env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [r["status"] for r in results(out)] == ["ok", "ok"]
    limited = [r for r in model.requests if r.status == 429]
    assert len(limited) == 1  # only the request that met the limit: nobody hammered the provider
    deadline = limited[0].at + 1.5
    later = model.requests[2:]
    assert len(later) == 3  # the limited task's retry and both second turns
    # The other worker learned of the limit through the provider's actor, not from a 429 of its own:
    # its next request waited for the shared deadline too.
    assert all(r.at >= deadline - 0.05 for r in later), [(r.key, r.at - limited[0].at) for r in later]


def test_a_provider_answering_429_to_everyone_ends_in_error_lines(
    head: RayHead, model: ScriptedModel, tmp_path: Path
) -> None:
    model.always_429 = True
    model.retry_after_ms = 300
    fleet = _fleet(tmp_path, model, settings={"retry": {"maxRetries": 1, "baseDelayMs": 50}})
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": f"t{n}", "repo": str(fleet.repos[n]), "prompt": f"write T{n}.md: x"} for n in range(3)],
    )
    out = tmp_path / "out"
    done = run_fleet(*_on(head, tasks, out), env=fleet.env, cwd=tmp_path)
    assert done.returncode == 1
    lines = results(out)
    assert [r["status"] for r in lines] == ["error"] * 3
    assert all("429" in r["error"] or "rate limit" in r["error"].lower() for r in lines), lines
    assert model.count() == model.count(429) == 6  # pi's one retry per task, nothing more
    # every request after the first 429 waited at least the delay the provider asked for
    first = model.requests[0].at
    assert all(r.at >= first + 0.3 - 0.05 for r in model.requests[2:])


# --------------------------------------------------------------------------- Ctrl+C


def test_ctrl_c_cancels_every_running_task(model: ScriptedModel, tmp_path: Path) -> None:
    fleet = _fleet(tmp_path, model)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [{"id": f"c{n}", "repo": str(fleet.repos[n % 3]), "prompt": f"[hold] write C{n}.md: x"} for n in range(4)],
    )
    out = tmp_path / "out"
    # no --address: the run starts (and stops) an embedded local Ray with 2 CPUs
    process = start_fleet(*run_args(tasks, out, "--num-cpus", "2"), env=fleet.env, cwd=tmp_path)
    try:
        wait_for(lambda: model.count() == 2, timeout=60, what="two running tasks")
        pids = [
            json.loads((out / "work" / f"c{n}" / "worker.json").read_text())["pid"]
            for n in range(4)
            if (out / "work" / f"c{n}" / "worker.json").exists()
        ]
        assert len(pids) == 2
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        model.release.set()
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, stderr
    assert "stopped (Ctrl+C)" in stderr
    lines = results(out)
    assert sorted(r["id"] for r in lines) == ["c0", "c1", "c2", "c3"]
    assert all(r["status"] == "cancelled" for r in lines)
    assert "cancelled 4" in stdout
    for pid in pids:  # the workers are gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert model.count() == 2  # the queued tasks never started


def test_an_embedded_ray_without_token_authentication_is_warned_about(model: ScriptedModel, tmp_path: Path) -> None:
    """The embedded Ray listens on the machine's interfaces; its token keeps others out.
    With ``RAY_AUTH_MODE=disabled`` the run still goes, and says what that exposes."""
    fleet = _fleet(tmp_path, model)
    tasks = write_tasks(tmp_path / "tasks.jsonl", [{"id": "gone", "repo": str(tmp_path / "nowhere"), "prompt": "p"}])
    env = {**fleet.env, "RAY_AUTH_MODE": "disabled"}
    done = run_fleet(*run_args(tasks, tmp_path / "out", "--num-cpus", "1"), env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "pi fleet: warning: RAY_AUTH_MODE=disabled: the local Ray runs jobs for anyone" in done.stderr
    assert [r["status"] for r in results(tmp_path / "out")] == ["error"]


# --------------------------------------------------------------------------- the report page in a browser


def _chromium() -> str | None:
    explicit = os.environ.get("PI_TEST_CHROMIUM")
    if explicit:
        return explicit
    for candidate in ("/usr/bin/chromium", "/usr/bin/chromium-browser"):
        if os.access(candidate, os.X_OK):
            return candidate
    return shutil.which("chromium")


def test_the_report_page_in_a_browser(main_run: MainRun) -> None:
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (it is in the dev dependency group: uv sync)"
    )
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no chromium browser installed: `apt-get install chromium` (or set PI_TEST_CHROMIUM)")
    out = main_run.out
    fetched: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("request", lambda request: fetched.append(request.url))
            page.goto((out / "report.html").as_uri())
            assert page.title().startswith("pi fleet report")
            rows = page.locator("tbody tr")
            assert rows.count() == 7
            missing = page.locator("#task-missing")
            assert missing.locator("td.status").inner_text() == "error"
            assert "does not exist" in missing.locator("td.error").inner_text()
            assert missing.locator("a").count() == 0
            row = page.locator("#task-beta-new")
            assert row.locator("td.status").inner_text() == "ok"
            assert row.locator("td.tokens").inner_text() == "240"
            assert row.locator("td.cost").inner_text() == "$0.0012"
            assert "+1" in row.locator("td.patch").inner_text()
            assert "7 tasks: 6 ok, 1 error, 0 cancelled" in page.locator("p.totals").inner_text()
            # the patch link opens the patch
            row.locator("td.patch a").click()
            page.wait_for_load_state()
            assert page.url.endswith("/patches/beta-new.diff")
            assert "+beta notes" in page.locator("body").inner_text()
            # the session link opens the session's HTML export, which shows the task's prompt
            page.go_back()
            page.locator("#task-beta-new td.session a").click()
            page.wait_for_load_state()
            assert page.url.endswith("/sessions/beta-new.html")
            page.get_by_text("write docs/notes.md: beta notes").first.wait_for(timeout=10_000)
        finally:
            browser.close()
    # self-contained: nothing but the run's own files was loaded
    assert fetched and all(url.startswith("file://") for url in fetched), fetched


# --------------------------------------------------------------------------- plugins, policies, trust


POLICY = """
from pi_hookspecs import ToolCallResult, hookimpl


@hookimpl
def tool_call(event):
    if event.tool_name == "write" and "SECRET" in str(event.input.get("path", "")):
        return ToolCallResult(block=True, reason="the fleet policy forbids SECRET files")
"""


def test_policies_and_trust_apply_to_fleet_tasks_as_to_pi_print(
    head: RayHead, model: ScriptedModel, tmp_path: Path
) -> None:
    fleet = _fleet(tmp_path, model)
    (tmp_path / "policy.py").write_text(POLICY)
    tasks = write_tasks(
        tmp_path / "tasks.jsonl",
        [
            {"id": "blocked", "repo": str(fleet.repos[0]), "prompt": "write SECRET.md: do not"},
            {"id": "allowed", "repo": str(fleet.repos[0]), "prompt": "write PUBLIC.md: fine"},
            {
                "id": "with-settings",
                "repo": str(fleet.repos[1]),
                "prompt": "write S.md: s",
                "settings": {"defaultThinkingLevel": "low"},
            },
        ],
    )
    out = tmp_path / "out"
    common = _on(head, tasks, out, "-e", "policy.py")
    done = run_fleet(*common, env=fleet.env, cwd=tmp_path)
    assert done.returncode == 1
    by_id = {r["id"]: r for r in results(out)}
    # the plugin given with -e gates the session's tools as it would in pi -p
    assert by_id["blocked"]["status"] == "ok"
    assert (out / by_id["blocked"]["patch"]).read_text() == ""
    assert "the fleet policy forbids SECRET files" in (out / by_id["blocked"]["session"]).read_text()
    assert "PUBLIC.md" in (out / by_id["allowed"]["patch"]).read_text()
    # settings make the copy a project with something to protect: untrusted, the task refuses to run
    assert by_id["with-settings"]["status"] == "error"
    assert "not trusted" in by_id["with-settings"]["error"]
    assert model.count() == 4

    again = run_fleet(*common, "--approve", env=fleet.env, cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    settled = {r["id"]: r for r in results(out)}["with-settings"]
    assert settled["status"] == "ok"
    patch = (out / settled["patch"]).read_text()
    assert "S.md" in patch and ".pi/settings.json" not in patch  # the task's settings are not part of its patch
    assert model.count() == 6  # only the task that was not ok ran again
