"""Plugin packages recorded in settings ``packages`` and what is installed.

An entry is ``{"source": SPEC, "distribution": NAME}`` or a plain spec string. pi never
installs anything by itself; :func:`missing_packages` finds recorded packages that are
not installed so pi can say which ``pi install`` command to run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from pi_hookspecs import ENTRY_POINT_GROUP


def installed() -> dict[str, str]:
    """Installed distributions: normalised name -> version (fresh on every call)."""
    out = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out[normalize(name)] = dist.version
    return out


def normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def extensions_of(distribution: str) -> list[str]:
    """Names of the ``pi.extensions`` entry points a distribution provides."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return []
    return sorted(ep.name for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP)


@dataclass
class Recorded:
    source: str
    distribution: str | None

    def to_json(self) -> Any:
        return {"source": self.source, "distribution": self.distribution} if self.distribution else self.source


def recorded(data: dict[str, Any]) -> list[Recorded]:
    out = []
    for item in data.get("packages") or []:
        if isinstance(item, str):
            out.append(Recorded(item, guess_distribution(item)))
        elif isinstance(item, dict) and isinstance(item.get("source"), str):
            out.append(Recorded(item["source"], item.get("distribution") or guess_distribution(item["source"])))
    return out


def guess_distribution(spec: str) -> str | None:
    """The distribution name of a PyPI spec (``pi-foo>=1``); None for paths and URLs."""
    if is_path_or_url(spec):
        return None
    from packaging.requirements import (  # ~35 ms: only a settings `packages` entry needs it
        InvalidRequirement,
        Requirement,
    )

    try:
        return Requirement(spec).name
    except InvalidRequirement:
        return None


def is_path_or_url(spec: str) -> bool:
    return "://" in spec or spec.startswith(("git+", ".", "/", "~")) or os.sep in spec or Path(spec).exists()


def missing_packages(data: dict[str, Any]) -> list[Recorded]:
    have = installed()
    return [r for r in recorded(data) if r.distribution is None or normalize(r.distribution) not in have]


def missing_message(cwd: str, missing: list[Recorded]) -> str:
    specs = " ".join(_quote(r.source) for r in missing)
    return (
        f"this project's .pi/settings.json lists packages that are not installed: "
        f"{', '.join(r.source for r in missing)}. pi does not install them by itself; run: pi install -l {specs}"
    )


def _quote(spec: str) -> str:
    if spec.startswith("-e "):  # an editable install's record: ``-e PATH``
        return "-e " + _quote(spec[3:])
    return f"'{spec}'" if any(c in spec for c in " <>=!;*") else spec
