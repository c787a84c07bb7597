"""The sandbox policy: the ``sandbox`` key of the USER settings, never a project's.

pluggable-pi-sandbox reads ``<agent dir>/settings.json`` itself (through
:mod:`pi_hookspecs.toolkit`), so a project's ``.pi/settings.json`` can never weaken it.
The managed file (``toolkit.MANAGED_SETTINGS``, written by an administrator) takes
precedence over the user's key when it has one::

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

import functools
import glob
import os
import re
import stat
from collections.abc import Sequence
from dataclasses import field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal

from pi_hookspecs import toolkit
from pi_hookspecs.record import dataclass
from pi_hookspecs.toolkit import SettingsFileError, read_settings, settings_section, user_settings_file

agent_dir = toolkit.agent_dir
MANAGED_SETTINGS = toolkit.MANAGED_SETTINGS
"""An administrator's settings file: its ``sandbox`` key, when present, replaces the user's."""

SETTINGS_KEY = "sandbox"

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
    # every session transcript pi saved (what the user and models said in other projects)
    "{agent}/sessions",
    "{sessions}",
    # sockets that would let a command act outside the sandbox (systemd, D-Bus,
    # ssh-agent, gpg-agent, tmux, Docker)
    "{runtime}",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "{tmp}/ssh-*",
    "{tmp}/tmux-*",
)
"""Read (and write) access is refused below these paths. ``~``, ``{agent}`` (the agent
directory), ``{project}``, ``{tmp}``, ``{runtime}`` (``$XDG_RUNTIME_DIR``) and
``{sessions}`` (the user settings' ``sessionDir``, when set) are expanded; ``*`` and ``?``
match within one path segment."""

PROTECTED: tuple[str, ...] = (
    "{agent}",
    "{project}/.pi",
    "{project}/.git/hooks",
    "{project}/.git/config",
    "{project}/.git/config.worktree",
    "{project}/.git/modules",
)
"""Read-only even inside a writable folder: pi's own settings and plugins, the project's
pi resources and what git would run outside the sandbox (hooks, configuration, the
repositories of submodules). The repository's own folder is also a mount point (see
:attr:`Plan.git`), so renaming it and copying it back cannot shed the protection."""

SOCKET_NAMES: dict[str, tuple[str, ...]] = {
    "docker": ("/run/docker.sock", "/var/run/docker.sock", "{runtime}/docker.sock"),
    "ssh-agent": ("$SSH_AUTH_SOCK",),
    "gpg-agent": ("{runtime}/gnupg/S.gpg-agent", "~/.gnupg/S.gpg-agent"),
}
"""Names ``allowSockets`` takes for well-known unix sockets (besides paths and globs).
Every other unix socket outside the project is hidden from commands."""

SOCKET_ENV: dict[str, str] = {"ssh-agent": "SSH_AUTH_SOCK", "gpg-agent": "GPG_AGENT_INFO"}
"""The variable that names an allowed socket: it passes the environment filter too."""

GUARANTEES: dict[str, str] = {
    "unix-sockets": "unix sockets outside the project cannot be reached",
    "process-cleanup": "every process a command starts ends with it",
    "signals": "commands cannot signal processes outside the sandbox",
    "abstract-sockets": "commands cannot reach abstract unix sockets outside the sandbox",
}
"""What a backend must keep on this machine; one it cannot keep makes the plugin refuse
every command until the user names it in ``acceptWeaker``."""

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


def _known_names(names: tuple[str, ...], known: dict[str, str], key: str) -> tuple[str, ...]:
    for name in names:
        if name not in known:
            raise ValueError(f"{SETTINGS_KEY}.{key}: unknown name {name!r} (known: {', '.join(known)})")
    return names


class SandboxError(Exception):
    """The policy cannot be used (bad settings, no sandbox on this machine): the plugin
    then refuses every command, naming the cause. ``settings_file`` is set when the
    cause is a fault of a whole settings file, which pi itself reports."""

    def __init__(self, message: str, *, settings_file: Path | None = None) -> None:
        super().__init__(message)
        self.settings_file = settings_file


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
    allow_sockets: tuple[str, ...] = ()
    """Unix sockets outside the project commands may reach: :data:`SOCKET_NAMES`, paths
    or globs."""
    accept_weaker: tuple[str, ...] = ()
    """:data:`GUARANTEES` the user accepts to go without where the backend cannot keep them."""

    @classmethod
    def parse(cls, raw: object) -> SandboxSettings:
        """Validate the value of the ``sandbox`` key; ``ValueError`` names the bad key."""
        if not isinstance(raw, dict):
            raise ValueError(f"{SETTINGS_KEY} must be an object")
        known = {
            "preset",
            "backend",
            "denyRead",
            "allowWrite",
            "network",
            "allowedHosts",
            "env",
            "allowSockets",
            "acceptWeaker",
        }
        for key in raw:
            if key not in known:
                raise ValueError(f"{SETTINGS_KEY}.{key}: unknown key (known: {', '.join(sorted(known))})")

        def choice(key: str, options: tuple[str, ...], default: str | None) -> Any:
            value = raw.get(key, default)
            if value is None and default is None:
                return None
            if value not in options:
                raise ValueError(
                    f"{SETTINGS_KEY}.{key}: must be one of {', '.join(repr(o) for o in options)}, not {value!r}"
                )
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
            allow_sockets=strings(raw, "allowSockets", SETTINGS_KEY),
            accept_weaker=_known_names(strings(raw, "acceptWeaker", SETTINGS_KEY), GUARANTEES, "acceptWeaker"),
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
    allow_sockets: tuple[str, ...] = ()
    accept_weaker: tuple[str, ...] = ()
    session_dir: str | None = None
    """The user settings' ``sessionDir`` (denied like the default sessions folder)."""

    @property
    def enabled(self) -> bool:
        return self.preset != "off"


def _read_key(path: Path) -> dict[str, object] | None:
    """The ``sandbox`` key of a settings file (``None`` when the file or key is absent)."""
    try:
        return settings_section(SETTINGS_KEY, path)
    except SettingsFileError as exc:
        if exc.key is not None:
            raise SandboxError(f"invalid settings in {path}: {exc.message}") from None
        raise SandboxError(f"the settings file {exc}", settings_file=exc.path) from None


def load_policy(agent: Path | None = None, managed: Path | None = None) -> Policy:
    """The policy of the managed file, else of the user's ``settings.json``, else the
    defaults. Raise :class:`SandboxError` naming the file for anything invalid."""
    agent = agent or agent_dir()
    managed = MANAGED_SETTINGS if managed is None else managed
    for path in (managed, user_settings_file(agent)):
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
        env_allow=(*settings.env_allow, *(SOCKET_ENV[name] for name in settings.allow_sockets if name in SOCKET_ENV)),
        env_deny=(*DEFAULT_ENV_DENY, *settings.env_deny),
        agent_dir=str(agent or agent_dir()),
        allow_sockets=settings.allow_sockets,
        accept_weaker=settings.accept_weaker,
        session_dir=_session_dir(agent or agent_dir()),
    )


def _session_dir(agent: Path) -> str | None:
    """The ``sessionDir`` of the user settings (``~`` expanded), if any."""
    try:
        value = read_settings(user_settings_file(agent)).get("sessionDir")
    except SettingsFileError:
        return None
    return os.path.expanduser(value) if isinstance(value, str) and value.strip() else None


def temp_dir() -> str:
    import tempfile  # at the first command: tempfile imports shutil and its compression modules

    return _real_path(tempfile.gettempdir())


@functools.lru_cache(maxsize=8)
def _real_path(path: str) -> str:
    """``os.path.realpath`` of the temp folder, resolved once (a plan expands every
    policy path, each naming ``{tmp}``)."""
    return os.path.realpath(path)


def runtime_dir() -> str | None:
    value = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    return value


def expand(pattern: str, *, project: str, agent: str, sessions: str | None = None) -> list[str]:
    """The existing real paths a policy path names (globs expanded)."""
    runtime = runtime_dir()
    if ("{runtime}" in pattern and not runtime) or ("{sessions}" in pattern and not sessions):
        return []
    if pattern.startswith("$"):  # a variable naming a path (allowSockets: $SSH_AUTH_SOCK)
        pattern = os.environ.get(pattern[1:], "")
        if not pattern:
            return []
    text = (
        pattern.replace("{agent}", agent)
        .replace("{project}", project)
        .replace("{tmp}", temp_dir())
        .replace("{runtime}", runtime or "")
        .replace("{sessions}", sessions or "")
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
    git: list[str] = field(default_factory=list)
    """The project's repository folder (or ``.git`` file): a mount point of its own
    (bubblewrap), so it cannot be renamed or replaced while its hooks and configuration
    are read-only."""
    hidden_sockets: list[str] = field(default_factory=list)
    """Unix sockets outside the project, hidden from the command (also those inside a
    denied folder: Landlock does not mediate ``connect``; bubblewrap's empty folder
    hides them already)."""
    allowed_sockets: list[str] = field(default_factory=list)
    """Unix sockets ``allowSockets`` lets through (even inside a denied folder)."""


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
    allowed_sockets = [
        path
        for entry in policy.allow_sockets
        for pattern in SOCKET_NAMES.get(entry, (entry,))
        for path in expand(pattern, project=project, agent=agent)
    ]
    deny: list[str] = []
    for entry in policy.deny_read:
        for path in expand(entry, project=project, agent=agent, sessions=policy.session_dir):
            if path in allowed_sockets:
                continue
            if path not in deny and not any(_within(path, d) for d in deny):
                deny.append(path)
    deny = [d for d in deny if not any(_within(d, other) and d != other for other in deny)]
    git = _git_paths(project)
    protected: list[str] = []
    for entry in (*policy.protected, *git.protected):
        for path in expand(entry, project=project, agent=agent):
            if any(_within(path, w) for w in writable) and path not in protected:
                protected.append(path)
    # shallow paths first, so that a deeper mount lands on top of a shallower one
    writable.sort(key=lambda p: p.count("/"))
    protected.sort(key=lambda p: p.count("/"))
    deny.sort(key=lambda p: p.count("/"))
    mounts = [g for g in git.mounts if any(_within(g, w) for w in writable)]
    hidden = [sock for sock in unix_sockets() if not _within(sock, project) and sock not in allowed_sockets]
    return Plan(
        cwd=project,
        writable=writable,
        protected=protected,
        deny=deny,
        network=policy.network,
        git=mounts,
        hidden_sockets=hidden,
        allowed_sockets=sorted(set(allowed_sockets)),
    )


@dataclass
class _Git:
    """The repository paths :func:`_git_paths` found: mount points and paths kept read-only."""

    mounts: list[str]
    protected: list[str]


def _git_paths(project: str) -> _Git:
    """What protects the project's repository: its ``.git`` (a folder, a ``gitdir:``
    file of a worktree or submodule, or a symlink) as a mount point, and the hooks,
    configuration and submodule repositories of the git folder it leads to (and of that
    folder's common folder, for a worktree)."""
    dot_git = os.path.join(project, ".git")
    if not os.path.lexists(dot_git):
        return _Git([], [])
    real = os.path.realpath(dot_git)
    mounts = [real]
    folders: list[str] = []
    if os.path.isdir(real):
        folders.append(real)
    elif os.path.isfile(real):
        try:
            with open(real, encoding="utf-8", errors="replace") as handle:
                first = handle.readline().strip()
        except OSError:
            first = ""
        if first.startswith("gitdir:"):
            target = os.path.realpath(os.path.join(os.path.dirname(real), first[len("gitdir:") :].strip()))
            if os.path.isdir(target):
                folders.append(target)
                mounts.append(target)
    for folder in list(folders):
        try:
            with open(os.path.join(folder, "commondir"), encoding="utf-8", errors="replace") as handle:
                common = os.path.realpath(os.path.join(folder, handle.read().strip()))
        except OSError:
            continue
        if os.path.isdir(common) and common not in folders:
            folders.append(common)
    protected = [os.path.join(f, name) for f in folders for name in ("hooks", "config", "config.worktree", "modules")]
    return _Git(mounts, protected)


SOCKET_FOLDERS = ("/run", "/var/run")
"""Where services keep their sockets: walked (a few levels deep) for sockets bound in
other network namespaces (containers, ``PrivateNetwork=`` services), which
``/proc/net/unix`` does not list."""


def unix_sockets() -> list[str]:
    """The pathname unix sockets a command could connect to: those bound in pi's network
    namespace (``/proc/net/unix``) and the socket files below :data:`SOCKET_FOLDERS`,
    each only when its folders can be entered by the command's uid (the others, nobody
    in the sandbox reaches; bubblewrap could not even mount over them)."""
    found: dict[str, None] = {}
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as table:
            lines = table.read().splitlines()[1:]
    except OSError:
        lines = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith("/"):
            found[fields[7]] = None
    for top in SOCKET_FOLDERS:
        if os.path.islink(top):
            continue
        _socket_files(top, found, depth=4)
    uid = os.geteuid()
    return [path for path in found if _reachable(path, uid)]


def _socket_files(folder: str, found: dict[str, None], depth: int) -> None:
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries[:2000]:
        try:
            if entry.is_dir(follow_symlinks=False):
                if depth > 1:
                    _socket_files(entry.path, found, depth - 1)
            elif stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                found[entry.path] = None
        except OSError:
            continue


def _reachable(path: str, uid: int) -> bool:
    """Whether ``path`` exists and each folder above it can be entered by ``uid`` without
    privileges (owner, or others' execute bit; a user namespace maps no group)."""
    try:
        os.lstat(path)
    except OSError:
        return False
    folder = os.path.dirname(path)
    while True:
        try:
            info = os.stat(folder)
        except OSError:
            return False
        if not (info.st_uid == uid and info.st_mode & stat.S_IXUSR) and not info.st_mode & stat.S_IXOTH:
            return False
        parent = os.path.dirname(folder)
        if parent == folder:
            return True
        folder = parent


def filter_env(env: dict[str, str], policy: Policy) -> dict[str, str]:
    """The environment a sandboxed command gets: secrets removed.

    A variable is removed when its name matches a pattern of ``policy.env_deny``
    (case-insensitive, ``*`` wildcards), or when its value holds credentials in a URL
    (:func:`url_credentials`): ``DATABASE_URL=postgres://user:pw@db/x``,
    ``SENTRY_DSN=https://key@o1.ingest.sentry.io/1``, ``REDIS_URL=redis://:pw@host``,
    ``HTTPS_PROXY=http://user:pw@proxy:8080``. A variable ``env.allow`` names is kept
    whatever its name or value. With ``env_minimal`` (``strict``), only the names of
    :data:`MINIMAL_ENV` and ``env.allow`` pass, and the same value rule applies to them.
    """

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
        if keep and (allowed or not url_credentials(value)):
            out[name] = value
    return out


_SCHEME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.")
_AUTHORITY_END = re.compile(r'[\s/?#\\"<>]')
_USER_NAME_SCHEMES = frozenset({"ssh", "sftp"})
"""Schemes whose user name alone is no secret (``ssh://git@github.com/x/y``): the
password, or the key, never travels in the URL."""


def url_credentials(value: str) -> bool:
    r"""Whether ``value`` holds, anywhere, a URL with credentials.

    The rule: for each ``://`` in the value preceded by a scheme (a letter, then letters,
    digits, ``+``, ``-`` or ``.``), the authority is what follows it up to the first
    ``/``, ``?``, ``#``, ``\``, ``"``, ``<``, ``>``, blank or the end of the value. When
    the authority holds an ``@``, what precedes its last ``@`` is the user information,
    ``USER`` or ``USER:PASSWORD``. It is a credential when the password is not empty
    (``postgres://user:pw@db/x``, ``redis://:pw@host``), or the user is not empty
    (``https://key@o1.ingest.sentry.io/1``, a DSN or a token as user name), except a
    user name alone with a scheme of ssh (``ssh``, ``git+ssh``, ``sftp``…:
    ``ssh://git@github.com/x/y``). So ``https://example.org``, ``http://proxy:8080``,
    ``https://example.org/@scope/x``, ``https://example.org/?by=me@example.org``, an
    e-mail address, ``mailto:me@example.org`` and ``git@github.com:x/y`` (no ``://``)
    hold none. Linear in the length of the value.
    """
    at = value.find("://")
    while at >= 0:
        begin = at
        while begin > 0 and at - begin < 64 and value[begin - 1] in _SCHEME_CHARACTERS:
            begin -= 1
        while begin < at and not value[begin].isalpha():  # a scheme starts with a letter
            begin += 1
        if begin < at:
            end = _AUTHORITY_END.search(value, at + 3)
            authority = value[at + 3 : end.start() if end is not None else len(value)]
            userinfo, separator, _host = authority.rpartition("@")
            if separator:
                user, _, password = userinfo.partition(":")
                schemes = set(value[begin:at].lower().split("+"))
                if password or (user and not schemes & _USER_NAME_SCHEMES):
                    return True
        at = value.find("://", at + 3)
    return False
