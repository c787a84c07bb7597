"""Finding sessions on disk: ``-c`` (most recent), ``/resume`` (lists) and ids."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .errors import AmbiguousSessionError, SessionNotFoundError
from .paths import (
    SESSION_SUFFIX,
    custom_session_dir,
    filters_by_cwd,
    iso_to_ms,
    resolve_cwd,
    resolve_session_dir,
    sessions_root,
)
from .storage import read_first_line


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session file summarised for pickers and ``pi sessions``."""

    path: str
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: datetime
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str


def _header_of(record: Any) -> dict[str, Any] | None:
    if isinstance(record, dict) and record.get("type") == "session" and isinstance(record.get("id"), str):
        return record
    return None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        )
    return ""


def _datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


def session_info(path: str | os.PathLike[str]) -> SessionInfo | None:
    """Summarise one session file (``None`` when it is not a readable session)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        mtime = os.stat(path).st_mtime
    except OSError:
        return None
    header: dict[str, Any] | None = None
    name: str | None = None
    count = 0
    first = ""
    texts: list[str] = []
    last_activity = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if header is None:
            header = _header_of(record)
            if header is None:
                return None
            continue
        if not isinstance(record, dict):
            continue
        kind = record.get("type")
        if kind == "session_info":
            raw_name = record.get("name")
            name = (raw_name.strip() or None) if isinstance(raw_name, str) else None
            continue
        if kind != "message":
            continue
        count += 1
        message = record.get("message")
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            continue
        stamp = message.get("timestamp")
        activity = stamp if isinstance(stamp, int | float) else iso_to_ms(record.get("timestamp"))
        last_activity = max(last_activity, int(activity))
        text = _text(message.get("content"))
        if text:
            texts.append(text)
            if not first and message.get("role") == "user":
                first = text
    if header is None:
        return None
    created_ms = iso_to_ms(header.get("timestamp"))
    modified_ms = last_activity or created_ms or int(mtime * 1000)
    cwd = header.get("cwd")
    parent = header.get("parentSession")
    return SessionInfo(
        path=path,
        id=header["id"],
        cwd=cwd if isinstance(cwd, str) else "",
        name=name,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=_datetime(created_ms or int(mtime * 1000)),
        modified=_datetime(modified_ms),
        message_count=count,
        first_message=first or "(no messages)",
        all_messages_text=" ".join(texts),
    )


def _session_files(directory: Path) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [str(directory / name) for name in names if name.endswith(SESSION_SUFFIX)]


def _cwd_matches(header_cwd: object, cwd: str) -> bool:
    return isinstance(header_cwd, str) and bool(header_cwd) and resolve_cwd(header_cwd) == cwd


def _newest_first(infos: list[SessionInfo]) -> list[SessionInfo]:
    return sorted(infos, key=lambda info: info.modified, reverse=True)


def list_sessions(cwd: str | os.PathLike[str], session_dir: str | os.PathLike[str] | None = None) -> list[SessionInfo]:
    """The sessions of one project, newest first."""
    directory = resolve_session_dir(cwd, session_dir)
    resolved = resolve_cwd(cwd)
    check_cwd = filters_by_cwd(cwd, directory)
    infos = [info for info in map(session_info, _session_files(directory)) if info is not None]
    if check_cwd:
        infos = [info for info in infos if _cwd_matches(info.cwd, resolved)]
    return _newest_first(infos)


def _all_session_files(session_dir: str | os.PathLike[str] | None) -> list[str]:
    """The session files of every project (or of one custom directory)."""
    custom = custom_session_dir(session_dir)
    if custom is not None:
        return _session_files(custom)
    root = sessions_root()
    try:
        subdirs = sorted(entry.path for entry in os.scandir(root) if entry.is_dir())
    except OSError:
        subdirs = []
    return [file for subdir in subdirs for file in _session_files(Path(subdir))]


def list_all_sessions(session_dir: str | os.PathLike[str] | None = None) -> list[SessionInfo]:
    """Every session of every project (or of one custom directory), newest first."""
    files = _all_session_files(session_dir)
    return _newest_first([info for info in map(session_info, files) if info is not None])


def find_most_recent(directory: Path, cwd: str | None = None) -> str | None:
    """The most recently modified session file of ``directory`` (whose header's cwd is
    ``cwd``, when given)."""
    candidates: list[tuple[float, str]] = []
    for file in _session_files(directory):
        try:
            candidates.append((os.stat(file).st_mtime, file))
        except OSError:
            continue
    for _, file in sorted(candidates, reverse=True):
        header = _header_of(read_first_line(file))
        if header is not None and (cwd is None or _cwd_matches(header.get("cwd"), cwd)):
            return file
    return None


def find_session(
    id_or_prefix: str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    session_dir: str | os.PathLike[str] | None = None,
) -> str:
    """The file of the session whose id is ``id_or_prefix`` or starts with it.

    The project's own sessions are searched first (when ``cwd`` is given), then every
    session. Raises :class:`SessionNotFoundError` or :class:`AmbiguousSessionError`.
    """
    prefix = id_or_prefix.strip()
    if not prefix:
        raise SessionNotFoundError("An empty session id matches nothing")
    scopes: list[list[str]] = []
    if cwd is not None:
        scopes.append(_session_files(resolve_session_dir(cwd, session_dir)))
    scopes.append(_all_session_files(session_dir))
    for files in scopes:
        exact: list[str] = []
        partial: dict[str, list[str]] = {}
        for file in files:
            header = _header_of(read_first_line(file))
            if header is None:
                continue
            session_id = header["id"]
            if session_id == prefix:
                exact.append(file)
            elif session_id.startswith(prefix):
                partial.setdefault(session_id, []).append(file)
        if exact:
            return exact[0]
        if len(partial) == 1:
            return next(iter(partial.values()))[0]
        if len(partial) > 1:
            raise AmbiguousSessionError(prefix, sorted(file for files in partial.values() for file in files))
    raise SessionNotFoundError(f"No session found matching '{prefix}'")


def looks_like_path(arg: str) -> bool:
    """Whether a ``--session`` / ``--fork`` argument names a file rather than a session id
    (pi 1.6.0's rule: it holds a path separator or ends in ``.jsonl``)."""
    return "/" in arg or "\\" in arg or arg.endswith(SESSION_SUFFIX)


def resolve_session_arg(
    arg: str,
    *,
    cwd: str | os.PathLike[str] | None = None,
    session_dir: str | os.PathLike[str] | None = None,
) -> str:
    """The session file a ``--session`` argument names: a path (absolute; it need not
    exist yet: a new session is saved there, as in pi 1.6.0), or else a session id or
    unique id prefix (see :func:`find_session`)."""
    if looks_like_path(arg) or os.path.isfile(arg):
        return os.path.abspath(os.path.expanduser(arg))
    return find_session(arg, cwd=cwd, session_dir=session_dir)
