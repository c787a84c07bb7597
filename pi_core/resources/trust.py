"""Project trust: whether a working directory may load its own settings and resources.

Saved decisions live in ``<agent dir>/trust.json``, the same file the TypeScript pi
uses: a JSON object mapping canonical directory paths to ``true`` (trusted) or
``false`` (not trusted); ``null`` entries are tolerated and mean "no decision". The
nearest saved ancestor decides for a directory. The file is written with sorted
keys, two-space indentation and a final newline, under a ``trust.json.lock``
directory lock (the lock the TypeScript pi takes as well). A file over 4 MiB is an
error naming it, never read.

:func:`resolve_project_trust` decides, in this order:

1. the command line (``--approve`` / ``--no-approve``);
2. a project without trust-requiring resources is trusted (there is nothing to gate);
3. the plugins' ``project_trust`` hook (the first ``yes``/``no`` wins; ``remember``
   saves it);
4. the nearest saved decision in ``trust.json``;
5. the user setting ``defaultProjectTrust``: ``always`` / ``never`` / ``ask``;
6. ``ask``: the user is asked when there is a UI, otherwise the project is untrusted.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pi_hookspecs
from pi_hookspecs.record import dataclass

from .._fs import DirectoryLock, DirectoryLockTimeout, atomic_write
from .._paths import CONFIG_DIR_NAME
from .._paths import agent_dir as default_agent_dir
from ._files import MAX_RESOURCE_FILE_BYTES, ancestors_to_git_root, canonical_path, read_text
from ._trust_file import TRUST_FILE_NAME, nearest_decision
from .diagnostics import ResourceDiagnostic
from .settings import PROJECT_TRUST_DEFAULTS, SettingsError, read_settings_file

if TYPE_CHECKING:  # occasional (pi_hookspecs.events.OCCASIONAL): made only when a project needs trust
    from pi_hookspecs import ProjectTrustResult

PROTECTED_PROJECT_ENTRIES: tuple[str, ...] = (
    "settings.json",
    "mcp.json",
    "extensions",
    "skills",
    "prompts",
    "themes",
    "SYSTEM.md",
    "APPEND_SYSTEM.md",
)
"""Entries of ``.pi`` whose presence requires a trust decision (a bare ``.pi`` does not)."""

_LOCK_STALE_SECONDS = 10.0
_LOCK_TIMEOUT_SECONDS = 1.0


class TrustStoreError(ValueError):
    """``trust.json`` cannot be read or written. The message names the file."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


@dataclass(frozen=True)
class TrustEntry:
    """A saved decision: ``path`` is the directory it was saved for."""

    path: str
    trusted: bool


@contextlib.contextmanager
def _locked(file: Path, *, required: bool = True) -> Iterator[None]:
    """Hold ``<file>.lock`` (pi 1.6.0's lock directory, see
    :class:`~pi_core._fs.DirectoryLock`) while the block runs. A lock older than ten
    seconds is considered abandoned and taken over. When the lock cannot be created at
    all (a read-only agent directory) a reader (``required=False``) goes ahead without it."""
    lock = DirectoryLock(file, stale=_LOCK_STALE_SECONDS, timeout=_LOCK_TIMEOUT_SECONDS, refresh=False)
    held = False
    try:
        lock.acquire()
        held = True
    except DirectoryLockTimeout:
        raise TrustStoreError(file, f"locked by another process ({lock.lock_path} exists)") from None
    except OSError as exc:
        if required:
            raise TrustStoreError(file, f"cannot lock: {exc.strerror or exc}") from exc
    try:
        yield
    finally:
        if held:
            lock.release()


class TrustStore:
    """The saved trust decisions in ``<agent dir>/trust.json``."""

    def __init__(self, agent_dir: Path | None = None) -> None:
        self.path = (agent_dir if agent_dir is not None else default_agent_dir()) / TRUST_FILE_NAME

    def read(self) -> dict[str, bool | None]:
        """Every entry of the file (``{}`` when it does not exist)."""
        if not self.path.exists():
            return {}
        with _locked(self.path, required=False):
            return self._read_unlocked()

    def _read_unlocked(self) -> dict[str, bool | None]:
        try:
            text = read_text(self.path, limit=MAX_RESOURCE_FILE_BYTES)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise TrustStoreError(self.path, f"cannot read: {exc.strerror or exc}") from exc
        if not text.strip():
            return {}
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TrustStoreError(
                self.path, f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from exc
        if not isinstance(data, dict):
            raise TrustStoreError(self.path, "expected a JSON object mapping directories to true/false")
        for key, value in data.items():
            if value is not True and value is not False and value is not None:
                raise TrustStoreError(self.path, f"the value for {json.dumps(key)} must be true, false or null")
        return data

    def get_entry(self, cwd: str | os.PathLike[str]) -> TrustEntry | None:
        """The decision saved for ``cwd`` or its nearest ancestor."""
        found = nearest_decision(self.read(), cwd)
        return TrustEntry(*found) if found is not None else None

    def get(self, cwd: str | os.PathLike[str]) -> bool | None:
        entry = self.get_entry(cwd)
        return entry.trusted if entry is not None else None

    def set(self, cwd: str | os.PathLike[str], trusted: bool | None) -> None:
        """Save a decision for ``cwd``; ``None`` removes the one saved for exactly ``cwd``."""
        self.set_many([(cwd, trusted)])

    def set_many(self, updates: Iterable[tuple[str | os.PathLike[str], bool | None]]) -> None:
        with _locked(self.path):
            data = self._read_unlocked()
            for path, trusted in updates:
                key = canonical_path(path)
                if trusted is None:
                    data.pop(key, None)
                else:
                    data[key] = trusted
            self._write_unlocked(data)

    def _write_unlocked(self, data: Mapping[str, bool | None]) -> None:
        ordered = {key: data[key] for key in sorted(data) if data[key] in (True, False, None)}
        try:
            atomic_write(self.path, json.dumps(ordered, indent=2, ensure_ascii=False) + "\n", mode=0o600)
        except OSError as exc:
            raise TrustStoreError(self.path, f"cannot write: {exc.strerror or exc}") from exc


# --------------------------------------------------------------------------- what needs trust


def trust_requiring_project_resources(cwd: str | os.PathLike[str], *, home: Path | None = None) -> list[Path]:
    """The project resources of ``cwd`` that only load once the project is trusted:
    the protected entries of ``cwd/.pi`` and the ``.agents/skills`` directories of
    ``cwd`` and its ancestors up to the git root. ``~/.agents/skills`` is the user's
    own and never counts."""
    directory = Path(canonical_path(cwd))
    found = [directory / CONFIG_DIR_NAME / name for name in PROTECTED_PROJECT_ENTRIES]
    found = [path for path in found if os.path.lexists(path)]
    user_skills = canonical_path((home if home is not None else Path.home()) / ".agents" / "skills")
    for ancestor in ancestors_to_git_root(directory):
        candidate = ancestor / ".agents" / "skills"
        if candidate.exists() and canonical_path(candidate) != user_skills:
            found.append(candidate)
    return found


def has_trust_requiring_project_resources(cwd: str | os.PathLike[str], *, home: Path | None = None) -> bool:
    """Whether ``cwd`` has project resources that need a trust decision."""
    return bool(trust_requiring_project_resources(cwd, home=home))


def untrusted_note(cwd: str | os.PathLike[str]) -> str | None:
    """One line saying what of the project was skipped because it is not trusted, and
    how to trust it; ``None`` when the project has nothing that needs trust."""
    found = trust_requiring_project_resources(cwd)
    if not found:
        return None
    base = Path(canonical_path(cwd))
    shown = []
    for path in found:
        try:
            shown.append(str(path.relative_to(base)))
        except ValueError:
            shown.append(str(path))
    return (
        f"the project is not trusted, so pi skipped {', '.join(shown)}; to use them, pass --approve "
        "(this run), or start pi here in a terminal and trust the project"
    )


# --------------------------------------------------------------------------- resolution

TrustSource = Literal["cli", "no-project-resources", "plugin", "saved", "default", "user", "no-ui"]


@dataclass(frozen=True)
class TrustDecision:
    """The outcome: ``trusted`` and what decided it (``path``: the saved entry used)."""

    trusted: bool
    source: TrustSource
    path: str | None = None


@dataclass(frozen=True)
class TrustAnswer:
    """The user's answer to the trust question. ``remember`` saves it for ``path``
    (default: the working directory; a parent directory trusts everything below)."""

    trusted: bool
    remember: bool = False
    path: str | None = None


AskPlugins = Callable[[], Awaitable["ProjectTrustResult | Mapping[str, Any] | None"]]
AskUser = Callable[[str], Awaitable[TrustAnswer | None]]
OnDiagnostic = Callable[[ResourceDiagnostic], None]


def _report(
    on_diagnostic: OnDiagnostic | None, level: Literal["warning", "error"], message: str, path: Path | str | None
) -> None:
    if on_diagnostic is not None:
        on_diagnostic(ResourceDiagnostic(level, message, str(path) if path is not None else None, kind="trust"))


def _configured_default(agent_dir: Path, on_diagnostic: OnDiagnostic | None) -> str:
    path = agent_dir / "settings.json"
    try:
        value = read_settings_file(path).get("defaultProjectTrust", "ask")
    except SettingsError as exc:
        _report(on_diagnostic, "error", f'{exc}; defaultProjectTrust taken as "ask"', None)
        return "ask"
    if value not in PROJECT_TRUST_DEFAULTS:
        _report(
            on_diagnostic,
            "warning",
            f'defaultProjectTrust must be "ask", "always" or "never", found {json.dumps(value)}; taken as "ask"',
            path,
        )
        return "ask"
    return str(value)


async def resolve_project_trust(
    cwd: str | os.PathLike[str],
    *,
    override: bool | None = None,
    ask_plugins: AskPlugins | None = None,
    has_ui: bool = False,
    ask_user: AskUser | None = None,
    default_project_trust: str | None = None,
    agent_dir: Path | None = None,
    store: TrustStore | None = None,
    home: Path | None = None,
    on_diagnostic: OnDiagnostic | None = None,
) -> TrustDecision:
    """Decide whether the project in ``cwd`` is trusted (see the module docstring).

    ``override`` is ``True`` for ``--approve``, ``False`` for ``--no-approve``.
    ``ask_plugins`` fires the ``project_trust`` hook (for instance
    ``PluginHost.decide_project_trust``) and returns its result or ``None``.
    ``ask_user(cwd)`` shows the question (only called when ``has_ui``); ``None`` means
    the user dismissed it (untrusted, nothing saved). ``default_project_trust``
    overrides the user setting. Problems (a broken ``trust.json``, a failing hook)
    are reported through ``on_diagnostic`` and never trust a project by accident.
    """
    if override is not None:
        return TrustDecision(bool(override), "cli")
    if not has_trust_requiring_project_resources(cwd, home=home):
        return TrustDecision(True, "no-project-resources")

    adir = agent_dir if agent_dir is not None else default_agent_dir()
    trust_store = store if store is not None else TrustStore(adir)

    def save(path: str | os.PathLike[str], trusted: bool) -> None:
        try:
            trust_store.set(path, trusted)
        except TrustStoreError as exc:
            _report(on_diagnostic, "error", f"cannot save the trust decision: {exc}", None)

    if ask_plugins is not None:
        try:
            raw = await ask_plugins()
            result = pi_hookspecs.ProjectTrustResult.model_validate(raw) if isinstance(raw, Mapping) else raw
        except Exception as exc:  # a failing hook counts as undecided
            _report(on_diagnostic, "error", f"project_trust failed: {type(exc).__name__}: {exc}", None)
            result = None
        if result is not None and result.trusted in ("yes", "no"):
            trusted = result.trusted == "yes"
            if result.remember:
                save(cwd, trusted)
            return TrustDecision(trusted, "plugin")

    try:
        entry = trust_store.get_entry(cwd)
    except TrustStoreError as exc:
        _report(on_diagnostic, "error", f"{exc}; saved trust decisions ignored", None)
        entry = None
    if entry is not None:
        return TrustDecision(entry.trusted, "saved", entry.path)

    default = default_project_trust if default_project_trust is not None else _configured_default(adir, on_diagnostic)
    if default == "always":
        return TrustDecision(True, "default")
    if default == "never":
        return TrustDecision(False, "default")
    if not has_ui or ask_user is None:
        return TrustDecision(False, "no-ui")
    answer = await ask_user(canonical_path(cwd))
    if answer is None:
        return TrustDecision(False, "user")
    if answer.remember:
        save(answer.path or cwd, answer.trusted)
    return TrustDecision(answer.trusted, "user", canonical_path(answer.path or cwd) if answer.remember else None)


__all__ = [
    "PROTECTED_PROJECT_ENTRIES",
    "TRUST_FILE_NAME",
    "AskPlugins",
    "AskUser",
    "TrustAnswer",
    "TrustDecision",
    "TrustEntry",
    "TrustSource",
    "TrustStore",
    "TrustStoreError",
    "has_trust_requiring_project_resources",
    "resolve_project_trust",
    "trust_requiring_project_resources",
]
