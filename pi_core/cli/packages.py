"""``pi install`` / ``remove`` / ``update`` / ``list``: plugin packages in pi's own
environment, recorded in settings ``packages``.

Users get plugins with ``pip install`` but should not need to know which environment pi
runs in: these commands install into **the environment of the running pi**
(``uv pip install --python <pi's python>`` or pip; :func:`find_installer` says which,
so an environment made by ``uv sync`` — no pip in it, maybe no ``uv`` on PATH — works
too), then record the spec in ``~/.pi/agent/settings.json``
(``-l``: the project's ``.pi/settings.json``). A recorded entry is
``{"source": SPEC, "distribution": NAME}`` (a plain string is accepted too).

pi never installs anything by itself: a trusted project whose settings list packages
that are not installed gets a message with the exact ``pi install`` command.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, NoReturn, TypedDict

import typer

from pi_hookspecs import ENTRY_POINT_GROUP

from .._fs import atomic_write
from .._paths import agent_dir, project_dir
from ..resources.packages import (
    Recorded,
    extensions_of,
    installed,
    normalize,
    recorded,
)
from ..resources.settings import SettingsError, read_settings_file, read_settings_for_update

packages_app = typer.Typer(add_completion=False, rich_markup_mode=None, pretty_exceptions_enable=False)


# --------------------------------------------------------------------------- the installer


@dataclass(frozen=True)
class Installer:
    """How packages get into pi's environment: ``uv pip`` or pip, aimed at pi's Python."""

    command: tuple[str, ...]
    """The program and its leading words (``uv``; ``python -m pip``)."""
    kind: Literal["uv", "pip"]
    target_flag: bool
    """Whether the environment is named with ``--python`` (uv, and pip run by another
    interpreter) rather than being the interpreter that runs pip."""

    def argv(self, verb: str, args: list[str]) -> list[str]:
        if self.kind == "uv":
            return [*self.command, "pip", verb, "--python", sys.executable, *args]
        if self.target_flag:
            return [*self.command, "--python", sys.executable, verb, *args]
        return [*self.command, verb, *args]

    def describe(self) -> str:
        return " ".join(Path(self.command[0]).name if i == 0 else part for i, part in enumerate(self.command))


class NoInstaller(Exception):
    """Neither uv nor pip can install into pi's environment."""


def _probe(*cmd: str) -> bool:
    try:
        return subprocess.run(cmd, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@functools.cache
def find_installer() -> Installer:
    """The first of: ``uv`` in pi's own environment (a ``uv sync`` environment such as
    the one ``tasks.py`` makes has it), the ``uv`` package's binary, ``uv`` on PATH, pip in
    pi's environment, then ``-m uv`` / ``-m pip`` of the Python that environment was
    made from (pip >= 22.3 takes ``--python``). Probing other interpreters happens only
    when nothing closer exists."""
    exe = "uv" + (sysconfig.get_config_var("EXE") or "")
    beside = Path(sysconfig.get_path("scripts")) / exe
    if beside.is_file():
        return Installer((str(beside),), "uv", True)
    if importlib.util.find_spec("uv") is not None:
        try:
            from uv import find_uv_bin  # the uv package, when pi's environment has it

            return Installer((find_uv_bin(),), "uv", True)
        except Exception:
            pass
    on_path = shutil.which("uv")
    if on_path:
        return Installer((on_path,), "uv", True)
    if importlib.util.find_spec("pip") is not None:
        return Installer((sys.executable, "-m", "pip"), "pip", False)
    base = getattr(sys, "_base_executable", None) or ""
    if base and sys.prefix != sys.base_prefix:  # a virtual environment: try the Python it was made from
        if _probe(base, "-m", "uv", "--version"):
            return Installer((base, "-m", "uv"), "uv", True)
        try:
            pip_help = subprocess.run([base, "-m", "pip", "--help"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            pip_help = None
        if pip_help is not None and pip_help.returncode == 0 and "--python" in pip_help.stdout:
            return Installer((base, "-m", "pip"), "pip", True)
    raise NoInstaller(
        f"no installer for {sys.executable}: uv is not in its environment nor on PATH, and it has no pip; "
        f"add one with: {sys.executable} -m ensurepip   (or install uv: https://docs.astral.sh/uv/)"
    )


def _run(verb: str, args: list[str]) -> subprocess.CompletedProcess[str]:
    """``uv pip VERB`` / ``pip VERB`` on pi's environment. An install compiles the bytecode
    of what it installs (uv does not unless told; pip does by default, said explicitly in
    case a pip configuration turned it off), so the first run after ``pi install`` /
    ``pi update`` is as fast as the next."""
    installer = find_installer()
    env = dict(os.environ)
    env.setdefault("UV_PYTHON_DOWNLOADS", "never")
    if installer.kind == "uv":
        env.pop("VIRTUAL_ENV", None)  # --python names the environment
    if verb == "install":
        args = ["--compile-bytecode" if installer.kind == "uv" else "--compile", *args]
    if verb == "uninstall" and installer.kind == "pip":
        args = ["-y", *args]
    return subprocess.run(installer.argv(verb, args), capture_output=True, text=True, env=env)


def _explain(result: subprocess.CompletedProcess[str], what: str) -> str:
    text = (result.stderr or result.stdout).strip()
    lower = text.lower()
    if any(s in lower for s in ("no matching distribution", "not found in the package registry", "no solution found")):
        hint = "the package (or that version) does not exist on the package index"
    elif any(s in lower for s in ("connection", "network", "temporary failure in name resolution", "timed out")):
        hint = "the package index cannot be reached (no network?)"
    elif "git operation failed" in lower or "git clone" in lower or "failed to clone" in lower:
        hint = "the git repository cannot be fetched (check the URL and the revision)"
    else:
        hint = "the installer failed"
    tail = "\n".join(text.splitlines()[-8:])
    return f"{what}: {hint}\n{tail}"


def _fail(command: str, message: str) -> NoReturn:
    typer.echo(f"pi {command}: {message}", err=True)
    raise typer.Exit(1)


# --------------------------------------------------------------------------- what a spec is


@dataclass(frozen=True)
class Spec:
    """One ``pi install`` argument, as pip's syntax reads it."""

    text: str
    """What the installer gets: a PyPI requirement, an absolute path, a URL."""
    record: str
    """What settings ``packages`` records (``-e PATH`` for an editable install)."""
    editable: bool
    path: Path | None
    """The local project folder (or wheel/sdist file), when the spec is a path."""
    name: str | None
    """The distribution name when the spec itself tells it."""


def parse_spec(raw: str, *, editable: bool = False) -> Spec:
    """A PyPI requirement (``pi-foo``, ``pi-foo==1.2``, ``pi-foo @ git+https://…``), a
    VCS or archive URL (``git+https://host/repo.git@v1#egg=pi-foo``), or a local path
    (a project folder, a wheel, an sdist)."""
    if raw.startswith("-e "):
        raw, editable = raw[3:].strip(), True
    if editable or _looks_like_path(raw):
        path = Path(raw).expanduser().resolve()
        text = str(path)
        return Spec(text, f"-e {text}" if editable else text, editable, path, _project_name(path))
    if ("://" in raw or raw.startswith("git+")) and "@" not in raw.split("://", 1)[0]:
        fragment = dict(part.partition("=")[::2] for part in raw.partition("#")[2].split("&") if part)
        return Spec(raw, raw, False, None, fragment.get("egg") or None)
    return Spec(raw, raw, False, None, _requirement_name(raw))  # also PEP 508's ``pi-foo @ URL``


def _requirement_name(raw: str) -> str | None:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        return Requirement(raw).name
    except InvalidRequirement:
        return None


def _looks_like_path(raw: str) -> bool:
    """pip's rule: a local path when it says so (``./x``, ``/x``, ``~/x``, ``dir/x``) or names
    an existing archive (``x.whl``, ``x.tar.gz``, ``x.zip``); a bare ``pi-foo`` is a
    requirement even when a folder of that name exists here."""
    if "://" in raw or raw.startswith("git+"):
        return False
    if raw.startswith((".", "/", "~")) or os.sep in raw or (os.altsep and os.altsep in raw):
        return True
    return raw.endswith((".whl", ".tar.gz", ".zip")) and Path(raw).is_file()


def _project_name(path: Path) -> str | None:
    """The distribution a local project folder (``pyproject.toml``, ``setup.cfg``) or a
    built file (``name-1.0-py3-none-any.whl``, ``name-1.0.tar.gz``) installs."""
    if path.is_file():
        stem = path.name.removesuffix(".whl").removesuffix(".tar.gz").removesuffix(".zip")
        # a built file's name spells the distribution with "_" (pluggable_pi_sandbox-1.0-…):
        # shown and recorded as the distribution is named (pluggable-pi-sandbox)
        return stem.split("-")[0].replace("_", "-") or None
    try:
        data = tomllib.loads((path / "pyproject.toml").read_text(encoding="utf-8"))
        name = data.get("project", {}).get("name")
        if isinstance(name, str):
            return name
    except (OSError, tomllib.TOMLDecodeError):
        pass
    try:
        for line in (path / "setup.cfg").read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return None


def _direct_urls() -> dict[str, dict[str, Any]]:
    """Installed distributions that came from a URL or a path: name -> direct_url.json."""
    out: dict[str, dict[str, Any]] = {}
    for dist in metadata.distributions():
        text = dist.read_text("direct_url.json")
        name = dist.metadata["Name"]
        if text and name:
            try:
                out[normalize(name)] = json.loads(text)
            except ValueError:
                continue
    return out


def _installed_from(spec: Spec) -> str | None:
    """The distribution whose ``direct_url.json`` names this spec's path or URL."""
    if spec.path is not None:
        wanted = spec.path.as_uri()
        for name, info in _direct_urls().items():
            if str(info.get("url", "")).rstrip("/") == wanted.rstrip("/"):
                return name
        return None
    url = spec.text.partition("#")[0].removeprefix("git+")
    # direct_url.json keeps the repository URL without ``git+`` and the ``@revision``
    path_part = url.split("://", 1)[-1].partition("/")[2]
    base = url.rpartition("@")[0] if "@" in path_part else url
    for name, info in _direct_urls().items():
        if str(info.get("url", "")).rstrip("/") in (url.rstrip("/"), base.rstrip("/")):
            return name
    return None


def _distribution(spec: Spec, changed: set[str], known: str | None) -> str | None:
    name = spec.name or _installed_from(spec) or known
    if name:
        return name
    plugins = sorted(n for n in changed if extensions_of(n))
    return plugins[0] if len(plugins) == 1 else None


# --------------------------------------------------------------------------- settings


def settings_path(local: bool) -> Path:
    return project_dir(os.getcwd()) / "settings.json" if local else agent_dir() / "settings.json"


def _read(path: Path) -> dict[str, Any]:
    try:  # a broken file stops the command before it installs or removes anything
        return read_settings_for_update(path, "packages")
    except SettingsError as exc:
        typer.echo(f"pi: {exc} (fix it first: nothing was installed, removed or recorded)", err=True)
        raise typer.Exit(1) from None


def _write(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(data, indent=2) + "\n")


def _refresh() -> None:
    """Make what the installer just put into site-packages visible to this process:
    ``.pth`` files (editable installs) are read at start-up only."""
    import site

    importlib.invalidate_caches()
    for directory in {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}:
        if directory and Path(directory).is_dir():
            site.addsitedir(directory)


# --------------------------------------------------------------------------- commands


@packages_app.command("install")
def install_command(
    specs: list[str] = typer.Argument(
        None,
        metavar="[SPEC]...",
        help="What pip would take: a PyPI requirement (pi-foo, 'pi-foo==1.2'), a git or archive URL "
        "(git+https://host/repo.git@v1), a local project folder or a wheel.",
    ),
    local: bool = typer.Option(False, "--local", "-l", help="Record in the project's .pi/settings.json."),
    upgrade: bool = typer.Option(False, "--upgrade", "-U", help="Upgrade when already installed."),
    editable: list[str] = typer.Option(
        [],
        "--editable",
        "-e",
        metavar="PATH",
        help="Install a local project folder in editable mode: edits to its code apply to the next pi session "
        "without reinstalling (repeatable).",
    ),
) -> None:
    """Install plugin packages into the environment pi runs in and record them.

    \b
      pi install pluggable-pi-foo         from the package index (any requirement: 'pluggable-pi-foo>=1.2')
      pi install ./pluggable-pi-foo       a local project folder (reinstalled on every call)
      pi install -e ./pluggable-pi-foo    editable: your edits apply without reinstalling
      pi install ./dist/pluggable_pi_foo-1.0-py3-none-any.whl    a built wheel
      pi install git+https://github.com/o/pluggable-pi-foo.git@v1.0
    """
    wanted = [parse_spec(s) for s in specs or []] + [parse_spec(p, editable=True) for p in editable]
    if not wanted:
        typer.echo("pi install: name at least one package (or -e PATH)", err=True)
        raise typer.Exit(2)
    path = settings_path(local)
    data = _read(path)
    for folder in editable:
        if "://" in folder or folder.startswith("git+"):
            _fail(
                "install",
                f"-e {folder}: -e takes a local project folder; install a URL without it: "
                f"pi install {shlex.quote(folder)}",
            )
    for spec in wanted:
        if spec.path is not None and not spec.path.exists():
            _fail("install", f"{spec.path}: no such file or folder")
    try:
        installer = find_installer()
    except NoInstaller as exc:
        _fail("install", str(exc))
    entries = recorded(data)
    before = installed()
    args = ["--upgrade"] if upgrade else []
    for spec in wanted:
        if spec.path is not None and spec.name and installer.kind == "uv":
            # uv keeps an installed local project unless told to rebuild it; pip always rebuilds
            args += ["--reinstall-package", spec.name]
        args += ["-e", spec.text] if spec.editable else [spec.text]
    typer.echo(f"Installing into {sys.executable} with {installer.describe()} ...")
    result = _run("install", args)
    if result.returncode != 0:
        _fail("install", _explain(result, "installation failed"))
    _refresh()
    after = installed()
    changed = {name for name, version in after.items() if before.get(name) != version}
    status = 0
    for spec in wanted:
        known = next((e.distribution for e in entries if e.source == spec.record), None)
        name = _distribution(spec, changed, known)
        # one record per distribution: a reinstall from another source replaces the old one
        entries = [
            e
            for e in entries
            if e.source != spec.record
            and not (name and e.distribution and normalize(e.distribution) == normalize(name))
        ]
        entries.append(Recorded(spec.record, name))
        exts = extensions_of(name) if name else []
        version = after.get(normalize(name)) if name else None
        if name and exts:
            typer.echo(f"{spec.record}: installed {name} {version or ''}; extensions: {', '.join(exts)}")
        elif name and version is None:
            typer.echo(f"warning: {spec.record}: the installer reported success but {name} is not installed", err=True)
            status = 1
        else:
            typer.echo(
                f"warning: {spec.record}: {name or 'the package'} provides no pi.extensions entry point "
                "(nothing for pi to load)",
                err=True,
            )
    data["packages"] = [e.to_json() for e in entries]
    _write(path, data)
    typer.echo(f"Recorded in {path}")
    status = max(status, _report_load_errors({normalize(e.distribution) for e in entries if e.distribution}))
    raise typer.Exit(status)


def _report_load_errors(distributions: set[str]) -> int:
    """Load the just-installed plugins the way a session would and show their errors."""
    # the plugin host (about 0.1 s of imports) only for ``pi install``, not ``pi list``
    from ..extensions import LoadOptions, PluginHost

    host = PluginHost(LoadOptions(cwd=os.getcwd()))
    asyncio.run(host.load(project_trusted=False))
    errors = [
        r for r in host.records if r.status == "error" and normalize(r.source.distribution or "") in distributions
    ]
    for record in errors:
        typer.echo(f"error: plugin {record.name!r} fails to load: {record.error}", err=True)
    return 1 if errors else 0


@packages_app.command("remove")
def remove_command(
    specs: list[str] = typer.Argument(..., help="Distribution names, or the path or URL they were installed from."),
    local: bool = typer.Option(False, "--local", "-l", help="The project's .pi/settings.json."),
) -> None:
    """Uninstall plugin packages and drop their records from settings.

    \b
      pi remove pi-foo                  by distribution name
      pi remove ./pi-foo                by the path (or URL) it was installed from
    """
    path = settings_path(local)
    data = _read(path)
    entries = recorded(data)
    have = installed()
    names: list[str] = []
    status = 0
    for raw in specs:
        spec = parse_spec(raw)
        match = [
            e
            for e in entries
            if raw in (e.source, e.distribution)
            or e.source in (spec.record, f"-e {spec.text}")
            or (e.distribution and normalize(e.distribution) == normalize(raw))
        ]
        name = next((e.distribution for e in match if e.distribution), None) or spec.name
        if name is None and (spec.path is not None or "://" in spec.text):
            name = _installed_from(spec)
        if name is None:
            typer.echo(f"pi remove: {raw!r} is not recorded in {path} and names no distribution", err=True)
            status = 1
            continue
        entries = [
            e
            for e in entries
            if e not in match and not (e.distribution and normalize(e.distribution) == normalize(name))
        ]
        if normalize(name) in have and not match and not extensions_of(name):
            # not recorded and not a plugin: pi's own dependencies (pydantic, …) live here too
            typer.echo(
                f"pi remove: {name} is not a plugin package (no pi.extensions entry point) and not "
                f"recorded in {path}; pi removes only plugin packages",
                err=True,
            )
            status = 1
        elif normalize(name) in have:
            names.append(name)
        elif match:
            typer.echo(f"{name} was not installed; dropped its record")
        else:
            typer.echo(f"pi remove: {name} is neither installed nor recorded in {path}", err=True)
            status = 1
    if names:
        try:
            result = _run("uninstall", names)
        except NoInstaller as exc:
            _fail("remove", str(exc))
        if result.returncode != 0:
            typer.echo(f"pi remove: {_explain(result, 'uninstall failed')}", err=True)
            raise typer.Exit(1)  # the records stay: nothing was removed
        typer.echo(f"Removed {', '.join(names)}")
    if data.get("packages") is not None or entries:
        data["packages"] = [e.to_json() for e in entries]
        _write(path, data)
    raise typer.Exit(status)


PI_DISTRIBUTION = "pluggable-pi"
"""The distribution that installs pi itself (``pi update --self``)."""

SELF_TARGETS = ("self", "pi")
"""``pi update self`` / ``pi update pi``: pi itself, as in pi 1.6.0."""


def _offline() -> bool:
    return os.environ.get("PI_OFFLINE", "").strip().lower() in ("1", "true", "yes")


@packages_app.command("update")
def update_command(
    specs: list[str] = typer.Argument(
        None, metavar="TARGET", help="Recorded packages (source or name) to upgrade; self or pi: pi itself."
    ),
    local: bool = typer.Option(False, "--local", "-l", help="The project's .pi/settings.json."),
    self_: bool = typer.Option(False, "--self", help="Update pi itself (same as the target self or pi)."),
    extensions: bool = typer.Option(False, "--extensions", help="Update every recorded package (the default)."),
    models: bool = typer.Option(False, "--models", help="Refresh the plugins' dynamic model catalogues now."),
    everything: bool = typer.Option(False, "--all", help="Update pi itself and every recorded package."),
    extension: list[str] = typer.Option(
        [], "--extension", metavar="SOURCE", help="Update this recorded package only (repeatable)."
    ),
    force: bool = typer.Option(False, "--force", help="Reinstall pi even if it is the newest (implies --self)."),
) -> None:
    """Update recorded plugin packages (local folders are rebuilt), pi itself, or both.

    \b
      pi update                  every recorded package (pi 1.6.0: pi only)
      pi update --extensions     every recorded package
      pi update SPEC             one recorded package (also: --extension SPEC)
      pi update --self           pi itself (also: pi update self, pi update pi)
      pi update --all            pi itself, then every recorded package
      pi update --force          reinstall pi itself even if it is the newest
      pi update --models         refresh the plugins' dynamic model catalogues

    With PI_OFFLINE=1 nothing is downloaded: the updates are skipped (said in one line);
    --models, an explicit refresh, still asks the providers (as pi 1.6.0).
    """
    targets = [*(specs or []), *extension]
    wants_self = self_ or everything or force or any(t in SELF_TARGETS for t in targets)
    targets = [t for t in targets if t not in SELF_TARGETS]
    wants_packages = extensions or everything or bool(targets) or not (wants_self or models)
    status = 0
    if models:
        from .update_models import update_models

        status = max(status, update_models())
    if wants_self:
        status = max(status, _update_pi(force))
    if wants_packages:
        status = max(status, _update_packages(targets, local))
    raise typer.Exit(status)


def _update_pi(force: bool) -> int:
    """Upgrade (``force``: reinstall) the ``pluggable-pi`` distribution in pi's own
    environment. A pi running from a source folder is left alone (one line says why)."""
    try:
        dist = metadata.distribution(PI_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        typer.echo(
            f"pi update: pi is not installed as the {PI_DISTRIBUTION} distribution here; cannot update it", err=True
        )
        return 1
    try:
        origin = json.loads(dist.read_text("direct_url.json") or "{}")
    except ValueError:
        origin = {}
    url = str(origin.get("url", ""))
    if url.startswith("file:") and ("dir_info" in origin or "vcs_info" in origin):
        folder = url.removeprefix("file://")
        typer.echo(
            f"pi update: this pi was installed from the source folder {folder}: update that folder "
            "(git pull) and reinstall it from there; pi update --self upgrades a pi installed from the package index",
            err=True,
        )
        return 1
    if _offline():
        typer.echo("pi update: cannot update pi in offline mode (PI_OFFLINE=1)", err=True)
        return 1
    try:
        installer = find_installer()
    except NoInstaller as exc:
        typer.echo(f"pi update: {exc}", err=True)
        return 1
    old = dist.version
    args = ["--upgrade", PI_DISTRIBUTION]
    if force:
        args = (
            [*args, "--reinstall-package", PI_DISTRIBUTION] if installer.kind == "uv" else [*args, "--force-reinstall"]
        )
    typer.echo(f"Updating pi ({PI_DISTRIBUTION} {old}) in {sys.executable} with {installer.describe()} ...")
    result = _run("install", args)
    if result.returncode != 0:
        typer.echo(f"pi update: {_explain(result, 'updating pi failed')}", err=True)
        return 1
    _refresh()
    new = installed().get(normalize(PI_DISTRIBUTION), old)
    if new == old:
        typer.echo(f"pi {new} ({'reinstalled' if force else 'already the newest'})")
    else:
        typer.echo(f"pi {old} -> {new}")
    return 0


def _update_packages(specs: list[str], local: bool) -> int:
    """Upgrade recorded plugin packages (all, or those named) and show their versions."""
    path = settings_path(local)
    entries = recorded(_read(path))
    chosen = [e for e in entries if not specs or e.source in specs or e.distribution in specs]
    if not chosen:
        if specs:
            typer.echo(f"pi update: not recorded in {path}: {', '.join(specs)}", err=True)
            return 1
        typer.echo(f"Nothing to update: no packages recorded in {path}")
        return 0
    if _offline():
        typer.echo("Skipped package updates (offline mode: PI_OFFLINE=1)")
        return 0
    try:
        installer = find_installer()
    except NoInstaller as exc:
        _fail("update", str(exc))
    parsed = [(entry, parse_spec(entry.source)) for entry in chosen]
    before = installed()
    args = ["--upgrade"]
    for entry, spec in parsed:
        name = entry.distribution or spec.name
        if spec.path is not None and name and installer.kind == "uv":
            args += ["--reinstall-package", name]
        args += ["-e", spec.text] if spec.editable else [spec.text]
    typer.echo(f"Updating in {sys.executable} with {installer.describe()} ...")
    result = _run("install", args)
    if result.returncode != 0:
        _fail("update", _explain(result, "update failed"))
    _refresh()
    have = installed()
    for entry, spec in parsed:
        name = entry.distribution or _distribution(spec, set(), None)
        if name is None:
            typer.echo(f"{entry.source}: updated (pi cannot tell which distribution it installed)")
            continue
        old, new = before.get(normalize(name)), have.get(normalize(name))
        if new is None:
            typer.echo(f"{entry.source}: {name} is not installed after the update", err=True)
        elif old is None:
            typer.echo(f"{entry.source}: {name} {new} (installed)")
        elif old == new:
            typer.echo(f"{entry.source}: {name} {new} (already the newest)")
        else:
            typer.echo(f"{entry.source}: {name} {old} -> {new}")
    return 0


class _ListRow(TypedDict):
    """One row of ``pi list`` (also its ``--json`` record)."""

    scope: str
    """``user`` / ``project``: recorded in that settings file; ``environment``:
    installed in pi's environment without a record in either."""
    source: str | None
    distribution: str | None
    version: str | None
    installed: bool
    extensions: list[str]


def _plugin_distributions() -> dict[str, tuple[str, str]]:
    """Installed distributions with ``pi.extensions`` entry points: normalised name ->
    (name, version)."""
    out: dict[str, tuple[str, str]] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        if dist is not None and dist.metadata["Name"]:
            out.setdefault(normalize(dist.metadata["Name"]), (dist.metadata["Name"], dist.version))
    return out


@packages_app.command("list")
def list_command(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """What this agent folder (and the project) recorded, and what pi's environment has.

    A record is what 'pi install' wrote to the settings key "packages": which
    packages this setup wants. pi loads what is installed in its environment, recorded
    or not ('pi install', 'pip install' and 'uv sync' all put plugins there), so the
    list shows both: recorded packages with their installed version (or MISSING and
    the command that installs them), then installed plugins nobody recorded.
    """
    have = installed()
    rows: list[_ListRow] = []
    paths: dict[str, Path] = {}
    for scope, local in (("user", False), ("project", True)):
        path = settings_path(local)
        paths[scope] = path
        try:  # listing changes nothing: a broken file is named and the other one still listed
            data = read_settings_file(path)
        except SettingsError as exc:
            typer.echo(f"warning: {exc}", err=True)
            continue
        for entry in recorded(data):
            distribution = entry.distribution or _distribution(parse_spec(entry.source), set(), None)
            version = have.get(normalize(distribution)) if distribution else None
            rows.append(
                {
                    "scope": scope,
                    "source": entry.source,
                    "distribution": distribution,
                    "version": version,
                    "installed": version is not None,
                    "extensions": extensions_of(distribution) if distribution and version else [],
                }
            )
    seen = {normalize(r["distribution"]) for r in rows if r["distribution"]}
    for key, (name, version) in sorted(_plugin_distributions().items()):
        if key not in seen:
            rows.append(
                {
                    "scope": "environment",
                    "source": None,
                    "distribution": name,
                    "version": version,
                    "installed": True,
                    "extensions": extensions_of(name),
                }
            )
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        raise typer.Exit(0)
    for scope, title in (
        ("user", f"Recorded in {paths['user']} (this agent folder)"),
        ("project", f"Recorded in {paths['project']} (this project)"),
    ):
        chosen = [r for r in rows if r["scope"] == scope]
        if not chosen:
            continue
        typer.echo(f"{title}:")
        for row in chosen:
            if row["version"]:
                state = row["version"]
            else:
                state = "MISSING, install it with: " + _install_command(row["source"] or "", scope == "project")
            exts = f"  extensions: {', '.join(row['extensions'])}" if row["extensions"] else ""
            name = f"{row['distribution']} " if row["distribution"] and row["distribution"] != row["source"] else ""
            typer.echo(f"  {row['source']}  {name}{state}{exts}")
    if not any(r["scope"] != "environment" for r in rows):
        typer.echo(
            f"No packages recorded in {paths['user']} or {paths['project']}. "
            "Install one with: pi install NAME|PATH|git+URL"
        )
    extra = [r for r in rows if r["scope"] == "environment"]
    if extra:
        typer.echo(
            f"Installed in pi's environment ({sys.executable}) without a record here "
            "(pip, uv or another agent folder put them there; pi loads them all the same):"
        )
        for row in extra:
            typer.echo(f"  {row['distribution']} {row['version']}  extensions: {', '.join(row['extensions'])}")
    raise typer.Exit(0)


def _install_command(source: str, local: bool) -> str:
    words = ["pi", "install", *(["-l"] if local else [])]
    if source.startswith("-e "):
        words += ["-e", shlex.quote(source[3:])]
    else:
        words.append(shlex.quote(source))
    return " ".join(words)
