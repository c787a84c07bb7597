"""The built-in catalogue: pi 1.6.0's providers and models as data, read lazily.

Where ``PI_TS`` names an installed pi 1.6.0, model resolution is compared with pi
1.6.0's own resolver over its own catalogue (run under the Bun it ships).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pi_core.ai import ModelRegistry, ModelResolutionError, catalog
from pi_core.ai.auth import BEARER_ENV, ENV_API_KEYS
from pi_core.ai.builtin import BUILTIN_APIS, PLUGIN_APIS
from pi_core.ai.config import ModelConfig
from pi_core.ai.selection import collation_key, glob_regex
from pi_hookspecs import THINKING_LEVELS, ProviderDefinition

REPO = Path(__file__).resolve().parents[2]
ALL_KEY_VARS = {name for names in ENV_API_KEYS.values() for name in names} | set(BEARER_ENV.values())

PI_1_6_0_APIS = {
    "anthropic-messages",
    "openai-completions",
    "openai-responses",
    "google-generative-ai",
    "google-vertex",
    "mistral-conversations",
    "azure-openai-responses",
    "openai-codex-responses",
    "bedrock-converse-stream",
    "pi-messages",
}
"""The wire APIs of pi 1.6.0's chat models (issue 15, and pi-messages of issue 33)."""


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ALL_KEY_VARS:
        monkeypatch.delenv(name, raising=False)


def all_models() -> list[tuple[str, dict]]:  # type: ignore[type-arg]
    return [(p, m) for p in catalog.provider_ids() for m in catalog.provider_models(p).values()]


# ---------------------------------------------------------------------------- the data


def test_every_provider_and_model_of_pi_1_6_0() -> None:
    providers = catalog.provider_ids()
    assert len(providers) >= 40
    assert {
        "anthropic",
        "openai",
        "google",
        "google-vertex",
        "amazon-bedrock",
        "azure",
        "mistral",
        "groq",
        "xai",
        "openrouter",
        "deepseek",
        "cerebras",
        "cloudflare-workers-ai",
        "github-copilot",
        "openai-codex",
    } <= set(providers)
    assert len(all_models()) >= 1500
    assert catalog.index()["source"].startswith("pi 1.6.0")
    google = catalog.provider_info("google")
    assert google is not None and google["name"] == "Google"
    assert (
        google["baseUrl"] == "https://generativelanguage.googleapis.com/v1beta"
        and google["api"] == "google-generative-ai"
    )
    pro = catalog.model_entry("google", "gemini-2.5-pro")
    assert pro is not None and pro["contextWindow"] == 1_048_576 and pro["maxTokens"] == 65_536 and pro["reasoning"]
    assert pro["input"] == ["text", "image"] and pro["cost"]["input"] == 1.25 and "cacheRead" in pro["cost"]
    opus = catalog.model_entry("anthropic", "claude-opus-4-8")
    assert opus is not None and opus["cost"] == {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25}
    assert opus["thinkingLevelMap"] == {"xhigh": "xhigh", "max": "max"} and opus["compat"]["forceAdaptiveThinking"]


def test_every_model_is_a_valid_models_json_model() -> None:
    for provider, model in all_models():
        where = f"{provider}/{model.get('id')}"
        ModelConfig.model_validate(model)  # raises on an unknown field or a bad value
        assert model["contextWindow"] > 0 and model["maxTokens"] > 0, where
        assert set(model["cost"]) >= {"input", "output", "cacheRead", "cacheWrite"}, where
        assert set(model.get("input", ["text"])) <= {"text", "image"}, where
        assert set(model.get("thinkingLevelMap") or {}) <= set(THINKING_LEVELS), where
        assert None not in model.values(), where  # null in a file means "none": dropped when read


def test_the_index_lists_each_providers_models_in_order() -> None:
    for provider in catalog.provider_ids():
        rows = catalog.provider_info(provider)["models"]  # type: ignore[index]
        models = catalog.provider_models(provider)
        assert [row[0] for row in rows] == list(models), provider
        assert [row[-1] for row in rows] == [m.get("name", m["id"]) for m in models.values()], provider


def test_every_api_is_one_pi_speaks_or_a_documented_plugin_api() -> None:
    docs = (REPO / "docs" / "providers.md").read_text(encoding="utf-8")
    apis = {m.get("api") or catalog.provider_info(p)["api"] for p, m in all_models()}  # type: ignore[index]
    assert apis <= PI_1_6_0_APIS, apis - PI_1_6_0_APIS
    for api in apis:
        assert api in BUILTIN_APIS or api in PLUGIN_APIS or f"`{api}`" in docs, api


def test_environment_variables_of_each_provider() -> None:
    assert ENV_API_KEYS["google"] == ("GEMINI_API_KEY",)
    assert ENV_API_KEYS["groq"] == ("GROQ_API_KEY",) and ENV_API_KEYS["xai"] == ("XAI_API_KEY",)
    assert ENV_API_KEYS["openrouter"] == ("OPENROUTER_API_KEY",) and ENV_API_KEYS["mistral"] == ("MISTRAL_API_KEY",)
    assert ENV_API_KEYS["deepseek"] == ("DEEPSEEK_API_KEY",) and ENV_API_KEYS["cerebras"] == ("CEREBRAS_API_KEY",)
    assert ENV_API_KEYS["anthropic"] == ("ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY")  # pi 1.6.0's order
    assert ENV_API_KEYS["qwen-token-plan"] == ("QWEN_TOKEN_PLAN_TEAM_API_KEY", "QWEN_TOKEN_PLAN_API_KEY")
    assert ENV_API_KEYS["google-vertex"] == ("GOOGLE_CLOUD_API_KEY",)
    # every catalogue provider has its variables, but for the login-only and cloud-credential ones
    assert set(catalog.provider_ids()) - set(ENV_API_KEYS) == {"openai-codex", "amazon-bedrock"}
    assert set(ENV_API_KEYS) - set(catalog.provider_ids()) == {"typesafe"}  # classifier models only


def test_default_models_are_pi_1_6_0s() -> None:
    defaults = catalog.DEFAULT_MODELS
    assert list(defaults)[:3] == ["amazon-bedrock", "ant-ling", "anthropic"] and list(defaults)[-1] == "faux"
    assert defaults["google"] == "gemini-4-argon" and defaults["anthropic"] == "claude-opus-5-5"
    for provider, model_id in defaults.items():
        if provider != "faux":
            assert catalog.model_entry(provider, model_id) is not None, (provider, model_id)


def test_the_catalogue_ships_in_the_package() -> None:
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'packages = ["pi_core"]' in pyproject  # hatch takes every file of the package, .json included
    files = {p.name for p in (REPO / "pi_core" / "ai" / "catalog").rglob("*.json")}
    assert {"index.json", "google.json", "anthropic.json"} <= files
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "pi_core/ai/catalog/index.json"], cwd=REPO, capture_output=True, check=False
    )
    assert ignored.returncode in (1, 128)  # not ignored by git (hatch would leave it out); 128: not a checkout


# ---------------------------------------------------------------------------- laziness

LAZY_PROBE = r"""
import json, sys
from pi_core.ai import registry as registry_module, catalog
built = []
original = registry_module.ModelRegistry._materialise
def counting(self, provider, entry):
    built.append(f"{provider.name}/{entry['id']}")
    return original(self, provider, entry)
registry_module.ModelRegistry._materialise = counting
import pi_core.ai
after_import = catalog.index.cache_info().currsize
registry = pi_core.ai.ModelRegistry()
default = registry.default_model().ref
constructed = list(built)
registry.resolve(sys.argv[1])
print(json.dumps({"after_import": after_import, "default": default, "constructed": constructed,
                  "after_resolve": list(built), "files": catalog.provider_models.cache_info().currsize}))
"""


def _probe(agent_dir: Path, pattern: str, env: dict[str, str] | None = None) -> dict:  # type: ignore[type-arg]
    clean = {k: v for k, v in os.environ.items() if k not in ALL_KEY_VARS}
    done = subprocess.run(
        [sys.executable, "-c", LAZY_PROBE, pattern],
        capture_output=True,
        text=True,
        env={**clean, "PI_CODING_AGENT_DIR": str(agent_dir), **(env or {})},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict = json.loads(done.stdout)  # type: ignore[type-arg]
    return result


def test_startup_builds_no_model_of_the_catalogue(agent_dir: Path) -> None:
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local": {
                        "baseUrl": "http://127.0.0.1:9/v1",
                        "api": "openai-completions",
                        "apiKey": "k",
                        "models": [{"id": "m"}],
                    }
                }
            }
        )
    )
    probe = _probe(agent_dir, "local/m")
    assert probe["after_import"] == 0  # importing pi_core.ai reads no catalogue file
    assert probe["default"] == "local/m"
    assert probe["constructed"] == ["local/m"] and probe["after_resolve"] == ["local/m"]
    assert probe["files"] == 0  # no provider file read


def test_a_built_in_model_reads_one_provider_file(agent_dir: Path) -> None:
    probe = _probe(agent_dir, "google/gemini-2.5-pro:high", {"GEMINI_API_KEY": "x"})
    assert probe["default"] == "google/gemini-4-argon"
    assert probe["constructed"] == ["google/gemini-4-argon"]
    assert probe["after_resolve"] == ["google/gemini-4-argon", "google/gemini-2.5-pro"]
    assert probe["files"] == 1


# ---------------------------------------------------------------------------- resolution


def test_gemini_key_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = ModelRegistry()
    with pytest.raises(
        ModelResolutionError,
        match=r'"gemini-2.5-pro" is ambiguous across providers: '
        r"google-vertex/gemini-2.5-pro, google/gemini-2.5-pro\. No matching provider is authenticated",
    ):
        registry.resolve("gemini-2.5-pro")
    monkeypatch.setenv("GEMINI_API_KEY", "x")
    assert registry.default_model().ref == "google/gemini-4-argon"  # type: ignore[union-attr]
    assert registry.resolve("gemini-2.5-pro").model.ref == "google/gemini-2.5-pro"
    selection = registry.resolve("google/gemini-2.5-pro:high")
    assert selection.model.ref == "google/gemini-2.5-pro" and selection.thinking_level == "high"
    assert selection.model.api == "google-generative-ai" and selection.model.context_window == 1_048_576
    assert {m.provider for m in registry.available()} == {"google"}  # the offline demo only when named
    # another key: pi 1.6.0's order of default models decides (anthropic before google)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    assert registry.default_model().ref == "anthropic/claude-opus-5-5"  # type: ignore[union-attr]
    monkeypatch.setenv("OPENCODE_API_KEY", "x")
    with pytest.raises(ModelResolutionError, match="More than one matching provider is authenticated"):
        registry.resolve("claude-opus-4-8")  # anthropic and opencode both have a key


def test_inline_api_key_chooses_no_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "x")
    registry = ModelRegistry()
    with pytest.raises(ModelResolutionError, match="--api-key does not choose a provider"):
        registry.resolve("gemini-2.5-pro", inline_api_key=True)
    assert registry.resolve("google/gemini-2.5-pro", inline_api_key=True).model.provider == "google"


def test_custom_id_on_a_catalogue_provider_takes_its_default_model() -> None:
    selection = ModelRegistry().resolve("google/gemini-9-ultra:low")
    assert selection.model.id == "gemini-9-ultra" and selection.thinking_level == "low"
    assert selection.model.api == "google-generative-ai" and selection.model.context_window == 1_048_576
    assert selection.warning == 'Model "gemini-9-ultra" not found for provider "google". Using custom model id.'


def test_collation_is_javascripts_locale_compare() -> None:
    ids = [
        "claude-opus-5",
        "claude-opus-5-5",
        "~anthropic/claude-opus-latest",
        "us.anthropic.claude-opus-5-5",
        "Claude-Opus",
        "claude_opus",
        "claude.opus",
        "claude/opus",
        "a1",
        "aa",
        "gpt-5-5",
        "gpt-5.5",
        "GPT-5.5",
    ]
    # as Bun's (and Node's) ["..."].sort((a, b) => a.localeCompare(b)) orders them
    assert sorted(ids, key=collation_key) == [
        "~anthropic/claude-opus-latest",
        "a1",
        "aa",
        "claude_opus",
        "Claude-Opus",
        "claude-opus-5",
        "claude-opus-5-5",
        "claude.opus",
        "claude/opus",
        "gpt-5-5",
        "gpt-5.5",
        "GPT-5.5",
        "us.anthropic.claude-opus-5-5",
    ]


def test_globs_stay_within_a_path_segment() -> None:
    assert glob_regex("*sonnet*").match("claude-sonnet-4-6")
    assert not glob_regex("*sonnet*").match("anthropic/claude-sonnet-4.6")  # minimatch: * does not cross "/"
    assert glob_regex("openrouter/anthropic/*").match("openrouter/anthropic/claude-sonnet-4.6")
    assert glob_regex("**/claude-*").match("openrouter/anthropic/claude-x")
    assert glob_regex("gpt-5.[45]").match("GPT-5.4") and glob_regex("{gpt,o}*").match("o3")


# ---------------------------------------------------------------------------- models.json and plugins


def write_models(agent_dir: Path, data: object) -> None:
    (agent_dir / "models.json").write_text(json.dumps(data), encoding="utf-8")


def test_models_json_adds_to_overrides_and_reroutes_a_catalogue_provider(agent_dir: Path) -> None:
    write_models(
        agent_dir,
        {
            "providers": {
                "google": {
                    "baseUrl": "http://proxy.local/v1beta",
                    "models": [{"id": "gemini-local", "contextWindow": 8192, "baseUrl": "http://other.local"}],
                    "modelOverrides": {
                        "gemini-2.5-pro": {"name": "Pro via proxy", "cost": {"input": 1}, "compat": {"x": 1}}
                    },
                },
                "fireworks": {"baseUrl": "http://fw.local"},  # its models have two base URLs of their own
            }
        },
    )
    registry = ModelRegistry()
    assert registry.errors == []
    pro = registry.get("google", "gemini-2.5-pro")
    assert pro is not None and pro.base_url == "http://proxy.local/v1beta" and pro.name == "Pro via proxy"
    assert pro.cost.input == 1 and pro.cost.output == 10 and pro.context_window == 1_048_576
    assert pro.thinking_level_map is None and pro.reasoning and pro.compat == {"x": 1}
    assert registry.get("google", "gemini-2.5-flash").base_url == "http://proxy.local/v1beta"  # type: ignore[union-attr]
    local = registry.get("google", "gemini-local")
    assert local is not None and local.base_url == "http://other.local" and local.api == "google-generative-ai"
    assert {m.base_url for m in registry.models() if m.provider == "fireworks"} == {"http://fw.local"}
    # the catalogue's own URLs without models.json
    (agent_dir / "models.json").unlink()
    registry.reload()
    urls = {m.base_url for m in registry.models() if m.provider == "fireworks"}
    assert urls == {"https://api.fireworks.ai/inference", "https://api.fireworks.ai/inference/v1"}


def test_a_plugin_reroutes_a_catalogue_provider() -> None:
    registry = ModelRegistry()
    registry.add_provider(ProviderDefinition(name="opencode", base_url="https://gw.example"), source="plugin:gw")
    assert {m.base_url for m in registry.models() if m.provider == "opencode"} == {"https://gw.example"}
    registry.remove_providers("plugin:gw")
    assert len({m.base_url for m in registry.models() if m.provider == "opencode"}) > 1


def test_catalogue_models_are_valid_model_objects() -> None:
    models = ModelRegistry().models()
    assert len(models) >= 1500
    bedrock = [m for m in models if m.provider == "amazon-bedrock"]
    assert all(m.api == "bedrock-converse-stream" and m.base_url for m in bedrock)
    tiered = next(m for m in models if m.ref == "openai/gpt-5.5")
    assert tiered.cost.input == 5 and tiered.context_window == 272_000


# ---------------------------------------------------------------------------- pi 1.6.0 itself

PI_TS = os.environ.get("PI_TS")
needs_pi_ts = pytest.mark.skipif(
    not PI_TS, reason="PI_TS does not name an installed pi 1.6.0 (shared/tools/install-pi-ts)"
)

RESOLVE_JS = r"""
const root = process.argv[2];
const { builtinProviders } = await import(`${root}/node_modules/@earendil-works/pi-ai/dist/providers/all.js`);
const { resolveCliModel, resolveModelScopeFromModels } = await import(
  `${root}/node_modules/@earendil-works/pi-coding-agent/dist/core/model-resolver.js`);
const models = builtinProviders().flatMap((p) => p.getModels());
const cases = JSON.parse(await Bun.stdin.text());
console.log(JSON.stringify(cases.map((c) => {
  if (c.scope) {
    const { scopedModels, diagnostics } = resolveModelScopeFromModels(c.scope, models);
    return { refs: scopedModels.map((s) => [`${s.model.provider}/${s.model.id}`, s.thinkingLevel ?? null]),
             warnings: diagnostics.map((d) => d.message) };
  }
  const auth = new Set(c.auth);
  const r = resolveCliModel({ cliModel: c.model, cliProvider: c.provider ?? undefined,
    cliThinking: c.thinking ?? undefined,
    modelRuntime: { getModels: () => models, hasConfiguredAuth: (p) => auth.has(p) } });
  return { ref: r.model ? `${r.model.provider}/${r.model.id}` : null, thinking: r.thinkingLevel ?? null,
           warning: r.warning ?? null, error: r.error ?? null };
})));
"""

CASES = [
    ("gemini-2.5-pro", []),
    ("gemini-2.5-pro", ["google"]),
    ("gemini-2.5-pro", ["google", "google-vertex"]),
    ("google/gemini-2.5-pro:high", []),
    ("google/gemini-2.5-pro:high", ["google-vertex"]),
    ("gemini-2.5-pro:max", []),
    ("Sonnet 4.6", []),
    ("Sonnet 4.6", ["anthropic"]),
    ("opus", []),
    ("opus", ["anthropic"]),
    ("opus:xhigh", ["openrouter"]),
    ("claude-opus-4-8", ["anthropic", "opencode"]),
    ("gpt-5.5", []),
    ("gpt-5.5", ["openai"]),
    ("gpt-5.5", ["azure"]),
    ("openai/gpt-9-preview:low", []),
    ("claude-opus-4-8:turbo", []),
    ("zai/glm-5", []),
    ("zai/glm-5", ["vercel-ai-gateway"]),
    ("glm", ["zai"]),
    ("kimi", []),
    ("kimi", ["moonshotai"]),
    ("anthropic/claude-sonnet-4.6", ["openrouter"]),
    ("openrouter/anthropic/claude-sonnet-4.6", []),
    ("qwen", ["qwen-token-plan", "qwen-token-plan-cn"]),
    ("nonexistent-model", []),
    ("mistral/devstral", []),
    ("haiku", ["github-copilot"]),
    ("flash-lite", ["google"]),
    ("gemini", ["google"]),
    ("deepseek", ["deepseek"]),
    ("grok", []),
    ("llama", ["groq"]),
    ("xai/grok-4.7:minimal", []),
]


def _run_pi_ts(cases: list[dict]) -> list[dict]:  # type: ignore[type-arg]
    root = Path(PI_TS or "").resolve().parent
    bun = root / "node_modules" / ".bin" / "bun"
    script = Path(os.environ.get("TMPDIR", "/tmp")) / f"pi-resolve-{os.getpid()}.mjs"
    script.write_text(RESOLVE_JS, encoding="utf-8")
    try:
        done = subprocess.run(
            [str(bun), str(script), str(root)],
            input=json.dumps(cases),
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    finally:
        script.unlink()
    assert done.returncode == 0, done.stderr[-2000:]
    result: list[dict] = json.loads(done.stdout)  # type: ignore[type-arg]
    return result


@needs_pi_ts
def test_resolution_matches_pi_1_6_0(monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _run_pi_ts(
        [{"model": model, "auth": auth} for model, auth in CASES]
        + [
            {"model": "gpt-5.5", "provider": "OpenAI", "auth": []},
            {"model": "gemini-2.5-pro:high", "thinking": "low", "auth": []},
            {"model": "google/my-model:high", "thinking": "low", "auth": []},
        ]
    )
    registry = ModelRegistry(offline_demo=False)
    keyed: set[str] = set()
    monkeypatch.setattr(registry, "has_auth", lambda provider: provider in keyed)
    cases = [
        *((m, a, None, None) for m, a in CASES),
        ("gpt-5.5", [], "OpenAI", None),
        ("gemini-2.5-pro:high", [], None, "low"),
        ("google/my-model:high", [], None, "low"),
    ]
    for (pattern, auth, provider, thinking), want in zip(cases, expected, strict=True):
        keyed.clear()
        keyed.update(auth)
        try:
            got = registry.resolve(pattern, provider=provider, thinking=thinking)
            result = {"ref": got.model.ref, "thinking": got.thinking_level, "warning": got.warning, "error": None}
        except ModelResolutionError as error:
            result = {"ref": None, "thinking": None, "warning": None, "error": str(error)}
        assert result == want, (pattern, auth)


@needs_pi_ts
def test_scope_matches_pi_1_6_0() -> None:
    scopes = [
        ["*sonnet*"],
        ["gpt-5.5", "haiku:weird"],
        ["anthropic/claude-opus-*:high", "zzz*"],
        ["google/*flash*:low", "gemini-2.5-pro"],
        ["openrouter/anthropic/*"],
        ["claude-opus-4-8:max", "opus"],
    ]
    expected = _run_pi_ts([{"scope": s} for s in scopes])
    registry = ModelRegistry(offline_demo=False)
    for scope, want in zip(scopes, expected, strict=True):
        selected, warnings = registry.resolve_scope(scope)
        assert [[s.model.ref, s.thinking_level] for s in selected] == want["refs"], scope
        assert warnings == want["warnings"], scope


def test_no_regression_of_the_data_format() -> None:
    text = (REPO / "pi_core" / "ai" / "catalog" / "providers" / "google.json").read_text(encoding="utf-8")
    assert re.match(r'\{\n"modelDefaults":\{.*\},\n"models":\[\n\{"id":', text)  # one model per line
