"""pluggable-pi-vertex: google-auth's real credential code against a local OAuth token endpoint,
lending its tokens to pi's google-vertex API against a local Vertex AI server.

The service-account key files the tests write (a fresh RSA key) name the loopback
token endpoint as their ``token_uri``; google-auth signs its JWT grant with the key and
the endpoint checks it. Nothing leaves the machine. (A user login's file cannot be
pointed elsewhere: google-auth always sends it to Google's endpoint.)
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests" / "ai"))
sys.path.insert(0, str(ROOT / "tests" / "cli"))

from cli_helpers import run_pi  # noqa: E402
from google_wire import chunk, gemini_stream, gemini_text  # noqa: E402
from wire_server import WireServer, use_server  # noqa: E402

import pi_vertex  # noqa: E402
from pi_core.ai import ModelRegistry  # noqa: E402
from pi_core.runtime.services import ServiceOptions, create_services  # noqa: E402
from pi_hookspecs import LlmContext, StreamOptions, UserMessage  # noqa: E402
from pi_vertex import VertexCredentials  # noqa: E402

MODEL_ID = "gemini-2.5-flash"
VERTEX_PATH = (
    f"/us-central1/v1/projects/my-project/locations/us-central1/publishers/google/models/"
    f"{MODEL_ID}:streamGenerateContent?alt=sse"
)


# --------------------------------------------------------------------------- a local OAuth token endpoint


class TokenServer:
    """Answers ``POST /token`` like Google's OAuth endpoint: ``access_token`` numbered
    from 1, ``expires_in`` as set; or an OAuth error when ``fail`` is set."""

    def __init__(self) -> None:
        self.requests: list[dict[str, str]] = []
        self.expires_in = 3600
        self.fail: str | None = None
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = dict(urllib.parse.parse_qsl(self.rfile.read(length).decode()))
                server.requests.append(form)
                if server.fail:
                    status, body = 400, {"error": server.fail, "error_description": "Token has been revoked."}
                else:
                    status, body = (
                        200,
                        {
                            "access_token": f"token-{len(server.requests)}",
                            "expires_in": server.expires_in,
                            "token_type": "Bearer",
                        },
                    )
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def token_uri(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/token"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def tokens() -> Iterator[TokenServer]:
    server = TokenServer()
    yield server
    server.close()


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


@pytest.fixture
def agent(pi_agent_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private agent dir (the kit's ``pi_agent_dir``) and a Google Cloud environment
    that can only reach files the test writes (never the machine's gcloud config or a
    metadata server)."""
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "True")
    for name in (
        "GOOGLE_CLOUD_API_KEY",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "GOOGLE_CLOUD_PROJECT",
        "GCLOUD_PROJECT",
        "GOOGLE_CLOUD_LOCATION",
        "GOOGLE_CLOUD_QUOTA_PROJECT",
    ):
        monkeypatch.delenv(name, raising=False)
    return pi_agent_dir


def user_login(path: Path, token_uri: str, **fields: str) -> Path:
    """An ``authorized_user`` credentials file, as ``gcloud auth application-default login`` writes."""
    path.write_text(
        json.dumps(
            {
                "type": "authorized_user",
                "client_id": "client-1.apps.example",
                "client_secret": "secret",
                "refresh_token": "refresh-1",
                "token_uri": token_uri,
                **fields,
            }
        )
    )
    return path


_KEY: list[Any] = []


def service_account(path: Path, token_uri: str) -> tuple[Path, Any]:
    """A service-account key file (an RSA key made once per test run); returns it and
    the public key."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    if not _KEY:
        _KEY.append(rsa.generate_private_key(public_exponent=65537, key_size=2048))
    key = _KEY[0]
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    path.write_text(
        json.dumps(
            {
                "type": "service_account",
                "project_id": "sa-project",
                "private_key_id": "key-1",
                "private_key": pem,
                "client_email": "pi@sa-project.iam.gserviceaccount.com",
                "client_id": "1",
                "token_uri": token_uri,
            }
        )
    )
    return path, key.public_key()


def models_json(agent: Path, url: str) -> Path:
    path = agent / "models.json"
    path.write_text(
        json.dumps(
            {
                "providers": {
                    "google-vertex": {
                        "baseUrl": f"{url}/{{location}}",
                        "api": "google-vertex",
                        "models": [
                            {
                                "id": MODEL_ID,
                                "reasoning": True,
                                "input": ["text", "image"],
                                "contextWindow": 1048576,
                                "maxTokens": 8192,
                            }
                        ],
                    }
                }
            }
        )
    )
    return path


def registry_with(agent: Path, wire: WireServer, credentials: VertexCredentials) -> ModelRegistry:
    registry = ModelRegistry(models_path=models_json(agent, wire.url))
    registry.add_credential_source(credentials.source())
    return registry


async def ask(registry: ModelRegistry, text: str = "hi", **options: Any) -> Any:
    model = registry.get("google-vertex", MODEL_ID)
    assert model is not None
    return await registry.complete(model, LlmContext(messages=[UserMessage(content=text)]), StreamOptions(**options))


# --------------------------------------------------------------------------- tests


async def test_a_token_is_lent_and_kept_until_it_expires(
    agent: Path, wire: WireServer, tokens: TokenServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_file, _ = service_account(tmp_path / "sa.json", tokens.token_uri)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(key_file))
    monkeypatch.setenv("GOOGLE_CLOUD_QUOTA_PROJECT", "billing-project")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    registry = registry_with(agent, wire, VertexCredentials())
    assert registry.has_auth("google-vertex")

    wire.enqueue(gemini_text("first"), gemini_text("second"))
    first = await ask(registry)
    second = await ask(registry, "again")
    assert (first.text(), second.text()) == ("first", "second"), first.error_message
    # one token request: the token is valid for an hour
    assert len(tokens.requests) == 1
    assert tokens.requests[0]["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    for request in wire.requests:
        assert request.path == VERTEX_PATH
        assert request.headers["authorization"] == "Bearer token-1"
        assert request.headers["x-goog-user-project"] == "billing-project"
        assert "x-goog-api-key" not in request.headers


async def test_an_expiring_token_is_refreshed(
    agent: Path, wire: WireServer, tokens: TokenServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens.expires_in = 30  # inside google-auth's refresh margin: stale at once
    monkeypatch.setenv(
        "GOOGLE_APPLICATION_CREDENTIALS", str(service_account(tmp_path / "sa.json", tokens.token_uri)[0])
    )
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    registry = registry_with(agent, wire, VertexCredentials())
    wire.enqueue(gemini_text("a"), gemini_text("b"))
    await ask(registry)
    await ask(registry)
    assert len(tokens.requests) == 2
    assert [r.headers["authorization"] for r in wire.requests] == ["Bearer token-1", "Bearer token-2"]


async def test_a_service_account_from_the_auth_json_entry(
    agent: Path, wire: WireServer, tokens: TokenServer, tmp_path: Path
) -> None:
    key_file, public_key = service_account(tmp_path / "sa.json", tokens.token_uri)
    # what pi 1.6.0's /login stores for Vertex: no key, the environment to use
    (agent / "auth.json").write_text(
        json.dumps(
            {
                "google-vertex": {
                    "type": "api_key",
                    "env": {"GOOGLE_APPLICATION_CREDENTIALS": str(key_file), "GOOGLE_CLOUD_LOCATION": "us-central1"},
                }
            }
        )
    )
    credentials = VertexCredentials()
    registry = registry_with(agent, wire, credentials)
    assert registry.has_auth("google-vertex")  # the project comes from the key file
    wire.enqueue(gemini_stream([chunk([{"text": "signed"}], finish="STOP")]))
    message = await ask(registry)
    assert message.text() == "signed", message.error_message
    assert wire.requests[0].path == VERTEX_PATH.replace("my-project", "sa-project")
    assert wire.requests[0].headers["authorization"] == "Bearer token-1"

    # google-auth signed a JWT grant with the key: check it with the public key
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    grant = tokens.requests[0]
    assert grant["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
    header, claims, signature = grant["assertion"].split(".")

    def decode(part: str) -> bytes:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))

    public_key.verify(decode(signature), f"{header}.{claims}".encode(), padding.PKCS1v15(), hashes.SHA256())
    payload = json.loads(decode(claims))
    assert payload["iss"] == "pi@sa-project.iam.gserviceaccount.com"
    assert payload["aud"] == "https://oauth2.googleapis.com/token"  # google-auth's audience, whatever the URI
    assert payload["scope"] == "https://www.googleapis.com/auth/cloud-platform"


async def test_a_configured_api_key_is_used_instead(
    agent: Path, wire: WireServer, tokens: TokenServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(
        "GOOGLE_APPLICATION_CREDENTIALS", str(service_account(tmp_path / "sa.json", tokens.token_uri)[0])
    )
    registry = ModelRegistry(models_path=models_json(agent, wire.url))
    registry.add_credential_source(VertexCredentials().source())
    model = registry.get("google-vertex", MODEL_ID)
    assert model is not None
    # a custom endpoint (no {location}) with a key: Vertex AI express mode
    keyed = model.model_copy(update={"base_url": wire.url})
    wire.enqueue(gemini_text("keyed"))
    message = await registry.complete(
        keyed, LlmContext(messages=[UserMessage(content="hi")]), StreamOptions(api_key="vertex-key")
    )
    assert message.text() == "keyed", message.error_message
    assert wire.requests[0].headers["x-goog-api-key"] == "vertex-key"
    assert "authorization" not in wire.requests[0].headers
    assert not tokens.requests


def test_available_checks_files_and_settings_without_network(tmp_path: Path, agent: Path) -> None:
    credentials = VertexCredentials()
    login = user_login(tmp_path / "adc.json", "http://127.0.0.1:9/token")
    assert not credentials.available({"GOOGLE_CLOUD_PROJECT": "p", "GOOGLE_CLOUD_LOCATION": "l"})  # no file
    env = {"GOOGLE_APPLICATION_CREDENTIALS": str(login), "GOOGLE_CLOUD_LOCATION": "l"}
    assert not credentials.available(env)  # no project anywhere
    assert credentials.available({**env, "GCLOUD_PROJECT": "p"})
    assert not credentials.available({"GOOGLE_APPLICATION_CREDENTIALS": str(login), "GOOGLE_CLOUD_PROJECT": "p"})
    # gcloud's own file, found through CLOUDSDK_CONFIG
    gcloud = tmp_path / "gcloud"
    gcloud.mkdir()
    user_login(gcloud / "application_default_credentials.json", "http://127.0.0.1:9/token", quota_project_id="q")
    assert credentials.available({"GOOGLE_CLOUD_LOCATION": "l"})
    assert pi_vertex.adc_path({"CLOUDSDK_CONFIG": str(gcloud)}) == gcloud / "application_default_credentials.json"


async def test_a_revoked_login_says_what_to_do(
    agent: Path, wire: WireServer, tokens: TokenServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tokens.fail = "invalid_grant"
    monkeypatch.setenv(
        "GOOGLE_APPLICATION_CREDENTIALS", str(service_account(tmp_path / "sa.json", tokens.token_uri)[0])
    )
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "my-project")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-central1")
    message = await ask(registry_with(agent, wire, VertexCredentials()))
    assert message.stop_reason == "error"
    assert "invalid_grant" in message.error_message
    assert "gcloud auth application-default login" in message.error_message
    assert not wire.requests


async def test_missing_credentials_say_what_to_do(
    agent: Path, wire: WireServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "missing.json"))
    message = await ask(registry_with(agent, wire, VertexCredentials()))
    assert message.stop_reason == "error"
    assert message.error_message.startswith("Google Vertex AI: no Google Cloud credentials")
    assert "gcloud auth application-default login" in message.error_message
    assert not wire.requests


async def test_the_plugin_registers_its_source_through_register_providers(agent: Path, tmp_path: Path) -> None:
    services = await create_services(
        tmp_path, ServiceOptions(sdk_plugins=[pi_vertex], entry_points=False, agent_dir=agent)
    )
    registered = services.plugins.registry.credentials["google-vertex"]
    assert registered.value.resolve == pi_vertex._CREDENTIALS.resolve
    assert not services.models.has_auth("google-vertex")  # nothing configured yet
    login = user_login(tmp_path / "adc.json", "http://127.0.0.1:9/token")
    (agent / "auth.json").write_text(
        json.dumps(
            {
                "google-vertex": {
                    "type": "api_key",
                    "env": {
                        "GOOGLE_APPLICATION_CREDENTIALS": str(login),
                        "GOOGLE_CLOUD_PROJECT": "p",
                        "GOOGLE_CLOUD_LOCATION": "us-central1",
                    },
                }
            }
        )
    )
    services = await create_services(
        tmp_path, ServiceOptions(sdk_plugins=[pi_vertex], entry_points=False, agent_dir=agent)
    )
    assert services.models.has_auth("google-vertex")


def test_pi_print_with_application_default_credentials(
    agent: Path, wire: WireServer, tokens: TokenServer, tmp_path: Path
) -> None:
    """``pi -p`` end to end: the installed plugin found through its entry point,
    google-auth's token sent to Vertex AI; google-auth is imported by this run only."""
    models_json(agent, wire.url)
    login, _ = service_account(tmp_path / "sa.json", tokens.token_uri)
    wire.enqueue(gemini_text("Hello from Vertex AI"))
    env = {
        "PI_EXTENSIONS": "vertex",
        "GOOGLE_APPLICATION_CREDENTIALS": str(login),
        "GOOGLE_CLOUD_PROJECT": "my-project",
        "GOOGLE_CLOUD_LOCATION": "us-central1",
        "PYTHONPROFILEIMPORTTIME": "1",
    }
    done = run_pi("-p", "--no-session", "--model", f"google-vertex/{MODEL_ID}", "hi", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "Hello from Vertex AI"
    assert wire.requests[0].path == VERTEX_PATH
    assert wire.requests[0].headers["authorization"] == "Bearer token-1"
    assert "import time:" in done.stderr and "google.auth" in done.stderr


async def test_a_stored_credentials_file_that_is_missing(agent: Path, wire: WireServer, tmp_path: Path) -> None:
    (agent / "auth.json").write_text(
        json.dumps(
            {
                "google-vertex": {
                    "type": "api_key",
                    "env": {
                        "GOOGLE_APPLICATION_CREDENTIALS": str(tmp_path / "gone.json"),
                        "GOOGLE_CLOUD_PROJECT": "p",
                        "GOOGLE_CLOUD_LOCATION": "us-central1",
                    },
                }
            }
        )
    )
    registry = registry_with(agent, wire, VertexCredentials())
    assert not registry.has_auth("google-vertex")
    message = await ask(registry)
    assert message.stop_reason == "error" and "gone.json was not found" in message.error_message
    assert "gcloud auth application-default login" in message.error_message
    assert not wire.requests
