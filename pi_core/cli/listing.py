"""``pi models`` / ``--list-models`` and ``pi sessions``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any


async def _registry() -> Any:
    """The model registry with the providers plugins register."""
    from ..runtime import ServiceOptions, create_services

    services = await create_services(os.getcwd(), ServiceOptions(mode="print"))
    for line in services.diagnostics:
        print(f"pi: {line}", file=sys.stderr)
    return services.models


def _fuzzy(search: str, text: str) -> bool:
    search = search.lower()
    return all(part in text.lower() for part in search.split())


def print_models(search: str = "", *, as_json: bool = False, available_only: bool = False) -> int:
    registry = asyncio.run(_registry())
    rows = []
    for model in registry.models():
        if search and not _fuzzy(search, f"{model.provider}/{model.id} {model.name}"):
            continue
        has_key = model.api == "faux" or registry.has_auth(model.provider)
        if available_only and not has_key:
            continue
        rows.append((model, has_key))
    if as_json:
        print(json.dumps([{**m.to_json(), "available": ok} for m, ok in rows], indent=2))
        return 0
    if not rows:
        print("No models match." if search else "No models.")
        return 0
    width = max(len(m.ref) for m, _ in rows)
    print(f"{'MODEL':<{width}}  {'CONTEXT':>8}  {'MAX OUT':>8}  THINK  IMAGES  KEY")
    for model, has_key in rows:
        print(
            f"{model.ref:<{width}}  {model.context_window:>8}  {model.max_tokens:>8}  "
            f"{'yes' if model.reasoning else 'no':<5}  {'yes' if 'image' in model.input else 'no':<6}  "
            f"{'yes' if has_key else '-'}"
        )
    return 0


def print_sessions(*, all_dirs: bool = False, as_json: bool = False, session_dir: str | None = None) -> int:
    from ..session import SessionManager

    infos = SessionManager.list_all(session_dir) if all_dirs else SessionManager.list(os.getcwd(), session_dir)
    if as_json:
        print(json.dumps([_info_json(i) for i in infos], indent=2, default=str))
        return 0
    if not infos:
        print("No sessions." + ("" if all_dirs else " (--all lists every folder's sessions)"))
        return 0
    for info in infos:
        data = _info_json(info)
        title = data.get("name") or (data.get("first_message") or "").splitlines()[0:1]
        title = title if isinstance(title, str) else (title[0] if title else "")
        print(f"{str(data.get('id', ''))[:8]}  {data.get('modified', '')}  {data.get('message_count', 0):>4} msgs  {title[:60]}")
        if all_dirs:
            print(f"          {data.get('cwd', '')}")
    return 0


def _info_json(info: Any) -> dict[str, Any]:
    if hasattr(info, "__dataclass_fields__"):
        from dataclasses import asdict

        return {k: (str(v) if hasattr(v, "isoformat") else v) for k, v in asdict(info).items()}
    return dict(vars(info))
