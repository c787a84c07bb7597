#!/usr/bin/env python3
"""Regenerate pi's built-in model catalogue from an installed pi 1.6.0.

    python3 tools/update_catalog.py [PI_TS]

``PI_TS`` (argument or environment variable) is the pi 1.6.0 wrapper script that
``../shared/tools/install-pi-ts`` installs, or the directory holding its
``node_modules``. The script asks that installation, with its own JavaScript runtime
(the ``bun`` it ships, else ``bun`` or ``node`` from ``PATH``), for the facts pi
needs: every built-in provider (id, display name, base URL, login methods, the
environment variables of its key) with its chat models, and the default model of each
provider. It writes them in pi's own format:

* ``pi_core/ai/catalog/index.json``: the providers, and each provider's model ids and
  names (what ``--model`` resolution and ``--list-models`` filtering need; read on
  every run, so it stays small);
* ``pi_core/ai/catalog/providers/<id>.json``: the models of one provider, one per
  line (read only when one of its models is used or listed);
* the ``ENV_API_KEYS`` table in ``pi_core/ai/auth.py`` (between its ``BEGIN`` /
  ``END`` markers).

Only data is copied, none of pi 1.6.0's code. Run the catalogue tests afterwards
(``pytest tests/ai/test_ai_catalog.py``) and commit the changed files.
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "pi_core" / "ai" / "catalog"
AUTH = ROOT / "pi_core" / "ai" / "auth.py"

BEARER_ONLY = {"ANTHROPIC_AUTH_TOKEN"}
"""Variables pi 1.6.0 lists for a provider but sends as ``Authorization: Bearer``, not as
its key (``BEARER_ENV`` in auth.py)."""

FACTORED = ("input", "reasoning", "inputLimits", "compat", "promptCache", "thinkingLevelMap", "headers")
"""Model fields whose most common value per provider goes to the provider file's
``modelDefaults`` (a model with another value keeps its own, ``null`` for none)."""

MODEL_FIELDS = (
    "id",
    "name",
    "api",
    "baseUrl",
    "reasoning",
    "thinkingLevelMap",
    "input",
    "inputLimits",
    "promptCache",
    "cost",
    "contextWindow",
    "maxTokens",
    "samplingParams",
    "samplingParamsByThinkingLevel",
    "headers",
    "compat",
)
"""The fields of a ``models.json`` model that are copied (``provider`` and ``type`` are
implied by the file; fields pi's ``models.json`` does not know, such as a gateway's
routing metadata, are reported and left out)."""

EXPORT_JS = r"""
const root = process.argv[2];
const ai = `${root}/node_modules/@earendil-works/pi-ai`;
const agent = `${root}/node_modules/@earendil-works/pi-coding-agent`;
const { builtinProviders } = await import(`${ai}/dist/providers/all.js`);
const { findEnvKeys } = await import(`${ai}/dist/env-api-keys.js`);
const { defaultModelPerProvider } = await import(`${agent}/dist/core/model-resolver.js`);
const fs = await import("node:fs");
const readJson = (path) => JSON.parse(fs.readFileSync(path, "utf8"));
// Every variable "set": findEnvKeys then lists all of a provider's variables, in order.
const everyVariable = new Proxy({}, { get: (_target, name) => (typeof name === "string" ? "1" : undefined) });
const providers = builtinProviders().map((provider) => ({
  id: provider.id,
  name: provider.name,
  baseUrl: provider.baseUrl || undefined,
  headers: provider.headers || undefined,
  login: Object.fromEntries(
    Object.entries(provider.auth ?? {})
      .filter(([, method]) => method)
      .map(([kind, method]) => [kind, { name: method.name, subscription: method.isSubscription || undefined }]),
  ),
  env: findEnvKeys(provider.id, everyVariable) ?? [],
  models: provider.getModels(),
}));
const manifest = readJson(`${ai}/dist/providers/data/.manifest.json`);
console.log(JSON.stringify({
  piAi: readJson(`${ai}/package.json`).version,
  codingAgent: readJson(`${agent}/package.json`).version,
  generatedAt: manifest.generatedAt,
  defaults: defaultModelPerProvider,
  providers,
}));
"""


def pi_ts_root(value: str) -> Path:
    path = Path(value).expanduser().resolve()
    if path.is_file():
        path = path.parent
    if not (path / "node_modules" / "@earendil-works" / "pi-ai").is_dir():
        sys.exit(f"update_catalog: {path} holds no pi 1.6.0 (node_modules/@earendil-works/pi-ai is missing)")
    return path


def runtime(root: Path) -> str:
    for candidate in (root / "node_modules" / ".bin" / "bun", shutil.which("bun"), shutil.which("node")):
        if candidate and Path(candidate).exists():
            return str(candidate)
    sys.exit("update_catalog: neither bun nor node found")


def export(root: Path, export_js: str = EXPORT_JS, tool: str = "update_catalog") -> dict[str, Any]:
    """What ``export_js`` (a JavaScript module given the pi 1.6.0 directory ``root``)
    prints as JSON, run with that installation's runtime; ``tool`` names the failure."""
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "export.mjs"
        script.write_text(export_js, encoding="utf-8")
        done = subprocess.run([runtime(root), str(script), str(root)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{tool}: the export failed:\n{done.stderr[-3000:]}")
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


skipped: dict[str, set[str]] = collections.defaultdict(set)
"""Provider -> model fields left out (reported at the end)."""


def compact_provider(provider: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The provider's index entry and its models file."""
    models = [m for m in provider["models"] if m.get("type", "chat") == "chat"]
    api = collections.Counter(m["api"] for m in models).most_common(1)[0][0] if models else None
    base_url = provider.get("baseUrl")
    if not base_url and models:
        base_url = collections.Counter(m.get("baseUrl") or None for m in models).most_common(1)[0][0]
    defaults: dict[str, Any] = {}
    for field in FACTORED:
        counts = collections.Counter(_key(m.get(field)) for m in models)
        if not counts:
            continue
        value, count = counts.most_common(1)[0]
        if count > 1 and value != "null":
            defaults[field] = json.loads(value)
    entries = []
    for model in models:
        entry = {k: v for k, v in model.items() if k in MODEL_FIELDS}
        unknown = sorted(set(model) - set(MODEL_FIELDS) - {"provider", "type"})
        if unknown:
            skipped[provider["id"]].update(unknown)
        if entry.get("api") == api:
            entry.pop("api")
        if (entry.get("baseUrl") or None) == base_url:
            entry.pop("baseUrl", None)
        for field, value in defaults.items():
            if field not in entry:
                entry[field] = None
            elif _key(entry[field]) == _key(value):
                del entry[field]
        entries.append(entry)
    index: dict[str, Any] = {"name": provider["name"]}
    if base_url:
        index["baseUrl"] = base_url
    if api:
        index["api"] = api
    if provider.get("headers"):
        index["headers"] = provider["headers"]
    index["login"] = provider["login"]
    index["models"] = [[m["id"]] if m.get("name", m["id"]) == m["id"] else [m["id"], m["name"]] for m in models]
    return index, {"modelDefaults": defaults, "models": entries}


def write_provider_file(path: Path, data: dict[str, Any]) -> None:
    """One model per line, so that a refresh shows as a readable diff."""
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    lines = ["{", f'"modelDefaults":{json.dumps(data["modelDefaults"], **compact)},', '"models":[']  # type: ignore[arg-type]
    lines.append(",\n".join(json.dumps(m, **compact) for m in data["models"]))  # type: ignore[arg-type]
    lines.append("]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_index(path: Path, data: dict[str, Any]) -> None:
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    lines = ["{"]
    for key in ("source", "generatedAt", "defaults"):
        lines.append(f"{json.dumps(key)}:{json.dumps(data[key], **compact)},")  # type: ignore[arg-type]
    lines.append('"providers":{')
    lines.append(
        ",\n".join(f"{json.dumps(name)}:{json.dumps(entry, **compact)}" for name, entry in data["providers"].items())  # type: ignore[arg-type]
    )
    lines.append("}}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def env_table(providers: list[dict[str, Any]]) -> str:
    lines = ["ENV_API_KEYS: dict[str, tuple[str, ...]] = {"]
    for provider in providers:
        names = [n for n in provider["env"] if n not in BEARER_ONLY]
        if names:
            values = ", ".join(json.dumps(n) for n in names) + ("," if len(names) == 1 else "")
            lines.append(f"    {json.dumps(provider['id'])}: ({values}),")
    lines.append("}")
    return "\n".join(lines)


def update_auth(table: str) -> None:
    text = AUTH.read_text(encoding="utf-8")
    pattern = re.compile(r"(# BEGIN ENV_API_KEYS[^\n]*\n).*?(\n# END ENV_API_KEYS)", re.DOTALL)
    if not pattern.search(text):
        sys.exit(f"update_catalog: {AUTH} has no '# BEGIN ENV_API_KEYS' ... '# END ENV_API_KEYS' block")
    AUTH.write_text(pattern.sub(lambda m: m.group(1) + table + m.group(2), text, count=1), encoding="utf-8")


def main(argv: list[str]) -> int:
    source = argv[0] if argv else os.environ.get("PI_TS")
    if not source:
        sys.exit("usage: tools/update_catalog.py PI_TS  (or set PI_TS): the pi 1.6.0 wrapper or its directory")
    data = export(pi_ts_root(source))
    providers_dir = CATALOG / "providers"
    providers_dir.mkdir(parents=True, exist_ok=True)
    index: dict[str, Any] = {
        "source": f"pi 1.6.0 (@earendil-works/pi-ai {data['piAi']}, pi-coding-agent {data['codingAgent']})",
        "generatedAt": data["generatedAt"],
        "defaults": data["defaults"],
        "providers": {},
    }
    written = set()
    total = 0
    for provider in data["providers"]:
        entry, models = compact_provider(provider)
        if not models["models"]:
            continue  # classifier-only providers (typesafe): pi has no chat model there
        index["providers"][provider["id"]] = entry
        write_provider_file(providers_dir / f"{provider['id']}.json", models)
        written.add(f"{provider['id']}.json")
        total += len(models["models"])
    for stale in providers_dir.glob("*.json"):
        if stale.name not in written:
            stale.unlink()
    write_index(CATALOG / "index.json", index)
    update_auth(env_table(data["providers"]))
    for name, fields in sorted(skipped.items()):
        print(f"update_catalog: {name}: left out model fields {', '.join(sorted(fields))}", file=sys.stderr)
    print(f"update_catalog: {len(written)} providers, {total} models from {index['source']} -> {CATALOG}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
