"""``pi models`` / ``--list-models`` and ``pi sessions``."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from dataclasses import asdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..ai import ModelRegistry
from ..ai.selection import collation_key
from ..resources.settings import session_dir_setting
from ..session import SessionInfo, SessionManager
from ..session.paths import SESSION_DIR_ENV

if TYPE_CHECKING:
    from pi_hookspecs import Model


async def _registry(extensions: list[str] | None = None, no_extensions: bool = False) -> ModelRegistry:
    """The model registry with the providers (and virtual models) plugins register,
    ``-e`` plugins included."""
    # the runtime (plugins, tools, agent) only for ``pi models``, not ``pi sessions``
    from ..runtime import ServiceOptions, create_services

    options = ServiceOptions(mode="print", cli_extensions=list(extensions or ()), no_extensions=no_extensions)
    services = await create_services(os.getcwd(), options)
    for line in services.diagnostics:
        print(f"pi: {line}", file=sys.stderr)
    return services.models


def _fuzzy_token(token: str, text: str) -> bool:
    """pi-tui's fuzzy match: the token's characters appear in order (a letters+digits
    token also matches with the two parts swapped, ``gpt5`` ~ ``5gpt``)."""

    def subsequence(query: str) -> bool:
        position = 0
        for char in query:
            position = text.find(char, position) + 1
            if position == 0:
                return False
        return True

    token = token.lower()
    if subsequence(token):
        return True
    swapped = re.fullmatch(r"([a-z]+)([0-9]+)|([0-9]+)([a-z]+)", token)
    if swapped is None:
        return False
    letters_first = swapped.group(1) is not None
    return subsequence(swapped.group(2) + swapped.group(1) if letters_first else swapped.group(4) + swapped.group(3))


def matches_search(search: str, provider: str, model_id: str) -> bool:
    """pi 1.6.0's ``--list-models`` filter: every whitespace- or ``/``-separated token of
    ``search`` fuzzy-matches ``"<provider> <id>"``."""
    text = f"{provider} {model_id}".lower()
    return all(_fuzzy_token(token, text) for token in re.split(r"[\s/]+", search.strip()) if token)


def format_token_count(count: int) -> str:
    """``200000`` -> ``200K``, ``1048576`` -> ``1.0M`` (as pi 1.6.0 prints them)."""
    for size, unit in ((1_000_000, "M"), (1_000, "K")):
        if count >= size:
            value = count / size
            return f"{int(value)}{unit}" if value == int(value) else f"{value:.1f}{unit}"
    return str(count)


def print_models(
    search: str = "",
    *,
    as_json: bool = False,
    all_models: bool = False,
    extensions: list[str] | None = None,
    no_extensions: bool = False,
) -> int:
    """The models you have credentials for (every model with ``all_models``), filtered
    by ``search``, sorted by provider and id: pi 1.6.0's ``--list-models`` table.

    The offline demo (``faux/offline-demo``, answered only when named) is not one of
    the models you have credentials for; ``all_models`` lists it, as not available."""
    from ..runtime.errors import no_model_message

    registry = asyncio.run(_registry(extensions, no_extensions))
    refs = registry.model_refs()
    if search.strip():
        refs = [r for r in refs if matches_search(search, r[0], r[1])]
    with_key: dict[str, bool] = {}

    def has_key(provider: str) -> bool:
        if provider not in with_key:
            with_key[provider] = registry.has_auth(provider)
        return with_key[provider]

    def offered(model: Model) -> bool:
        return has_key(model.provider) and not registry.named_only(model)

    if not all_models:
        usable = {(m.provider, m.id) for m in registry.available()}
        refs = [r for r in refs if (r[0], r[1]) in usable]
    models = [m for m in (registry.get(r[0], r[1]) for r in refs) if m is not None]
    models.sort(key=lambda m: (collation_key(m.provider), collation_key(m.id)))
    if as_json:
        print(json.dumps([{**m.to_json(), "available": offered(m)} for m in models], indent=2))
        return 0
    if not models:
        if search.strip() and (all_models or registry.available()):
            print(f'No models matching "{search}"')
        else:
            print(no_model_message(registry.models_path))
        return 0
    header = ["provider", "model", "context", "max-out", "thinking", "images"] + (["key"] if all_models else [])
    rows = [
        [
            m.provider,
            m.id,
            format_token_count(m.context_window),
            format_token_count(m.max_tokens),
            "yes" if m.reasoning else "no",
            "yes" if "image" in m.input else "no",
            *(["yes" if offered(m) else "-"] if all_models else []),
        ]
        for m in models
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    out = sys.stdout
    for row in [header, *rows]:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + "\n")
    return 0


def print_sessions(*, all_dirs: bool = False, as_json: bool = False, session_dir: str | None = None) -> int:
    if session_dir is None and not os.environ.get(SESSION_DIR_ENV, "").strip():
        setting = session_dir_setting(os.getcwd())  # the sessionDir setting, as a run finds it
        session_dir = str(setting) if setting is not None else None
    infos = SessionManager.list_all(session_dir) if all_dirs else SessionManager.list(os.getcwd(), session_dir)
    if as_json:
        print(json.dumps([_info_json(i) for i in infos], indent=2, default=str))
        return 0
    if not infos:
        print("No sessions." + ("" if all_dirs else " (--all lists every folder's sessions)"))
        return 0
    prefixes = unique_prefixes([str(info.id) for info in infos])
    width = max(len(p) for p in prefixes.values())
    for info in infos:
        data = _info_json(info)
        title = data.get("name") or (data.get("first_message") or "").splitlines()[0:1]
        title = title if isinstance(title, str) else (title[0] if title else "")
        short = prefixes[str(info.id)].ljust(width)
        print(f"{short}  {human_time(info.modified):<16}  {data.get('message_count', 0):>4} msgs  {title[:60]}")
        if all_dirs:
            print(f"{'':{width}}  {data.get('cwd', '')}")
    return 0


def unique_prefixes(ids: list[str], minimum: int = 8) -> dict[str, str]:
    """The shortest prefix of each id (at least ``minimum`` characters) that no other id
    of the list shares, so ``pi --session <prefix>`` opens it. Session ids are UUIDv7:
    their first characters are the start time, the same for sessions of one minute."""
    ordered = sorted(set(ids))

    def common(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    result: dict[str, str] = {}
    for index, session_id in enumerate(ordered):
        shared = 0
        if index > 0:
            shared = max(shared, common(session_id, ordered[index - 1]))
        if index + 1 < len(ordered):
            shared = max(shared, common(session_id, ordered[index + 1]))
        length = max(minimum, shared + 1)
        if length < len(session_id) and session_id[length - 1] == "-":
            length += 1  # never end a prefix on a dash
        result[session_id] = session_id[:length]
    return result


def human_time(moment: Any, now: datetime | None = None) -> str:
    """A date a person reads, in local time: ``today 14:05``, ``yesterday 09:12``,
    ``Mon 28 Nov 16:40`` within the year, ``2025-11-28 16:40`` before it."""
    if not isinstance(moment, datetime):
        return str(moment)
    local = moment.astimezone()
    now = (now or datetime.now(UTC)).astimezone()
    days = (now.date() - local.date()).days
    if days == 0:
        return f"today {local:%H:%M}"
    if days == 1:
        return f"yesterday {local:%H:%M}"
    if local.year == now.year:
        return f"{local:%a %d %b %H:%M}"
    return f"{local:%Y-%m-%d %H:%M}"


def _info_json(info: SessionInfo) -> dict[str, Any]:
    return {k: (str(v) if hasattr(v, "isoformat") else v) for k, v in asdict(info).items()}
