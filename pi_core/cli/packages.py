"""``pi install`` / ``remove`` / ``update`` / ``list``: plugin packages in pi's own
environment, recorded in settings ``packages``.

Users get plugins with ``pip install`` but should not need to know which environment pi
runs in: these commands install into **the environment of the running pi**
(``uv pip install --python <pi's python>`` when uv is available, else
``<pi's python> -m pip``), then record the spec in ``~/.pi/agent/settings.json``
(``-l``: the project's ``.pi/settings.json``). A recorded entry is
``{"source": SPEC, "distribution": NAME}`` (a plain string is accepted too).

pi never installs anything by itself: a trusted project whose settings list packages
that are not installed gets a message with the exact ``pi install`` command.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, TypedDict

import typer

from .._fs import atomic_write
from .._paths import agent_dir, project_dir
from ..resources.packages import (
    Recorded,
    extensions_of,
    guess_distribution,
    installed,
    is_path_or_url,
    normalize,
    recorded,
)
from ..resources.settings import read_settings_file

packages_app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)


# --------------------------------------------------------------------------- environment


def _installer() -> list[str]:
    uv = shutil.which("uv")
    if uv:
        return [uv, "pip"]
    return [sys.executable, "-m", "pip"]


def _pip(args: list[str]) -> subprocess.CompletedProcess[str]:
    base = _installer()
    cmd = [*base, *args]
    if base[0] != sys.executable:
        cmd = [*base, args[0], "--python", sys.executable, *args[1:]]
    env = dict(os.environ)
    env.setdefault("UV_PYTHON_DOWNLOADS", "never")
    return subprocess.run(cmd, capture_output=True, text=True, env=env)


def _explain(result: subprocess.CompletedProcess[str], what: str) -> str:
    text = (result.stderr or result.stdout).strip()
    lower = text.lower()
    if any(s in lower for s in ("no matching distribution", "not found in the package registry", "no solution found")):
        hint = "the package (or that version) does not exist on the package index"
    elif any(s in lower for s in ("connection", "network", "temporary failure in name resolution", "timed out")):
        hint = "the package index cannot be reached (no network?)"
    else:
        hint = "the installer failed"
    tail = "\n".join(text.splitlines()[-8:])
    return f"{what}: {hint}\n{tail}"


# --------------------------------------------------------------------------- settings


def settings_path(local: bool) -> Path:
    return project_dir(os.getcwd()) / "settings.json" if local else agent_dir() / "settings.json"


def _read(path: Path) -> dict[str, Any]:
    return read_settings_file(path)


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(data, indent=2) + "\n")


# --------------------------------------------------------------------------- commands


@packages_app.command("install")
def install_command(
    specs: list[str] = typer.Argument(None, help="PyPI names with versions, local paths, git URLs."),
    local: bool = typer.Option(False, "--local", "-l", help="Record in the project's .pi/settings.json."),
    upgrade: bool = typer.Option(False, "--upgrade", "-U", help="Upgrade when already installed."),
    editable: list[str] = typer.Option([], "--editable", "-e", help="Install a local path in editable mode."),
) -> None:
    """Install plugin packages into the environment pi runs in and record them."""
    specs = list(specs or [])
    if not specs and not editable:
        typer.echo("pi install: name at least one package (or -e PATH)", err=True)
        raise typer.Exit(2)
    before = installed()
    args = ["install", *(["--upgrade"] if upgrade else [])]
    for spec in specs:
        args.append(str(Path(spec).expanduser().resolve()) if is_path_or_url(spec) and "://" not in spec
                    and not spec.startswith("git+") else spec)
    for folder in editable:
        args += ["-e", str(Path(folder).expanduser().resolve())]
    typer.echo(f"Installing into {sys.executable} ...")
    result = _pip(args)
    if result.returncode != 0:
        typer.echo(f"pi install: {_explain(result, 'installation failed')}", err=True)
        raise typer.Exit(1)
    after = installed()
    changed = {name for name, version in after.items() if before.get(name) != version}
    path = settings_path(local)
    data = _read(path)
    entries = recorded(data)
    status = 0
    for spec in [*specs, *editable]:
        name = guess_distribution(spec) if spec in specs else None
        if name is None:
            name = _match_new(spec, changed) or next(iter(sorted(changed)), None)
        shown = str(Path(spec).expanduser().resolve()) if is_path_or_url(spec) and "://" not in spec and not spec.startswith("git+") else spec
        source = shown if spec in specs else f"-e {Path(spec).expanduser().resolve()}"
        entries = [e for e in entries if e.source != source] + [Recorded(source, name)]
        exts = extensions_of(name) if name else []
        if name and exts:
            typer.echo(f"{source}: installed {name} {after.get(normalize(name), '')}; extensions: {', '.join(exts)}")
        else:
            typer.echo(f"warning: {source}: {name or 'the package'} provides no pi.extensions entry point "
                       "(nothing for pi to load)", err=True)
    data["packages"] = [e.to_json() for e in entries]
    _write(path, data)
    typer.echo(f"Recorded in {path}")
    status = max(status, _report_load_errors())
    raise typer.Exit(status)


def _match_new(spec: str, changed: set[str]) -> str | None:
    """The distribution a path/URL install produced: one whose name looks like the
    path's last component, else the only new one."""
    stem = normalize(Path(spec.rstrip("/").split("#")[0]).name.removesuffix(".git"))
    for name in changed:
        if name == stem or name.replace("-", "_") == stem.replace("-", "_"):
            return name
    plugins = [n for n in changed if extensions_of(n)]
    return plugins[0] if len(plugins) == 1 else None


def _report_load_errors() -> int:
    """Load the plugins the way a session would and show their errors."""
    # the plugin host (about 0.1 s of imports) only for ``pi install``, not ``pi list``
    from ..extensions import LoadOptions, PluginHost

    host = PluginHost(LoadOptions(cwd=os.getcwd()))
    asyncio.run(host.load(project_trusted=False))
    errors = [r for r in host.records if r.status == "error"]
    for record in errors:
        typer.echo(f"error: plugin {record.name!r} fails to load: {record.error}", err=True)
    return 1 if errors else 0


@packages_app.command("remove")
def remove_command(
    specs: list[str] = typer.Argument(..., help="Recorded sources or distribution names."),
    local: bool = typer.Option(False, "--local", "-l", help="The project's .pi/settings.json."),
) -> None:
    """Uninstall plugin packages and remove them from settings."""
    path = settings_path(local)
    data = _read(path)
    entries = recorded(data)
    names = []
    status = 0
    for spec in specs:
        match = next((e for e in entries if spec in (e.source, e.distribution)), None)
        name = match.distribution if match else (guess_distribution(spec) or spec)
        if name is None:
            typer.echo(f"pi remove: cannot tell which distribution {spec!r} installed", err=True)
            status = 1
            continue
        names.append(name)
        entries = [e for e in entries if e is not match]
    if names:
        result = _pip(["uninstall", *([] if _installer()[0] != sys.executable else ["-y"]), *names])
        if result.returncode != 0:
            typer.echo(f"pi remove: {_explain(result, 'uninstall failed')}", err=True)
            status = 1
        else:
            typer.echo(f"Removed {', '.join(names)}")
    data["packages"] = [e.to_json() for e in entries]
    _write(path, data)
    raise typer.Exit(status)


@packages_app.command("update")
def update_command(
    specs: list[str] = typer.Argument(None, help="Recorded packages to upgrade (default: all)."),
    local: bool = typer.Option(False, "--local", "-l", help="The project's .pi/settings.json."),
) -> None:
    """Upgrade recorded plugin packages."""
    entries = recorded(_read(settings_path(local)))
    chosen = [e for e in entries if not specs or e.source in specs or e.distribution in specs]
    if not chosen:
        typer.echo("Nothing to update.")
        raise typer.Exit(0)
    args = ["install", "--upgrade"]
    for entry in chosen:
        if entry.source.startswith("-e "):
            args += ["-e", entry.source[3:]]
        else:
            args.append(entry.source)
    result = _pip(args)
    if result.returncode != 0:
        typer.echo(f"pi update: {_explain(result, 'update failed')}", err=True)
        raise typer.Exit(1)
    have = installed()
    for entry in chosen:
        version = have.get(normalize(entry.distribution or ""), "?")
        typer.echo(f"{entry.source}: {entry.distribution} {version}")
    raise typer.Exit(0)


class _ListRow(TypedDict):
    """One row of ``pi list`` (also its ``--json`` record)."""

    scope: str
    source: str
    distribution: str | None
    version: str | None
    installed: bool
    extensions: list[str]


@packages_app.command("list")
def list_command(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """Recorded packages, their installed versions and the extensions they provide."""
    have = installed()
    rows: list[_ListRow] = []
    for scope, local in (("user", False), ("project", True)):
        path = settings_path(local)
        try:
            data = _read(path)
        except Exception as exc:
            typer.echo(f"warning: {exc}", err=True)
            continue
        for entry in recorded(data):
            distribution = entry.distribution
            version = have.get(normalize(distribution)) if distribution else None
            rows.append({"scope": scope, "source": entry.source, "distribution": distribution,
                         "version": version, "installed": version is not None,
                         "extensions": extensions_of(distribution) if distribution and version else []})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        raise typer.Exit(0)
    if not rows:
        typer.echo("No packages recorded. Install one with: pi install NAME")
    for row in rows:
        state = row["version"] or "MISSING (run: pi install" + (" -l " if row["scope"] == "project" else " ") + f"{row['source']})"
        exts = f"  extensions: {', '.join(row['extensions'])}" if row["extensions"] else ""
        typer.echo(f"[{row['scope']}] {row['source']}  {row['distribution'] or ''} {state}{exts}")
    raise typer.Exit(0)
