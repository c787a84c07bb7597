"""The sandbox policy: the ``sandbox`` key of the USER settings, never a project's.

pluggable-pi-sandbox reads ``<agent dir>/settings.json`` itself (the agent directory is
``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``), so a project's ``.pi/settings.json``
can never weaken it. A managed file (:data:`MANAGED_SETTINGS`, written by an
administrator) takes precedence over the user's key when it has one::

    {"sandbox": {"preset": "workspace-write", "allowedHosts": ["pypi.org", "*.pythonhosted.org"]}}

Presets give the defaults; the other keys override them:

=================  ==========================  ===============  ==================
preset             writable                    network          environment
=================  ==========================  ===============  ==================
``strict``         the temp folder only        off              a minimal allowlist
``workspace-write`` project, temp, ``allowWrite``  off, or proxy to ``allowedHosts``  secrets removed
``off``            no sandbox at all
=================  ==========================  ===============  ==================
"""

from __future__ import annotations

import glob
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

SETTINGS_KEY = "sandbox"
AGENT_DIR_ENV = "PI_CODING_AGENT_DIR"
MANAGED_SETTINGS = Path("/Library/Application Support/pi/settings.json") if sys.platform == "darwin" else Path(
    "/etc/pi/settings.json"
)
"""An administrator's settings file: its ``sandbox`` key, when present, replaces the user's."""

Preset = Literal["strict", "workspace-write", "off"]
Backend = Literal["auto", "bwrap", "landlock", "sandbox-exec"]
Network = Literal["off", "proxy", "on"]

DEFAULT_DENY_READ: tuple[str, ...] = (
    "~/.ssh",
    "~/.gnupg",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.git-credentials",
    "~/.config/gh",
    "~/.npmrc",
    "~/.pypirc",
    "~/.password-store",
    "~/.vault-token",
    "{agent}/auth.json",
    "{agent}/mcp-auth.json",
    # sockets that would let a command act outside the sandbox (systemd, D-Bus,
    # ssh-agent, gpg-agent, tmux, Docker)
    "{runtime}",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "{tmp}/ssh-*",
    "{tmp}/tmux-*",
)
"""Read (and write) access is refused below these paths. ``~``, ``{agent}`` (the agent
directory), ``{project}``, ``{tmp}`` and ``{runtime}`` (``$XDG_RUNTIME_DIR``) are
expanded; ``*`` and ``?`` match within one path segment."""

PROTECTED: tuple[str, ...] = ("{agent}", "{project}/.pi", "{project}/.git/hooks", "{project}/.git/config")
"""Read-only even inside a writable folder: pi's own settings and plugins, the project's
pi resources and what git would run outside the sandbox."""

DEFAULT_ENV_DENY: tuple[str, ...] = (
    "*_API_KEY",
    "*_APIKEY",
    "*_KEY",
    "*_TOKEN",
    "*_SECRET",
    "*_SECRET_*",
    "*SECRET_KEY*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_CREDENTIALS",
    "*_AUTH",
    "AWS_*",
    "AZURE_*",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "SSH_AUTH_SOCK",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
)
"""Environment variables removed (case-insensitive patterns) unless ``env.allow`` names them."""

MINIMAL_ENV: tuple[str, ...] = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "PWD",
    "PI_*",
)
"""The only variables the ``strict`` preset passes (plus ``env.allow``)."""

PRESETS: tuple[str, ...] = ("strict", "workspace-write", "off")


class SandboxError(Exception):
    """The policy cannot be used (bad settings, no sandbox on this machine): the plugin
    then refuses every command, naming the cause."""


@dataclass(frozen=True)
class SandboxSettings:
    """What ``{"sandbox": {...}}`` may hold (camelCase keys, like pi's own settings).
    Validated by hand (:meth:`parse`): pydantic's model building would cost every pi
    start-up ~10 ms."""

    preset: Preset = "workspace-write"
    backend: Backend = "auto"
    """``auto``: bubblewrap, else Landlock (Linux); sandbox-exec (macOS)."""
    deny_read: tuple[str, ...] = ()
    """Paths added to the built-in deny list."""
    allow_write: tuple[str, ...] = ()
    """Folders writable besides the project and the temp folder."""
    network: Network | None = None
    """``off``; ``proxy`` (only ``allowedHosts``, through pi's filtering proxy); ``on``
    (not contained). Default: ``proxy`` when ``allowedHosts`` is set, else ``off``
    (always ``off`` for ``strict``)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names (``example.com``, ``*.example.com``, ``host:port``) the proxy lets through."""
    env_allow: tuple[str, ...] = ()
    """Variables passed even though a deny pattern (or the strict allowlist) drops them."""
    env_deny: tuple[str, ...] = ()
    """More patterns to remove."""

    @classmethod
    def parse(cls, raw: object) -> SandboxSettings:
        """Validate the value of the ``sandbox`` key; ``ValueError`` names the bad key."""
        if not isinstance(raw, dict):
            raise ValueError(f"{SETTINGS_KEY} must be an object")
        known = {"preset", "backend", "denyRead", "allowWrite", "network", "allowedHosts", "env"}
        for key in raw:
            if key not in known:
                raise ValueError(f"{SETTINGS_KEY}.{key}: unknown key (known: {', '.join(sorted(known))})")

        def choice(key: str, options: tuple[str, ...], default: str | None) -> Any:
            value = raw.get(key, default)
            if value is None and default is None:
                return None
            if value not in options:
                raise ValueError(f"{SETTINGS_KEY}.{key}: must be one of {', '.join(repr(o) for o in options)}, not {value!r}")
            return value

        def strings(container: dict[str, object], key: str, where: str) -> tuple[str, ...]:
            value = container.get(key, [])
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise ValueError(f"{where}.{key}: must be a list of strings")
            return tuple(value)

        env = raw.get("env", {})
        if not isinstance(env, dict):
            raise ValueError(f"{SETTINGS_KEY}.env: must be an object with allow and deny lists")
        for key in env:
            if key not in ("allow", "deny"):
                raise ValueError(f"{SETTINGS_KEY}.env.{key}: unknown key (known: allow, deny)")
        return cls(
            preset=choice("preset", PRESETS, "workspace-write"),
            backend=choice("backend", ("auto", "bwrap", "landlock", "sandbox-exec"), "auto"),
            deny_read=strings(raw, "denyRead", SETTINGS_KEY),
            allow_write=strings(raw, "allowWrite", SETTINGS_KEY),
            network=choice("network", ("off", "proxy", "on"), None),
            allowed_hosts=strings(raw, "allowedHosts", SETTINGS_KEY),
            env_allow=strings(env, "allow", f"{SETTINGS_KEY}.env"),
            env_deny=strings(env, "deny", f"{SETTINGS_KEY}.env"),
        )


@dataclass(frozen=True)
class Policy:
    """The settings resolved: what every sandboxed command gets."""

    preset: Preset = "workspace-write"
    backend: Backend = "auto"
    source: str = "defaults"
    """Where the policy came from: a settings file, or ``defaults``."""
    deny_read: tuple[str, ...] = DEFAULT_DENY_READ
    write_project: bool = True
    allow_write: tuple[str, ...] = ()
    protected: tuple[str, ...] = PROTECTED
    network: Network = "off"
    allowed_hosts: tuple[str, ...] = ()
    env_minimal: bool = False
    env_allow: tuple[str, ...] = ()
    env_deny: tuple[str, ...] = DEFAULT_ENV_DENY
    agent_dir: str = ""

    @property
    def enabled(self) -> bool:
        return self.preset != "off"


def agent_dir() -> Path:
    override = os.environ.get(AGENT_DIR_ENV)
    return Path(override).expanduser() if override else Path.home() / ".pi" / "agent"


def _read_key(path: Path) -> dict[str, object] | None:
    """The ``sandbox`` key of a settings file (``None`` when the file or key is absent)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SandboxError(f"cannot read the settings {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as exc:
        raise SandboxError(f"the settings {path} are not valid JSON: line {exc.lineno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise SandboxError(f"the settings {path} are not a JSON object")
    value = data.get(SETTINGS_KEY)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SandboxError(f"invalid settings in {path}: {SETTINGS_KEY} must be an object")
    return value


def load_policy(agent: Path | None = None, managed: Path | None = None) -> Policy:
    """The policy of the managed file, else of the user's ``settings.json``, else the
    defaults. Raise :class:`SandboxError` naming the file for anything invalid."""
    agent = agent or agent_dir()
    managed = MANAGED_SETTINGS if managed is None else managed
    for path in (managed, agent / "settings.json"):
        raw = _read_key(path)
        if raw is None:
            continue
        try:
            settings = SandboxSettings.parse(raw)
        except ValueError as exc:
            raise SandboxError(f"invalid settings in {path}: {exc}") from None
        return resolve(settings, source=str(path), agent=agent)
    return resolve(SandboxSettings(), source="defaults", agent=agent)


def resolve(settings: SandboxSettings, *, source: str = "defaults", agent: Path | None = None) -> Policy:
    strict = settings.preset == "strict"
    network: Network = settings.network or ("proxy" if settings.allowed_hosts and not strict else "off")
    return Policy(
        preset=settings.preset,
        backend=settings.backend,
        source=source,
        deny_read=(*DEFAULT_DENY_READ, *settings.deny_read),
        write_project=not strict,
        allow_write=settings.allow_write,
        network=network,
        allowed_hosts=settings.allowed_hosts,
        env_minimal=strict,
        env_allow=settings.env_allow,
        env_deny=(*DEFAULT_ENV_DENY, *settings.env_deny),
        agent_dir=str(agent or agent_dir()),
    )


# --------------------------------------------------------------------------- per command


def temp_dir() -> str:
    return os.path.realpath(tempfile.gettempdir())


def runtime_dir() -> str | None:
    value = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return value


def expand(pattern: str, *, project: str, agent: str) -> list[str]:
    """The existing real paths a policy path names (globs expanded)."""
    runtime = runtime_dir()
    if "{runtime}" in pattern and not runtime:
        return []
    text = (
        pattern.replace("{agent}", agent)
        .replace("{project}", project)
        .replace("{tmp}", temp_dir())
        .replace("{runtime}", runtime or "")
    )
    text = os.path.expanduser(text)
    if not os.path.isabs(text):
        text = os.path.join(project, text)
    found = glob.glob(text) if any(c in text for c in "*?[") else [text]
    out: list[str] = []
    for path in found:
        if os.path.lexists(path):
            real = os.path.realpath(path)
            if os.path.exists(real) and real not in out:
                out.append(real)
    return out


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@dataclass
class Plan:
    """What one command may reach, as existing real paths."""

    cwd: str
    writable: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    """Read-only paths inside a writable folder."""
    deny: list[str] = field(default_factory=list)
    network: Network = "off"


def plan(policy: Policy, cwd: str) -> Plan:
    project = os.path.realpath(cwd)
    agent = os.path.realpath(policy.agent_dir) if policy.agent_dir else str(agent_dir())
    writable: list[str] = []
    roots = [temp_dir()]
    if policy.write_project:
        roots.append(project)
    for entry in policy.allow_write:
        roots.extend(expand(entry, project=project, agent=agent))
    for root in roots:
        if os.path.isdir(root) and root not in writable:
            writable.append(root)
    deny: list[str] = []
    for entry in policy.deny_read:
        for path in expand(entry, project=project, agent=agent):
            if path not in deny and not any(_within(path, d) for d in deny):
                deny.append(path)
    protected: list[str] = []
    for entry in policy.protected:
        for path in expand(entry, project=project, agent=agent):
            if any(_within(path, w) for w in writable) and path not in protected:
                protected.append(path)
    # shallow paths first, so that a deeper mount lands on top of a shallower one
    writable.sort(key=lambda p: p.count("/"))
    protected.sort(key=lambda p: p.count("/"))
    deny.sort(key=lambda p: p.count("/"))
    return Plan(cwd=project, writable=writable, protected=protected, deny=deny, network=policy.network)


def filter_env(env: dict[str, str], policy: Policy) -> dict[str, str]:
    """The environment a sandboxed command gets (secrets removed, see the module)."""

    def matches(name: str, patterns: Sequence[str]) -> bool:
        upper = name.upper()
        return any(fnmatchcase(upper, p.upper()) for p in patterns)

    out: dict[str, str] = {}
    user_deny = policy.env_deny[len(DEFAULT_ENV_DENY) :]
    for name, value in env.items():
        allowed = matches(name, policy.env_allow)
        if policy.env_minimal:
            keep = (matches(name, MINIMAL_ENV) or allowed) and not matches(name, user_deny)
        else:
            keep = allowed or not matches(name, policy.env_deny)
        if keep:
            out[name] = value
    return out
