"""Dynamic provider catalogues through the real ``pi`` command: a provider plugin (in
the user's extensions folder, where ``pi update`` finds plugins)
supplies ``refresh_models``, which reads a local catalogue service. ``pi update --models``
refreshes it and stores the snapshot in ``models-store.json``; later runs start offline
from that snapshot; RPC mode refreshes it in the background unless ``PI_OFFLINE``."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import agent_dir, text_reply
from cli_helpers import run_pi as run_cli
from rpc_client import RpcProcess
from wire_server import WireServer, use_server

PLUGIN = """
import asyncio, json, os, urllib.request
from pi_hookspecs import CatalogueSnapshot, Model, ProviderDefinition, hookimpl

CATALOGUE = os.environ["ACME_CATALOGUE_URL"]


def fetch(api_key):
    request = urllib.request.Request(CATALOGUE + "/models", headers={"Authorization": f"Bearer {api_key}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.load(response)["data"]


async def refresh_models(refresh):
    if not refresh.allow_network:
        return None  # start from the stored snapshot
    data = await asyncio.to_thread(fetch, refresh.api_key)
    models = [Model(id=item["id"], context_window=item["context"], max_tokens=1024) for item in data]
    await refresh.publish(CatalogueSnapshot(models=models))
    return models


@hookimpl
def register_providers(register):
    register(ProviderDefinition(name="acme", base_url=os.environ["ACME_CHAT_URL"] + "/v1",
                                api="openai-completions", api_key="$ACME_KEY", refresh_models=refresh_models))
"""


class Catalogue:
    """A catalogue service: ``GET /models`` answers ``models`` (or ``status``)."""

    def __init__(self) -> None:
        self.models: list[dict[str, Any]] = [{"id": "acme-large", "context": 200000}]
        self.status = 200
        self.requests: list[str] = []
        self.asked = threading.Event()
        self.gate = threading.Event()
        """Cleared: answers wait until it is set (a slow service)."""
        self.gate.set()
        catalogue = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                catalogue.requests.append(f"{self.path} {self.headers.get('Authorization')}")
                catalogue.asked.set()
                catalogue.gate.wait(30)
                body = json.dumps({"data": catalogue.models} if catalogue.status == 200 else {"error": "down"})
                self.send_response(catalogue.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def catalogue() -> Iterator[Catalogue]:
    service = Catalogue()
    yield service
    service.gate.set()
    service.server.shutdown()
    service.server.server_close()


@pytest.fixture
def project(tmp_path: Path, wire: WireServer, catalogue: Catalogue, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    extensions = agent_dir() / "extensions"
    extensions.mkdir(parents=True, exist_ok=True)
    (extensions / "acme.py").write_text(PLUGIN)
    monkeypatch.setenv("ACME_CATALOGUE_URL", catalogue.url)
    monkeypatch.setenv("ACME_CHAT_URL", wire.url)
    monkeypatch.setenv("ACME_KEY", "acme-secret")
    monkeypatch.delenv("PI_OFFLINE", raising=False)
    return root


def run_pi(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Any:
    """``pi`` with only the acme plugin of the installed and user ones (PI_EXTENSIONS)."""
    return run_cli(*args, cwd=cwd, env={"PI_EXTENSIONS": "acme", **(env or {})})


def _acme_rows(stdout: str) -> list[list[str]]:
    return [line.split() for line in stdout.splitlines() if line.startswith("acme ")]


def _store() -> dict[str, Any]:
    return json.loads((agent_dir() / "models-store.json").read_text())


def test_a_provider_without_credentials_is_not_said_to_be_refreshed(project: Path, catalogue: Catalogue) -> None:
    keyless = PLUGIN.replace('api_key="$ACME_KEY", ', "")
    assert keyless != PLUGIN
    (agent_dir() / "extensions" / "acme.py").write_text(keyless)  # no key anywhere: nothing to ask with
    done = run_pi("update", "--models", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Not asked (no credentials or server configured; see `pi auth login`): acme"
    assert catalogue.requests == []


def test_update_models_refreshes_stores_and_later_runs_start_from_the_snapshot(
    project: Path, wire: WireServer, catalogue: Catalogue
) -> None:
    assert _acme_rows(run_pi("--list-models", "acme", cwd=project).stdout) == []  # nothing known yet
    done = run_pi("update", "--models", cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Model catalogues refreshed: acme"
    assert catalogue.requests == ["/models Bearer acme-secret"]
    stored = _store()["acme"]
    assert [m["id"] for m in stored["models"]] == ["acme-large"]
    assert stored["models"][0]["provider"] == "acme" and stored["models"][0]["contextWindow"] == 200000
    assert isinstance(stored["checkedAt"], int)
    # offline start: from the snapshot, without asking the service
    listed = run_pi("--list-models", "acme", cwd=project)
    assert _acme_rows(listed.stdout) == [["acme", "acme-large", "200K", "1.0K", "no", "no"]]
    wire.enqueue(text_reply("hello from acme"))
    answer = run_pi("--model", "acme/acme-large", "-p", "hi", cwd=project)
    assert answer.returncode == 0, answer.stderr
    assert "hello from acme" in answer.stdout
    assert wire.requests[-1].body["model"] == "acme-large"
    assert len(catalogue.requests) == 1


def test_a_failing_refresh_names_the_provider_and_keeps_the_snapshot(project: Path, catalogue: Catalogue) -> None:
    assert run_pi("update", "--models", cwd=project).returncode == 0
    catalogue.status = 503
    catalogue.models = []
    done = run_pi("update", "--models", cwd=project)
    assert done.returncode == 1
    assert done.stderr.startswith("pi update: could not refresh model catalogues: acme: HTTPError")
    assert "Traceback" not in done.stderr
    assert [m["id"] for m in _store()["acme"]["models"]] == ["acme-large"]


def _model_ids(rpc: RpcProcess) -> list[str]:
    return [m["id"] for m in rpc.ok("get_available_models")["models"]]


def test_rpc_mode_refreshes_in_the_background_unless_offline(project: Path, catalogue: Catalogue) -> None:
    catalogue.models = [{"id": "acme-fresh", "context": 32000}]
    quiet = {"PI_EXTENSIONS": "acme"}
    with RpcProcess(cwd=project, env={**quiet, "PI_OFFLINE": "1"}) as rpc:
        assert "acme-fresh" not in _model_ids(rpc)
    assert catalogue.requests == []
    with RpcProcess(cwd=project, env=quiet) as rpc:
        assert catalogue.asked.wait(15)
        for _ in range(200):  # each a round trip to pi, until its refresh has landed
            if "acme-fresh" in _model_ids(rpc):
                break
        assert "acme-fresh" in _model_ids(rpc)
    assert [m["id"] for m in _store()["acme"]["models"]] == ["acme-fresh"]


def _open_while_refreshing(screen: Any, catalogue: Catalogue, command: str, title: str) -> None:
    """``command`` opens its picker at once while the service holds the start-up refresh;
    the service's answer then fills the open picker."""
    screen.wait_for("›")
    assert catalogue.asked.wait(15)  # the start-up refresh, held by the service
    screen.line(command)
    screen.wait_for(title)
    screen.wait_for("Refreshing model catalogs…")
    assert "acme/acme-large" not in screen.text()  # nothing cached yet: the picker did not wait
    catalogue.gate.set()
    screen.wait_for("Model catalogs refreshed.")
    screen.wait_for("acme/acme-large")


def _reopen_lists_a_new_model(screen: Any, catalogue: Catalogue, command: str, model_id: str) -> None:
    """A model the service offers since: opening the picker again asks again and lists it."""
    catalogue.models.append({"id": model_id, "context": 64000})
    asked = len(catalogue.requests)
    screen.line(command)
    screen.wait_for("Model catalogs refreshed.")
    screen.wait_for(f"acme/{model_id}")
    assert len(catalogue.requests) == asked + 1


def test_the_model_picker_refreshes_and_updates_while_open(project: Path, catalogue: Catalogue) -> None:
    """``/model`` in the terminal opens at once on the cached list and refreshes the
    dynamic catalogues meanwhile (as pi 1.6.0): a slow service keeps the picker usable,
    and its answer replaces the list in the open picker."""
    from tui_screen import PI, Screen, screen_env

    catalogue.gate.clear()  # the service answers only when the test says so
    env = screen_env(PI_EXTENSIONS="acme", ACME_CATALOGUE_URL=catalogue.url, ACME_KEY="acme-secret")
    screen = Screen([*PI, "--model", "faux/offline-demo"], cwd=project, env=env)
    try:
        _open_while_refreshing(screen, catalogue, "/model", "Which model?")
        screen.send("\x1b")
        screen.wait_for("? Which model? · (cancelled)")
        _reopen_lists_a_new_model(screen, catalogue, "/model", "acme-new")
        screen.send("acme-new")
        screen.send("\r")
        screen.wait_for("Model: acme/acme-new")
    finally:
        catalogue.gate.set()
        screen.close()


def test_scoped_models_refreshes_the_catalogues_as_it_opens(project: Path, catalogue: Catalogue) -> None:
    """``/scoped-models`` refreshes the dynamic catalogues as it opens (as pi 1.6.0):
    a slow service keeps the picker usable, the open list gains the service's models
    when it answers, and they can be enabled for Ctrl+P at once."""
    from tui_screen import PI, Screen, screen_env

    catalogue.gate.clear()  # the service answers only when the test says so
    env = screen_env(PI_EXTENSIONS="acme", ACME_CATALOGUE_URL=catalogue.url, ACME_KEY="acme-secret")
    screen = Screen([*PI, "--model", "faux/offline-demo"], cwd=project, env=env)
    try:
        _open_while_refreshing(screen, catalogue, "/scoped-models", "Models for Ctrl+P cycling")
        screen.send("\x1b")
        screen.wait_for("Ctrl+P cycles every available model")
        _reopen_lists_a_new_model(screen, catalogue, "/scoped-models", "acme-scoped")
        screen.send("acme-scoped")
        screen.send("\r")  # Enter toggles it
        screen.wait_for("[x] acme/acme-scoped")
        screen.send("\x1b")
        screen.wait_for("Ctrl+P cycles acme/acme-scoped")
    finally:
        catalogue.gate.set()
        screen.close()


STUCK = """
import asyncio, os
from pathlib import Path
from pi_hookspecs import ProviderDefinition, hookimpl

MARKS = Path(os.environ["STUCK_MARKS"])


async def refresh_models(refresh):
    if not refresh.allow_network:
        return None
    (MARKS / "started").write_text("")
    try:
        await asyncio.sleep(3600)  # a service that never answers, and the signal ignored
    except asyncio.CancelledError:
        (MARKS / "stopped").write_text(f"aborted={refresh.signal.aborted}")
        raise


@hookimpl
def register_providers(register):
    register(ProviderDefinition(name="stuck", base_url="http://127.0.0.1:9/v1", api="openai-completions",
                                api_key="key", refresh_models=refresh_models))
"""


def _wait_for_file(path: Path, timeout: float = 15) -> str:
    import time

    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.02)
    return path.read_text()


def test_disposing_of_the_session_stops_its_background_refresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refresh that ignores its abort signal is cancelled when its session goes (RPC
    ``new_session`` replaces it), and does not hold up pi's exit."""
    import time

    root = tmp_path / "stuck-project"
    root.mkdir()
    marks = tmp_path / "marks"
    marks.mkdir()
    extensions = agent_dir() / "extensions"
    extensions.mkdir(parents=True, exist_ok=True)
    (extensions / "stuck.py").write_text(STUCK)
    monkeypatch.delenv("PI_OFFLINE", raising=False)
    env = {"PI_EXTENSIONS": "stuck", "STUCK_MARKS": str(marks)}
    with RpcProcess("--model", "faux/offline-demo", cwd=root, env=env) as rpc:
        _wait_for_file(marks / "started")
        assert not (marks / "stopped").exists()
        rpc.ok("new_session")
        # at once (the refresh itself would give up only after 15 s), while pi still runs
        assert _wait_for_file(marks / "stopped", timeout=5) == "aborted=True"
        started = time.monotonic()
        rpc.close_stdin()
        assert rpc.wait(10) == 0
        assert time.monotonic() - started < 5
