"""MCP server configuration: ``mcp.json`` files and servers registered by plugins.

Servers come from ``<agent dir>/mcp.json`` and, only in trusted projects, from
``<cwd>/.pi/mcp.json`` (key ``mcpServers``, the shape other MCP clients use). A project
entry replaces the user entry of the same name; a project entry without ``command``,
``url`` or ``type`` only overrides ``enabled``, ``exposure`` and ``toolExposure`` of the
user entry. An invalid entry is reported (naming the file and the server) and skipped;
the others still load.

Values of ``env``, ``headers`` and ``oauth.clientSecret`` may use ``${VAR}`` and
``${VAR:-default}``, or be a whole-value ``!command`` whose output is used; they are
expanded when the server connects (:func:`expand_value`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from pi_hookspecs import camel_alias, toolkit
from pi_hookspecs.record import dataclass

CONFIG_FILE_NAME = "mcp.json"
DEFAULT_TIMEOUT_SECONDS = 60.0
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9_-]+$")
OVERRIDE_KEYS = ("enabled", "exposure", "toolExposure")
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")
COMMAND_TIMEOUT_SECONDS = 10.0

Exposure = Literal["codemode", "deferred", "direct", "hidden"]
EXPOSURE_VALUES: tuple[str, ...] = ("codemode", "deferred", "direct", "hidden")
EXPOSURE_ALIASES = {"codemode-deferred": "codemode"}


class ConfigValueError(ValueError):
    """A configured value could not be expanded (unset variable, failing command)."""


# --------------------------------------------------------------------------- places


agent_dir = toolkit.agent_dir
"""pi's agent folder, found the way pi finds it (:mod:`pi_hookspecs.toolkit`)."""


def user_config_path(agent: Path | None = None) -> Path:
    return (agent if agent is not None else agent_dir()) / CONFIG_FILE_NAME


def project_config_path(cwd: str | os.PathLike[str]) -> Path:
    return toolkit.project_dir(cwd) / CONFIG_FILE_NAME


def normalized_server_name(name: str) -> str:
    """Names that differ only in ``-`` and ``_`` name the same server."""
    return name.replace("-", "_")


def check_server_name(name: str) -> str | None:
    """Why ``name`` is not a valid server name, or ``None``."""
    if not isinstance(name, str) or not SERVER_NAME_RE.match(name):
        return f'invalid server name "{name}": use only letters, digits, "_" and "-"'
    return None


# --------------------------------------------------------------------------- models


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=camel_alias, populate_by_name=True, extra="ignore", strict=True, frozen=True, defer_build=True
    )


def _is_loopback_http(url: str, *, https_ok: bool) -> bool:
    parts = urlsplit(url)
    if parts.scheme == "https" and https_ok:
        return True
    return parts.scheme == "http" and (parts.hostname or "") in LOOPBACK_HOSTS


def _exposure(value: Any) -> Any:
    return EXPOSURE_ALIASES.get(value, value) if isinstance(value, str) else value


class OAuthConfig(_Model):
    """``oauth`` of an HTTP server: a pre-registered client and the sign-in details."""

    client_id: str | None = None
    client_secret: str | None = None
    callback_port: int | None = Field(default=None, ge=1, le=65535)
    callback_url: str | None = None
    scope: str | None = None
    client_name: str | None = None
    client_registration: Literal["auto", "dcr", "cimd"] = "auto"
    auth_server_metadata_url: str | None = None

    @field_validator("callback_url")
    @classmethod
    def _callback_url(cls, value: str | None) -> str | None:
        if value is not None and not _is_loopback_http(value, https_ok=False):
            raise ValueError("must be an http:// URL on localhost, 127.0.0.1 or [::1]")
        return value

    @field_validator("auth_server_metadata_url")
    @classmethod
    def _metadata_url(cls, value: str | None) -> str | None:
        if value is not None and not _is_loopback_http(value, https_ok=True):
            raise ValueError("must use https:// (http:// only on localhost, 127.0.0.1 or [::1])")
        return value

    @model_validator(mode="after")
    def _cimd(self) -> OAuthConfig:
        if self.client_registration == "cimd":
            if self.client_id is not None or self.client_name is not None:
                raise ValueError('clientRegistration "cimd" cannot be combined with clientId or clientName')
            if self.callback_url is not None:
                parts = urlsplit(self.callback_url)
                if parts.hostname not in ("localhost", "127.0.0.1") or parts.path != "/callback":
                    raise ValueError(
                        'with clientRegistration "cimd" callbackUrl must be http://localhost or 127.0.0.1 '
                        "with the path /callback"
                    )
        return self


class AuthConfig(_Model):
    """``auth``: borrow the credentials of a pi provider login."""

    provider: str


class ServerConfig(_Model):
    """One ``mcpServers`` entry: a stdio server (``command``) or a streamable HTTP server
    (``url``), plus how its tools reach the model."""

    type: Literal["stdio", "http", "streamable-http"] | None = None
    command: str | None = None
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    oauth: OAuthConfig | None = None
    auth: AuthConfig | None = None
    timeout: float = Field(default=DEFAULT_TIMEOUT_SECONDS, gt=0)
    enabled: bool = True
    exposure: Exposure = "codemode"
    tool_exposure: dict[str, Exposure] = Field(default_factory=dict)
    description: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _before(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise ValueError("must be an object")
        data = dict(data)
        if data.get("type") == "sse":
            raise ValueError(
                'type "sse": the legacy SSE transport is not supported; use the server\'s streamable HTTP URL '
                "(often ending in /mcp instead of /sse)"
            )
        if "exposure" in data:
            data["exposure"] = _exposure(data["exposure"])
        for key in ("toolExposure", "tool_exposure"):
            if isinstance(data.get(key), Mapping):
                data[key] = {k: _exposure(v) for k, v in data[key].items()}
        return data

    @model_validator(mode="after")
    def _transport(self) -> ServerConfig:
        if self.command is not None and self.url is not None:
            raise ValueError('has both "command" and "url": a server is either stdio (command) or HTTP (url)')
        if self.type == "stdio" and self.command is None:
            raise ValueError('type "stdio" needs "command"')
        if self.type in ("http", "streamable-http") and self.url is None:
            raise ValueError(f'type "{self.type}" needs "url"')
        if self.command is None and self.url is None:
            raise ValueError('needs either "command" (stdio) or "url" (streamable HTTP)')
        if self.command is not None and not self.command.strip():
            raise ValueError('"command" is empty')
        if self.url is not None:
            parts = urlsplit(self.url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise ValueError(f'"url" must be an http:// or https:// URL, got "{self.url}"')
            if self.command is None and (self.args or self.env or self.cwd):
                raise ValueError('"args", "env" and "cwd" belong to stdio servers, not to a "url" server')
        if self.command is not None and (self.headers or self.oauth):
            raise ValueError('"headers" and "oauth" belong to HTTP servers, not to a "command" server')
        if self.auth is not None:
            raise ValueError(
                '"auth.provider" (signing in with a pi provider login) is not supported by pluggable-pi-mcp: '
                'use "oauth" or an Authorization header'
            )
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    @property
    def has_authorization_header(self) -> bool:
        return any(key.lower() == "authorization" for key in self.headers)

    def uses_oauth(self) -> bool:
        """HTTP servers sign in with OAuth unless an ``Authorization`` header is set."""
        return self.transport == "http" and not self.has_authorization_header

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_defaults=True)


class ServerOverride(_Model):
    """A project entry without ``command``/``url``/``type``: changes only these fields of
    the user entry of the same name."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool | None = None
    exposure: Exposure | None = None
    tool_exposure: dict[str, Exposure] | None = None

    @model_validator(mode="before")
    @classmethod
    def _before(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise ValueError("must be an object")
        data = dict(data)
        if "exposure" in data:
            data["exposure"] = _exposure(data["exposure"])
        for key in ("toolExposure", "tool_exposure"):
            if isinstance(data.get(key), Mapping):
                data[key] = {k: _exposure(v) for k, v in data[key].items()}
        return data

    def apply(self, config: ServerConfig) -> ServerConfig:
        update: dict[str, Any] = {}
        if self.enabled is not None:
            update["enabled"] = self.enabled
        if self.exposure is not None:
            update["exposure"] = self.exposure
        if self.tool_exposure is not None:
            update["tool_exposure"] = self.tool_exposure
        return config.model_copy(update=update)


def format_validation_error(error: ValidationError) -> str:
    """``field "a.b": message`` parts joined with ``; `` (aliases as written in the file)."""
    parts = []
    for item in error.errors():
        loc = ".".join(str(p) for p in item.get("loc", ()))
        message = str(item.get("msg", "invalid"))
        message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
        kind = item.get("type", "")
        if kind == "extra_forbidden":
            message = "unknown field (a project override may only set enabled, exposure and toolExposure)"
        elif kind == "literal_error" and loc.split(".")[0] in ("exposure", "toolExposure"):
            message = 'must be "codemode", "deferred", "direct" or "hidden"'
        parts.append(f'"{loc}": {message}' if loc else message)
    return "; ".join(parts)


def parse_server(name: str, value: Any) -> ServerConfig:
    """Validate one entry; raises ``ValueError`` with a message naming the fields."""
    problem = check_server_name(name)
    if problem:
        raise ValueError(problem)
    if isinstance(value, ServerConfig):
        return value
    try:
        return ServerConfig.model_validate(value)
    except ValidationError as exc:
        raise ValueError(format_validation_error(exc)) from None


def is_override(value: Any) -> bool:
    return isinstance(value, Mapping) and not any(key in value for key in ("command", "url", "type"))


# --------------------------------------------------------------------------- loading


@dataclass
class ServerEntry:
    """A configured server: its validated config and where it came from."""

    name: str
    config: ServerConfig
    source: str
    """The file that defined it, or ``plugin <name>`` for a registration."""
    overridden_by: str | None = None
    """The project file whose override changed ``enabled``/``exposure``/``toolExposure``."""
    scope: Literal["user", "project", "plugin"] = "user"

    @property
    def enabled(self) -> bool:
        return self.config.enabled


@dataclass
class LoadedConfig:
    """The configured servers of a run, with what reading their configuration found."""

    servers: dict[str, ServerEntry] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    shadowed: list[ServerEntry] = field(default_factory=list)
    """Plugin registrations that a ``mcp.json`` server of the same name overrides."""
    auto_enable_codemode: bool = True

    def find(self, name: str) -> ServerEntry | None:
        wanted = normalized_server_name(name)
        for key, entry in self.servers.items():
            if normalized_server_name(key) == wanted:
                return entry
        return None


def read_config_file(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The parsed file (``None`` when missing) or an error message naming the file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, f"{path}: cannot read: {exc.strerror or exc}"
    except UnicodeDecodeError as exc:
        return None, f"{path}: not UTF-8 text (byte {exc.start}); expected a JSON object"
    if not text.strip():
        return {}, None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
    if not isinstance(data, dict):
        return None, f'{path}: expected a JSON object with an "mcpServers" object'
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        return None, f'{path}: "mcpServers" must be an object mapping server names to entries'
    auto = data.get("autoEnableCodemode")
    if auto is not None and not isinstance(auto, bool):
        return None, f'{path}: "autoEnableCodemode" must be true or false'
    return data, None


def _server_error(path: Path | str, name: str, message: str) -> str:
    return f'{path}: server "{name}": {message}'


def _add_file(
    loaded: LoadedConfig,
    path: Path,
    scope: Literal["user", "project"],
) -> None:
    data, error = read_config_file(path)
    if error:
        loaded.errors.append(error)
        return
    if data is None:
        return
    if isinstance(data.get("autoEnableCodemode"), bool):
        loaded.auto_enable_codemode = data["autoEnableCodemode"]
    seen: dict[str, str] = {}
    for name, value in (data.get("mcpServers") or {}).items():
        problem = check_server_name(name)
        if problem:
            loaded.errors.append(f"{path}: {problem}")
            continue
        key = normalized_server_name(name)
        if key in seen:
            loaded.errors.append(
                _server_error(path, name, f'names the same server as "{seen[key]}" ("-" and "_" count as the same)')
            )
            continue
        seen[key] = name
        existing = loaded.find(name)
        if scope == "project" and is_override(value):
            try:
                override = ServerOverride.model_validate(value)
            except ValidationError as exc:
                loaded.errors.append(_server_error(path, name, format_validation_error(exc)))
                continue
            if existing is None:
                loaded.errors.append(
                    _server_error(
                        path,
                        name,
                        'has no "command" or "url" and there is no user-level server of that name to override',
                    )
                )
                continue
            existing.config = override.apply(existing.config)
            existing.overridden_by = str(path)
            continue
        if (
            scope == "project"
            and isinstance(value, Mapping)
            and isinstance(value.get("auth"), Mapping)
            and "provider" in value["auth"]
        ):
            loaded.errors.append(
                _server_error(
                    path, name, '"auth.provider" may only be set in the user-level mcp.json, not in a project file'
                )
            )
            continue
        try:
            config = parse_server(name, value)
        except ValueError as exc:
            loaded.errors.append(_server_error(path, name, str(exc)))
            continue
        if existing is not None:
            del loaded.servers[existing.name]
        loaded.servers[name] = ServerEntry(name, config, str(path), scope=scope)


def load_config(
    *,
    cwd: str | os.PathLike[str],
    project_trusted: bool,
    agent: Path | None = None,
) -> LoadedConfig:
    """The user file, then (when trusted) the project file."""
    loaded = LoadedConfig()
    _add_file(loaded, user_config_path(agent), "user")
    project = project_config_path(cwd)
    if project_trusted:
        _add_file(loaded, project, "project")
    elif project.exists():
        loaded.notes.append(untrusted_note(project))
    return loaded


def untrusted_note(project: Path) -> str:
    """The note for a project ``mcp.json`` that is not read: it names its servers (the
    names only: nothing of an untrusted file is used) and how to trust the project."""
    try:
        servers = json.loads(project.read_text(encoding="utf-8-sig")).get("mcpServers")
        names = sorted(servers) if isinstance(servers, dict) else []
    except (OSError, ValueError, AttributeError):
        names = []
    which = f" (servers {', '.join(names)})" if names else ""
    return (
        f"{project}{which} is not read: the project is not trusted "
        "(start pi in the project and trust it, or run pi with --approve)"
    )


# --------------------------------------------------------------------------- expansion

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_value(value: str, what: str, env: Mapping[str, str] | None = None) -> str:
    """``${VAR}`` / ``${VAR:-default}`` substitution, or the output of a whole-value
    ``!command``. Raises :class:`ConfigValueError` naming ``what``."""
    environ = env if env is not None else os.environ
    if value.startswith("!"):
        command = value[1:].strip()
        if not command:
            raise ConfigValueError(f"{what}: empty !command")
        try:
            done = subprocess.run(
                command,
                shell=True,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_SECONDS,
                env=dict(environ),
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired:
            raise ConfigValueError(
                f"{what}: command {command!r} did not finish within {COMMAND_TIMEOUT_SECONDS:g}s"
            ) from None
        except OSError as exc:
            raise ConfigValueError(f"{what}: command {command!r} could not run: {exc}") from None
        if done.returncode != 0:
            detail = done.stderr.strip().splitlines()[-1:] or [""]
            raise ConfigValueError(
                f"{what}: command {command!r} failed with exit status {done.returncode} {detail[0]}".rstrip()
            )
        return done.stdout.strip()

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        current = environ.get(name)
        if current:
            return current
        if default is not None:
            return default
        if current is not None:
            return current
        raise ConfigValueError(f"{what}: environment variable {name} is not set")

    return _VARIABLE.sub(substitute, value)


def expand_mapping(values: Mapping[str, str], what: Callable[[str], str]) -> dict[str, str]:
    return {key: expand_value(value, what(key)) for key, value in values.items()}


def expand_home(value: str) -> str:
    """A leading ``~/`` (or a bare ``~``) names the home directory."""
    if value == "~" or value.startswith("~/"):
        return str(Path.home()) + value[1:]
    return value


# --------------------------------------------------------------------------- editing (pi mcp add/remove)


def _has_secrets(data: Mapping[str, Any]) -> bool:
    """Whether a server of ``data`` carries environment variables, headers or an OAuth
    client secret (tokens)."""
    servers = data.get("mcpServers")
    return isinstance(servers, Mapping) and any(
        isinstance(server, Mapping)
        and bool(
            server.get("env")
            or server.get("headers")
            or (isinstance(server.get("oauth"), Mapping) and server["oauth"].get("clientSecret"))
        )
        for server in servers.values()
    )


def write_config_file(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``data`` as indented JSON (atomically, keeping the file's mode). A file
    holding secrets (a server's ``env``, ``headers`` or OAuth client secret) is
    readable by its owner only:
    created 0600, and an existing file loses its group and other permissions."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    if _has_secrets(data):
        mode = 0o600 if mode is None else mode & 0o700
    # stale temporary files of an interrupted write (another pid that is gone)
    for stale in path.parent.glob(f".{path.name}.*.tmp"):
        pid = stale.name[len(path.name) + 2 : -4]
        if pid.isdigit() and int(pid) != os.getpid() and not _pid_alive(int(pid)):
            stale.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666 if mode is None else mode)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # someone else's process
        return True
    return True


def saved_project_trust(cwd: str | os.PathLike[str], agent: Path | None = None) -> bool:
    """Whether the project is already trusted, for ``pi mcp`` shell commands (no
    session, no plugins): the nearest decision saved in ``<agent dir>/trust.json``, else
    ``defaultProjectTrust: "always"`` in the user settings."""
    base = agent if agent is not None else agent_dir()
    try:
        decisions = json.loads((base / "trust.json").read_text(encoding="utf-8-sig") or "{}")
    except (OSError, ValueError):
        decisions = {}
    if isinstance(decisions, dict):
        current = os.path.realpath(os.path.abspath(os.fspath(cwd)))
        while True:
            value = decisions.get(current)
            if isinstance(value, bool):
                return value
            parent = os.path.dirname(current)
            if parent == current:
                break
            current = parent
    try:
        settings = json.loads((base / "settings.json").read_text(encoding="utf-8-sig") or "{}")
    except (OSError, ValueError):
        return False
    return isinstance(settings, dict) and settings.get("defaultProjectTrust") == "always"
