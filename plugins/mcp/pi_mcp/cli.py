"""``pi mcp``: add, remove, list, login and logout servers from a shell (no session).

    pi mcp add [-l] NAME [--env K=V]... [--cwd DIR] -- COMMAND [ARGS...]
    pi mcp add [-l] NAME --url URL [--header K=V]... [--bearer-token-env-var NAME] [--oauth-...]
    pi mcp remove [-l] NAME
    pi mcp list [--json]
    pi mcp login NAME [-l] [--timeout SECONDS]
    pi mcp logout NAME [-l]

``-l`` / ``--local`` uses the project's ``.pi/mcp.json`` instead of the user file. The
project file is read only when the project is already trusted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from .config import (
    EXPOSURE_VALUES,
    LoadedConfig,
    ServerEntry,
    agent_dir,
    check_server_name,
    load_config,
    normalized_server_name,
    parse_server,
    project_config_path,
    read_config_file,
    saved_project_trust,
    user_config_path,
    write_config_file,
)

HELP = "Manage MCP servers: add, remove, list, login, logout (see pi mcp --help)"


class UsageError(Exception):
    pass


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pi mcp", description="Manage MCP servers (mcp.json).")
    sub = parser.add_subparsers(dest="action", metavar="{add,remove,list,login,logout}")
    sub.required = True

    add = sub.add_parser(
        "add",
        help="add or replace a server",
        usage="pi mcp add [-l] NAME [options] -- COMMAND [ARGS...]\n       pi mcp add [-l] NAME --url URL [options]",
    )
    add.add_argument("name")
    add.add_argument("-l", "--local", action="store_true", help="write the project's .pi/mcp.json")
    add.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="environment of a stdio server")
    add.add_argument("--cwd", help="working directory of a stdio server")
    add.add_argument("--url", help="streamable HTTP endpoint")
    add.add_argument("--header", action="append", default=[], metavar="KEY=VALUE", help="HTTP header")
    add.add_argument("--bearer-token-env-var", metavar="NAME", help="send Authorization: Bearer ${NAME}")
    add.add_argument("--oauth-client-id")
    add.add_argument("--oauth-client-secret")
    add.add_argument("--oauth-callback-port", type=int)
    add.add_argument("--oauth-client-name")
    add.add_argument("--oauth-client-registration", choices=["auto", "cimd", "dcr"])
    add.add_argument("--exposure", choices=[*EXPOSURE_VALUES, "codemode-deferred"])
    add.add_argument("--description")
    add.add_argument("--timeout", type=float, help="per-request timeout in seconds")

    remove = sub.add_parser("remove", help="remove a server (stored OAuth credentials are kept)")
    remove.add_argument("name")
    remove.add_argument("-l", "--local", action="store_true", help="the project's .pi/mcp.json")

    listing = sub.add_parser("list", help="connect to every enabled server and print its state, tools and errors")
    listing.add_argument("--json", action="store_true", help="print JSON")

    login = sub.add_parser("login", help="sign in to an OAuth server")
    login.add_argument("name")
    login.add_argument("-l", "--local", action="store_true", help="the server must be defined in .pi/mcp.json")
    login.add_argument("--timeout", type=float, default=300.0, help="limit for the whole sign-in (default 300)")

    logout = sub.add_parser("logout", help="delete the stored OAuth credentials of a server")
    logout.add_argument("name")
    logout.add_argument("-l", "--local", action="store_true", help="the server must be defined in .pi/mcp.json")
    return parser


def _pairs(values: list[str], what: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise UsageError(f"{what} {value!r} must look like KEY=VALUE")
        out[key] = rest
    return out


def _config_file(local: bool) -> Path:
    return project_config_path(os.getcwd()) if local else user_config_path()


def _entry_from_args(ns: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if ns.url and command:
        raise UsageError("give either --url URL or -- COMMAND [ARGS...], not both")
    if ns.url:
        if ns.env or ns.cwd:
            raise UsageError("--env and --cwd are for stdio servers (-- COMMAND), not for --url")
        entry["url"] = ns.url
        headers = _pairs(ns.header, "--header")
        if ns.bearer_token_env_var:
            headers["Authorization"] = f"Bearer ${{{ns.bearer_token_env_var}}}"
        if headers:
            entry["headers"] = headers
        oauth = {
            key: value
            for key, value in (
                ("clientId", ns.oauth_client_id),
                ("clientSecret", ns.oauth_client_secret),
                ("callbackPort", ns.oauth_callback_port),
                ("clientName", ns.oauth_client_name),
                ("clientRegistration", ns.oauth_client_registration),
            )
            if value is not None
        }
        if oauth:
            entry["oauth"] = oauth
    elif command:
        if (
            ns.header
            or ns.bearer_token_env_var
            or any(
                v is not None
                for v in (
                    ns.oauth_client_id,
                    ns.oauth_client_secret,
                    ns.oauth_callback_port,
                    ns.oauth_client_name,
                    ns.oauth_client_registration,
                )
            )
        ):
            raise UsageError("--header, --bearer-token-env-var and --oauth-* are for --url servers")
        entry["command"] = command[0]
        if command[1:]:
            entry["args"] = command[1:]
        env = _pairs(ns.env, "--env")
        if env:
            entry["env"] = env
        if ns.cwd:
            entry["cwd"] = ns.cwd
    else:
        raise UsageError("give the server: pi mcp add NAME -- COMMAND [ARGS...]  or  pi mcp add NAME --url URL")
    if ns.exposure:
        entry["exposure"] = ns.exposure
    if ns.description:
        entry["description"] = ns.description
    if ns.timeout is not None:
        entry["timeout"] = ns.timeout
    return entry


def _load_file(path: Path) -> dict[str, Any]:
    data, error = read_config_file(path)
    if error:
        raise UsageError(f"{error} (fix the file first; it was not changed)")
    return data or {}


def cmd_add(ns: argparse.Namespace, command: list[str]) -> int:
    problem = check_server_name(ns.name)
    if problem:
        raise UsageError(problem)
    entry = _entry_from_args(ns, command)
    try:
        parse_server(ns.name, entry)
    except ValueError as exc:
        raise UsageError(f'server "{ns.name}": {exc}') from None
    path = _config_file(ns.local)
    data = _load_file(path)
    servers = data.setdefault("mcpServers", {})
    replaced = [k for k in servers if normalized_server_name(k) == normalized_server_name(ns.name)]
    for key in replaced:
        del servers[key]
    servers[ns.name] = entry
    write_config_file(path, data)
    kind = "HTTP" if "url" in entry else "stdio"
    verb = "Replaced" if replaced else "Added"
    print(f'{verb} {kind} server "{ns.name}" in {path}. Run pi mcp list to check it.')
    return 0


def cmd_remove(ns: argparse.Namespace) -> int:
    path = _config_file(ns.local)
    data = _load_file(path)
    servers = data.get("mcpServers") or {}
    keys = [k for k in servers if normalized_server_name(k) == normalized_server_name(ns.name)]
    if not keys:
        print(f'pi mcp remove: no server "{ns.name}" in {path}', file=sys.stderr)
        return 1
    for key in keys:
        del servers[key]
    write_config_file(path, data)
    print(f'Removed server "{keys[0]}" from {path} (stored OAuth credentials are kept; pi mcp logout removes them).')
    return 0


def _loaded() -> LoadedConfig:
    cwd = os.getcwd()
    return load_config(cwd=cwd, project_trusted=saved_project_trust(cwd), agent=agent_dir())


async def cmd_list(ns: argparse.Namespace) -> int:
    from .status import format_status, server_json

    loaded = _loaded()
    connections = await _connect_all([e for e in loaded.servers.values() if e.enabled])
    try:
        broken = [c.name for c in connections.values() if c.state != "connected"]
        if ns.json:
            payload = {
                "servers": [server_json(e, connections.get(e.name)) for e in loaded.servers.values()],
                "errors": loaded.errors,
                "notes": loaded.notes,
            }
            print(json.dumps(payload, indent=2))
        else:
            from .manager import status_hint

            print(format_status(loaded, connections, tools=True, empty_hint=status_hint(agent_dir())))
    finally:
        await asyncio.gather(*(c.close() for c in connections.values()), return_exceptions=True)
    return 1 if loaded.errors or broken else 0


async def _connect_all(entries: list[ServerEntry]) -> dict[str, Any]:
    """Connect every server concurrently (each bounded by its timeout)."""
    if not entries:
        return {}
    from .connection import McpConnection
    from .errors import McpUnavailableError
    from .oauth import OAuthFactory

    auth = OAuthFactory(agent_dir())
    connections = {entry.name: McpConnection(entry, os.getcwd(), auth=auth) for entry in entries}

    async def connect(connection: McpConnection) -> None:
        try:
            await connection.session()
        except McpUnavailableError:
            pass  # shown through the state

    await asyncio.gather(*(connect(c) for c in connections.values()))
    return connections


def _find(ns: argparse.Namespace) -> ServerEntry:
    loaded = _loaded()
    entry = loaded.find(ns.name)
    if ns.local:
        project = project_config_path(os.getcwd())
        if entry is None or entry.source != str(project):
            trusted = saved_project_trust(os.getcwd())
            why = "" if trusted else " (the project is not trusted, so it is not read)"
            raise UsageError(f'no server "{ns.name}" in {project}{why}')
    if entry is None:
        errors = "".join(f"\n  {e}" for e in loaded.errors if f'"{ns.name}"' in e)
        raise UsageError(f'no MCP server named "{ns.name}" in mcp.json{errors}')
    return entry


async def cmd_login(ns: argparse.Namespace) -> int:
    from .commands import open_browser
    from .oauth import sign_in

    entry = _find(ns)

    def show(url: str) -> None:
        print(
            f'Sign in to MCP server "{entry.name}": open this URL in a browser on this machine:\n\n  {url}\n',
            file=sys.stderr,
        )
        print("Waiting for the browser to return (Ctrl-C cancels)...", file=sys.stderr)
        open_browser(url)

    try:
        count = await sign_in(entry, agent_dir(), os.getcwd(), on_url=show, timeout=ns.timeout)
    except (RuntimeError, ValueError, OSError) as exc:
        print(f'pi mcp login: sign-in to "{entry.name}" failed: {exc}', file=sys.stderr)
        return 1
    print(f'Signed in to MCP server "{entry.name}" ({count} tools).')
    return 0


def cmd_logout(ns: argparse.Namespace) -> int:
    from .oauth import sign_out

    entry = _find(ns)
    if entry.config.transport != "http":
        raise UsageError(f'MCP server "{entry.name}" is a stdio server; it has no OAuth credentials')
    if sign_out(entry, agent_dir()):
        print(f'Signed out of MCP server "{entry.name}".')
    else:
        print(f'No stored credentials for MCP server "{entry.name}".')
    return 0


async def main(args: list[str]) -> int:
    """``pi mcp ...`` (registered through ``register_cli_commands``)."""
    argv = list(args)
    command: list[str] = []
    if "--" in argv:
        index = argv.index("--")
        argv, command = argv[:index], argv[index + 1 :]
    parser = _parser()
    try:
        ns = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        if command and ns.action != "add":
            raise UsageError(f"'--' and a command only go with pi mcp add, not with pi mcp {ns.action}")
        if ns.action == "add":
            return cmd_add(ns, command)
        if ns.action == "remove":
            return cmd_remove(ns)
        if ns.action == "list":
            return await cmd_list(ns)
        if ns.action == "login":
            return await cmd_login(ns)
        return cmd_logout(ns)
    except UsageError as exc:
        print(f"pi mcp {ns.action}: {exc}", file=sys.stderr)
        return 2
