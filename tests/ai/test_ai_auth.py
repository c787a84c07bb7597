"""auth.json: pi 1.6.0's format both ways, mode 0600, the cross-process lock, a broken
file never rewritten, and the Anthropic token variables."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_core.ai import ModelRegistry
from pi_core.ai import auth as auth_module
from pi_core.ai.auth import AuthFileError, AuthLockError, AuthStore
from pi_hookspecs import LlmContext, UserMessage

sys.path.insert(0, str(Path(__file__).parent))
from wire_server import WireServer, anthropic_message, anthropic_stream, collect, use_server

# auth.json as pi 1.6.0 writes it: JSON.stringify(data, null, 2), no final newline, the
# fields of each login kept as its flow returned them.
PI_160_AUTH = """{
  "anthropic": {
    "type": "oauth",
    "refresh": "sk-ant-ort01-refresh",
    "access": "sk-ant-oat01-access",
    "expires": 4102444800000
  },
  "openai-codex": {
    "type": "oauth",
    "access": "eyJhbGciOiJub25lIn0.eyJ4IjoxfQ.sig",
    "refresh": "rt_codex",
    "expires": 4102444800000,
    "accountId": "acct-42"
  },
  "github-copilot": {
    "type": "oauth",
    "refresh": "gho_github",
    "access": "tid=1;exp=1;proxy-ep=proxy.individual.githubcopilot.com",
    "expires": 4102444800000,
    "availableModelIds": [
      "gpt-4.1",
      "claude-sonnet-4"
    ]
  },
  "openai": {
    "type": "api_key",
    "key": "sk-openai"
  },
  "cloudflare-workers-ai": {
    "type": "api_key",
    "key": "cf-key",
    "env": {
      "CLOUDFLARE_ACCOUNT_ID": "account-id"
    }
  },
  "radius": {
    "type": "api_key",
    "key": "ünïcode-ключ"
  }
}"""


@pytest.fixture
def wire() -> Iterator[WireServer]:
    yield from use_server()


def pi_ts() -> str | None:
    """pi 1.6.0, when ``PI_TS`` names it (shared/tools/install-pi-ts)."""
    path = os.environ.get("PI_TS")
    return path if path and Path(path).exists() else None


def test_reads_a_file_pi_160_wrote(agent_dir: Path) -> None:
    (agent_dir / "auth.json").write_text(PI_160_AUTH, encoding="utf-8")
    store = AuthStore()
    assert store.error is None
    assert store.api_key("openai") == "sk-openai" and store.env("cloudflare-workers-ai") == {
        "CLOUDFLARE_ACCOUNT_ID": "account-id"
    }
    codex = store.oauth("openai-codex")
    assert codex is not None and codex.extra("accountId") == "acct-42" and codex.expires == 4102444800000
    copilot = store.oauth("github-copilot")
    assert copilot is not None and copilot.extra("availableModelIds") == ["gpt-4.1", "claude-sonnet-4"]
    registry = ModelRegistry()
    for provider in ("anthropic", "openai-codex", "github-copilot", "openai"):
        assert registry.has_auth(provider), provider
    assert {p: e["type"] for p, e in store.credentials().items()}["anthropic"] == "oauth"


def test_writes_keep_every_entry_in_pi_160_format(agent_dir: Path) -> None:
    path = agent_dir / "auth.json"
    path.write_text(PI_160_AUTH, encoding="utf-8")
    AuthStore().set_api_key("groq", "gsk-new")
    expected = json.loads(PI_160_AUTH)
    expected["groq"] = {"type": "api_key", "key": "gsk-new"}
    # byte for byte what JSON.stringify(data, null, 2) gives: pi 1.6.0 reads and rewrites it alike
    assert path.read_text(encoding="utf-8") == json.dumps(expected, indent=2, ensure_ascii=False)
    assert AuthStore().remove("groq") is True
    assert path.read_text(encoding="utf-8") == PI_160_AUTH
    assert AuthStore().remove("groq") is False


def test_written_with_mode_0600_in_a_new_directory(tmp_path: Path) -> None:
    path = tmp_path / "new" / "agent" / "auth.json"
    store = AuthStore(path)
    store.set_api_key("openai", "sk-1")
    assert (path.stat().st_mode & 0o777) == 0o600
    assert json.loads(path.read_text()) == {"openai": {"type": "api_key", "key": "sk-1"}}
    path.chmod(0o644)
    store.set_api_key("openai", "sk-2")
    assert (path.stat().st_mode & 0o777) == 0o600
    assert [p.name for p in path.parent.iterdir()] == ["auth.json"]  # no temporary or lock left


def test_symlinked_auth_json_stays_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "secrets" / "auth.json"
    real.parent.mkdir()
    real.write_text('{"openai": {"type": "api_key", "key": "sk-1"}}')
    link = tmp_path / "agent" / "auth.json"
    link.parent.mkdir()
    link.symlink_to(real)
    AuthStore(link).set_api_key("groq", "gsk")
    assert link.is_symlink() and set(json.loads(real.read_text())) == {"openai", "groq"}


def test_byte_order_mark_is_accepted(agent_dir: Path) -> None:
    (agent_dir / "auth.json").write_text(
        "\ufeff" + '{"openai": {"type": "api_key", "key": "sk-bom"}}', encoding="utf-8"
    )
    assert AuthStore().api_key("openai") == "sk-bom"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{\n  "openai": {"type": "api_key", "key": "sk-1"},\n}\n', "invalid JSON at line 3"),
        ('["openai"]', "expected an object of providers, got list"),
        ('{"openai": {"type": "api_key", "key": "sk-\udcff"}}', "not UTF-8 text (byte 42)"),
    ],
)
def test_broken_file_is_reported_and_never_rewritten(agent_dir: Path, text: str, problem: str) -> None:
    path = agent_dir / "auth.json"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    text = path.read_text(errors="surrogateescape")
    store = AuthStore()
    assert store.api_key("openai") is None
    assert store.error is not None and store.error.startswith(str(path)) and problem in store.error
    assert any(str(path) in e for e in ModelRegistry().errors)
    for write in (lambda: store.set_api_key("anthropic", "sk-ant"), lambda: store.remove("openai")):
        with pytest.raises(AuthFileError) as caught:
            write()
        assert str(path) in str(caught.value) and problem in str(caught.value)
        assert path.read_text(errors="surrogateescape") == text  # the other keys are not dropped: untouched
    assert not (agent_dir / "auth.json.lock").exists()


def test_a_held_lock_makes_writers_wait(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """pi 1.6.0 locks auth.json with the directory auth.json.lock: pi waits for it."""
    path = agent_dir / "auth.json"
    path.write_text("{}")
    lock = agent_dir / "auth.json.lock"
    lock.mkdir()
    monkeypatch.setattr(auth_module, "LOCK_TIMEOUT_SECONDS", 0.2)
    with pytest.raises(AuthLockError, match=r"auth\.json\.lock"):
        AuthStore().modify("openai", lambda _: {"type": "api_key", "key": "x"})
    assert path.read_text() == "{}"
    # a lock nobody touched for longer than the stale period belongs to a dead process
    old = time.time() - auth_module.LOCK_STALE_SECONDS - 5
    os.utime(lock, (old, old))
    AuthStore().set_api_key("openai", "sk-after-stale-lock")
    assert json.loads(path.read_text())["openai"]["key"] == "sk-after-stale-lock"
    assert not lock.exists()


_WRITER = textwrap.dedent(
    """
    import sys
    from pi_core.ai.auth import AuthStore
    store = AuthStore()
    for i in range(25):
        store.set_api_key(f"{sys.argv[1]}-{i}", f"key-{i}")
    """
)


def test_concurrent_writers_lose_nothing(agent_dir: Path) -> None:
    processes = [
        subprocess.Popen([sys.executable, "-c", _WRITER, name], stderr=subprocess.PIPE, text=True)
        for name in ("alpha", "beta", "gamma")
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    data = json.loads((agent_dir / "auth.json").read_text())
    assert len(data) == 75 and data["beta-24"] == {"type": "api_key", "key": "key-24"}


# --------------------------------------------------------------------------- Anthropic token variables


def _anthropic_models(agent_dir: Path, url: str) -> None:
    (agent_dir / "models.json").write_text(
        json.dumps({"providers": {"anthropic": {"baseUrl": url, "models": [{"id": "claude-test"}]}}})
    )


@pytest.mark.parametrize(
    ("variable", "token", "bearer"),
    [
        ("ANTHROPIC_AUTH_TOKEN", "proxy-token", True),
        ("ANTHROPIC_OAUTH_TOKEN", "sk-ant-oat01-from-env", True),
        ("ANTHROPIC_API_KEY", "sk-ant-api03-key", False),
    ],
)
async def test_anthropic_token_variables(
    variable: str, token: str, bearer: bool, agent_dir: Path, wire: WireServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(variable, token)
    _anthropic_models(agent_dir, wire.url)
    wire.enqueue(anthropic_stream(anthropic_message([{"type": "text", "text": "hi"}])))
    registry = ModelRegistry()
    assert registry.has_auth("anthropic")
    model = registry.get("anthropic", "claude-test")
    assert model is not None
    events = await collect(registry.stream(model, LlmContext(messages=[UserMessage(content="hi")])))
    assert events[-1].type == "done", events[-1]
    headers = wire.requests[0].headers
    if bearer:
        assert headers["authorization"] == f"Bearer {token}" and "x-api-key" not in headers
    else:
        assert headers["x-api-key"] == token and "authorization" not in headers
    oauth = token.startswith("sk-ant-oat")
    assert ("claude-code-20250219" in headers.get("anthropic-beta", "")) == oauth


# --------------------------------------------------------------------------- conformance with pi 1.6.0


@pytest.mark.skipif(pi_ts() is None, reason="PI_TS does not name an installed pi 1.6.0")
def test_pi_160_reads_what_pi_writes_and_the_other_way_round(agent_dir: Path, tmp_path: Path) -> None:
    tool = pi_ts()
    assert tool is not None
    store = AuthStore()
    store.set_api_key("openai", "sk-from-python")
    from pi_hookspecs import OAuthCredentials

    store.set_oauth("anthropic", OAuthCredentials(access="sk-ant-oat01-py", refresh="rt", expires=4102444800000))
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1"}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([tool, *args], env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)

    assert run("auth", "print-api-key", "--provider", "openai").stdout.strip() == "sk-from-python"
    assert run("auth", "print-bearer-token", "--provider", "anthropic").stdout.strip() == "sk-ant-oat01-py"
    # pi 1.6.0 rewrites the file (logout of one provider): Python reads the result, unchanged otherwise
    (agent_dir / "auth.json").write_text(PI_160_AUTH)
    done = run("auth", "logout", "openai")
    assert done.returncode == 0, done.stderr
    written = (agent_dir / "auth.json").read_text()
    expected = json.loads(PI_160_AUTH)
    del expected["openai"]
    assert written == json.dumps(expected, indent=2, ensure_ascii=False)
    assert AuthStore().oauth("openai-codex").extra("accountId") == "acct-42"  # type: ignore[union-attr]
    shutil.rmtree(agent_dir / "auth.json.lock", ignore_errors=True)
