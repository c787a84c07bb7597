#!/usr/bin/env python3
"""Regenerate the classifier and image models of pi's built-in catalogue from pi 1.6.0.

    python3 tools/update_typed_catalog.py [PI_TS]

``PI_TS`` (argument or environment variable) is the pi 1.6.0 wrapper script or its
directory, as for ``tools/update_catalog.py`` (which writes the chat models). This script
asks that installation for the models that do not chat and writes:

* ``pi_core/ai/catalog/typed.json``: per provider, its classifier and image models in
  the shape of a ``models.json`` model plus ``type`` (and ``output`` for image models),
  one model per line; read only when a classifier or image model is asked for;
* ``pi_core/ai/catalog/typed_providers.json``: the providers that have such models but no
  chat model (TypeSafe), with their display name, base URL and API — small, read at
  every start so that ``models.json`` and logins can name them.

Only data is copied, none of pi 1.6.0's code. Run ``pytest tests/ai/test_classify_registry.py``
afterwards.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from update_catalog import export as catalog_export
from update_catalog import pi_ts_root

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "pi_core" / "ai" / "catalog"

FIELDS = ("type", "id", "name", "api", "baseUrl", "input", "output", "inputLimits", "cost", "contextWindow")
FIELDS_WITH_EXTRAS = (*FIELDS, "headers", "compat")

EXPORT_JS = r"""
const root = process.argv[2];
const ai = `${root}/node_modules/@earendil-works/pi-ai`;
const all = await import(`${ai}/dist/providers/all.js`);
const fs = await import("node:fs");
const providers = {};
for (const provider of all.builtinProviders()) {
  const models = [...all.getBuiltinClassifierModels(provider.id), ...all.getBuiltinImageModels(provider.id)];
  if (models.length === 0) continue;
  providers[provider.id] = {
    name: provider.name,
    baseUrl: provider.baseUrl || undefined,
    chat: all.getBuiltinModels(provider.id).length,
    models,
  };
}
const readJson = (path) => JSON.parse(fs.readFileSync(path, "utf8"));
console.log(JSON.stringify({
  piAi: readJson(`${ai}/package.json`).version,
  generatedAt: readJson(`${ai}/dist/providers/data/.manifest.json`).generatedAt,
  providers,
}));
"""


def export(root: Path) -> dict[str, Any]:
    return catalog_export(root, EXPORT_JS, "update_typed_catalog")


def main(argv: list[str]) -> int:
    source = argv[0] if argv else os.environ.get("PI_TS")
    if not source:
        sys.exit("usage: tools/update_typed_catalog.py PI_TS  (or set PI_TS): the pi 1.6.0 wrapper or its directory")
    data = export(pi_ts_root(source))
    compact = {"separators": (",", ":"), "ensure_ascii": False}
    origin = "pi 1.6.0 (@earendil-works/pi-ai " + data["piAi"] + ")"
    lines = [
        "{",
        f'"source":{json.dumps(origin)},',
        f'"generatedAt":{json.dumps(data["generatedAt"])},',
        '"providers":{',
    ]
    blocks = []
    typed_only: dict[str, Any] = {}
    total = 0
    for provider, info in data["providers"].items():
        models = [{k: m[k] for k in FIELDS_WITH_EXTRAS if m.get(k) is not None} for m in info["models"]]
        total += len(models)
        rows = ",\n".join(json.dumps(m, **compact) for m in models)  # type: ignore[arg-type]
        blocks.append(f"{json.dumps(provider)}:[\n{rows}]")
        if info["chat"] == 0:
            first = models[0]
            typed_only[provider] = {"name": info["name"], "baseUrl": info.get("baseUrl") or first["baseUrl"]}
            typed_only[provider]["api"] = first["api"]
    lines.append(",\n".join(blocks))
    lines.append("}}")
    (CATALOG / "typed.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (CATALOG / "typed_providers.json").write_text(json.dumps(typed_only, indent=1) + "\n", encoding="utf-8")
    print(f"update_typed_catalog: {total} classifier and image models of {len(blocks)} providers -> {CATALOG}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
