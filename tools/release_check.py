"""Check the wheels and sdists ``python3 tasks.py release`` built, before anyone publishes them.

    python tools/release_check.py DIR [DIR...] [--strict]

Every ``*.whl`` and ``*.tar.gz`` in the folders is read (not installed) and held to the
rules of the workspace's release:

* the long description renders on PyPI (``twine check --strict``), and its links resolve
  there (a relative link such as ``docs/mcp.md`` does not: a warning);
* the licence: ``License-Expression`` and the ``License-File`` it names, inside the
  archive and the same text as the repository's ``LICENSE``; no ``License ::``
  classifier next to the expression (PEP 639 deprecates them; indexes refuse both);
* classifiers: development status, operating system, the Python versions (each one
  allowed by ``Requires-Python``, the oldest allowed one listed), ``Typing :: Typed``
  exactly when the package ships ``py.typed``; authors, keywords, a summary;
* every requirement on a distribution of the workspace carries the semantic-versioning
  pin: ``>=X.0,<X+1`` of the required distribution's major version, except pluggable-pi's
  requirement on the plugin contract, which is ``>=X.Y,<X.Y+1``: the minor it implements;
* versions: the file name, the metadata, the package's ``__version__`` and every other
  distribution of the release agree;
* a wheel holds ``py.typed`` where the package in the repository has one;
* project URLs: the project has no public home yet, so their absence is a warning.

One line per problem, ``LEVEL: FILE: FIELD: what``; the exit status is 1 when there is an
error. ``--strict`` (for a real publish) makes every warning an error.
"""

from __future__ import annotations

import argparse
import email.message
import email.parser
import fnmatch
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]

CORE = "pluggable-pi"
"""The distribution of the core: ``pi`` itself."""
CONTRACT = "pluggable-pi-hookspecs"
"""The plugin contract, which every plugin and the core depend on."""
EXTRA_PROJECTS = ("examples/pluggable-pi-policy",)
"""Projects released with the workspace that are not members of it."""
PYTHONS = ("3.11", "3.12", "3.13", "3.14", "3.15")
"""The Python versions a ``Programming Language :: Python :: 3.x`` classifier may name."""

Level = Literal["error", "warning"]


@dataclass(frozen=True, order=True)
class Problem:
    file: str
    field: str
    message: str
    level: Level = "error"

    def format(self) -> str:
        return f"{self.level}: {self.file}: {self.field}: {self.message}"


@dataclass
class Project:
    """A distribution the repository builds, read from its ``pyproject.toml``."""

    name: str
    """Canonical name."""
    folder: Path
    version: str | None
    """``__version__`` of the file ``[tool.hatch.version] path`` names."""
    packages: list[str] = field(default_factory=list)
    typed: list[str] = field(default_factory=list)
    """The packages that have a ``py.typed``."""
    member: bool = True
    """A member of the uv workspace (built by ``uv build --all-packages``)."""


@dataclass
class Built:
    """One built distribution file and what it holds."""

    path: Path
    kind: Literal["wheel", "sdist"]
    metadata: email.message.Message
    members: dict[str, bytes | None]
    """Archive member names (an sdist's without its top folder); the licence files'
    contents are read too."""
    dist_info: str | None = None
    """A wheel's ``*.dist-info`` folder."""

    @property
    def name(self) -> str:
        return canonicalize_name(str(self.metadata.get("Name", "")))

    @property
    def version(self) -> str:
        return str(self.metadata.get("Version", ""))


# --------------------------------------------------------------------------- the workspace


_VERSION_LINE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']""", re.MULTILINE)


def _project(folder: Path, *, member: bool) -> Project | None:
    pyproject = folder / "pyproject.toml"
    if not pyproject.is_file():
        return None
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    project = data.get("project", {})
    if "name" not in project:
        return None
    hatch = data.get("tool", {}).get("hatch", {})
    version: str | None = project.get("version")
    version_path = hatch.get("version", {}).get("path")
    if version_path:
        match = _VERSION_LINE.search((folder / version_path).read_text(encoding="utf-8"))
        version = match.group(1) if match else None
    packages = list(hatch.get("build", {}).get("targets", {}).get("wheel", {}).get("packages", []))
    return Project(
        name=canonicalize_name(project["name"]),
        folder=folder,
        version=version,
        packages=packages,
        typed=[p for p in packages if (folder / p / "py.typed").is_file()],
        member=member,
    )


def workspace_projects(root: Path = ROOT, extra: Sequence[str] = EXTRA_PROJECTS) -> dict[str, Project]:
    """The root project, the members of its uv workspace and ``extra`` folders."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    folders: list[tuple[Path, bool]] = [(root, True)]
    for pattern in data.get("tool", {}).get("uv", {}).get("workspace", {}).get("members", []):
        folders += [(path, True) for path in sorted(root.glob(pattern)) if path.is_dir()]
    folders += [(root / folder, False) for folder in extra]
    projects: dict[str, Project] = {}
    for folder, member in folders:
        project = _project(folder, member=member)
        if project is not None:
            projects[project.name] = project
    return projects


def expected_pin(requirer: str, required: str, version: str) -> SpecifierSet:
    """The semantic-versioning pin of ``requirer`` on ``required`` (at ``version``):
    its major version, or for the core on the contract the minor the core implements."""
    release = (*Version(version).release, 0, 0)
    major, minor = release[0], release[1]
    if requirer == CORE and required == CONTRACT:
        return SpecifierSet(f">={major}.{minor},<{major}.{minor + 1}")
    return SpecifierSet(f">={major}.0,<{major + 1}")


# --------------------------------------------------------------------------- reading archives

_WHEEL = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)(-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl$")
_SDIST = re.compile(r"^(?P<name>.+)-(?P<version>[^-]+)\.tar\.gz$")


def file_version(path: Path) -> str | None:
    match = _WHEEL.match(path.name) or _SDIST.match(path.name)
    return match.group("version") if match else None


def read_built(path: Path) -> Built:
    """A wheel's ``*.dist-info/METADATA`` or an sdist's ``PKG-INFO``, and its members."""
    members: dict[str, bytes | None] = {}
    raw: bytes | None = None
    if path.name.endswith(".whl"):
        with zipfile.ZipFile(path) as archive:
            for name in archive.namelist():
                wanted = "/licenses/" in name or re.fullmatch(r"[^/]+\.dist-info/METADATA", name)
                members[name] = archive.read(name) if wanted else None
        dist_info = next((k.rsplit("/", 1)[0] for k in members if k.endswith(".dist-info/METADATA")), None)
        raw = members.get(f"{dist_info}/METADATA") if dist_info else None
        kind: Literal["wheel", "sdist"] = "wheel"
    else:
        with tarfile.open(path, "r:gz") as archive:
            for info in archive.getmembers():
                if not info.isfile():
                    continue
                rest = info.name.partition("/")[2]
                read = rest == "PKG-INFO" or ("/" not in rest and fnmatch.fnmatch(rest, "LICEN[CS]E*"))
                handle = archive.extractfile(info) if read else None
                members[rest] = handle.read() if handle is not None else None
        raw = members.get("PKG-INFO")
        kind = "sdist"
        dist_info = None
    metadata = email.parser.BytesParser().parsebytes(raw or b"")
    return Built(path=path, kind=kind, metadata=metadata, members=members, dist_info=dist_info)


def _values(metadata: email.message.Message, key: str) -> list[str]:
    return [str(v) for v in metadata.get_all(key) or []]


# --------------------------------------------------------------------------- the checks


_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)|^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)


def relative_links(description: str) -> list[str]:
    """Markdown links of a long description that are not absolute: PyPI shows them
    relative to its own pages, where they do not exist."""
    found = []
    for match in _LINK.finditer(description):
        target = match.group(1) or match.group(2) or ""
        if not re.match(r"^([a-z][a-z0-9+.-]*:|#)", target, re.IGNORECASE):
            found.append(target)
    return list(dict.fromkeys(found))


def _python_versions(requires_python: str) -> list[str]:
    spec = SpecifierSet(requires_python)
    return [v for v in PYTHONS if spec.contains(v)]


def check_metadata(built: Built, project: Project | None, license_text: bytes | None) -> list[Problem]:
    """The rules of one distribution file's metadata (all but rendering and versions
    across the release)."""
    out: list[Problem] = []
    meta = built.metadata
    where = built.path.name

    def problem(field: str, message: str, level: Level = "error") -> None:
        out.append(Problem(where, field, message, level))

    if not meta.get("Name"):
        problem("Name", "missing: not a distribution of a known layout")
        return out
    for key in ("Summary", "Requires-Python"):
        if not meta.get(key):
            problem(key, "missing")
    if not (meta.get("Author") or meta.get("Author-email")):
        problem("Author", "missing: name the authors (project.authors)")
    if not meta.get("Keywords"):
        problem("Keywords", "missing (project.keywords)")
    if not meta.get("Description-Content-Type"):
        problem("Description-Content-Type", "missing: PyPI would render the readme as reStructuredText")
    description = str(meta.get_payload() or meta.get("Description") or "")
    if not description.strip():
        problem("Description", "missing: no readme (project.readme)")
    else:
        links = relative_links(description)
        if links:
            shown = ", ".join(links[:4]) + (f" and {len(links) - 4} more" if len(links) > 4 else "")
            problem("Description", f"{len(links)} relative link(s) will not resolve on PyPI: {shown}", "warning")

    # the licence
    expression = meta.get("License-Expression")
    if not expression:
        problem("License-Expression", 'missing (project.license = "MIT")')
    classifiers = _values(meta, "Classifier")
    licence_classifiers = [c for c in classifiers if c.startswith("License ::")]
    if expression and licence_classifiers:
        problem(
            "Classifier",
            f"{licence_classifiers[0]!r} next to License-Expression: PEP 639 deprecates "
            "licence classifiers and package indexes refuse both",
        )
    license_files = _values(meta, "License-File")
    if not license_files:
        problem("License-File", "missing: the licence text is not in the distribution (project.license-files)")
    for name in license_files:
        member = f"{built.dist_info}/licenses/{name}" if built.kind == "wheel" else name
        inside = built.members.get(member)
        if inside is None:
            problem("License-File", f"{name} is named but {member} is not in the archive")
        elif license_text is not None and inside.strip() != license_text.strip():
            problem("License-File", f"{name} differs from the repository's LICENSE")

    # classifiers
    for prefix, what in (
        ("Development Status :: ", "the development status"),
        ("Operating System :: ", "the operating systems"),
        ("Intended Audience :: ", "the audience"),
    ):
        if not any(c.startswith(prefix) for c in classifiers):
            problem("Classifier", f"none gives {what} ({prefix.strip(' :')} :: ...)")
    listed = [
        c.rsplit(" :: ", 1)[1] for c in classifiers if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    requires_python = str(meta.get("Requires-Python") or "")
    if not listed:
        problem("Classifier", "no Python version (Programming Language :: Python :: 3.x)")
    elif requires_python:
        allowed = _python_versions(requires_python)
        for version in listed:
            if version not in allowed:
                problem("Classifier", f"Python {version} is listed but Requires-Python is {requires_python}")
        if allowed and allowed[0] not in listed:
            problem(
                "Classifier", f"Python {allowed[0]} (the oldest Requires-Python {requires_python} allows) is not listed"
            )
    typed_classifier = "Typing :: Typed" in classifiers
    if project is not None:
        if project.typed and not typed_classifier:
            problem("Classifier", f"'Typing :: Typed' missing: {', '.join(project.typed)} has a py.typed")
        if typed_classifier and not project.typed:
            problem("Classifier", "'Typing :: Typed' but no package of the project has a py.typed")
        if built.kind == "wheel":
            for package in project.packages:
                if not any(name.startswith(f"{package}/") for name in built.members):
                    problem("file", f"the package {package} is not in the wheel")
            for package in project.typed:
                if f"{package}/py.typed" not in built.members:
                    problem("py.typed", f"{package}/py.typed is not in the wheel")

    # project URLs: the project has no public home yet
    if not _values(meta, "Project-URL") and not meta.get("Home-page"):
        problem(
            "Project-URL",
            "none: a published distribution should link its home, source and issues (project.urls)",
            "warning",
        )
    return out


def check_pins(
    requirer: str, requirements: Iterable[str], projects: dict[str, Project], where: str, field: str = "Requires-Dist"
) -> list[Problem]:
    """Every requirement on a distribution of the workspace carries the semver pin."""
    out = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement as exc:
            out.append(Problem(where, field, f"{text!r} is not a valid requirement: {exc}"))
            continue
        required = canonicalize_name(requirement.name)
        target = projects.get(required)
        if target is None or target.version is None:
            continue
        want = expected_pin(canonicalize_name(requirer), required, target.version)
        if requirement.specifier != want:
            got = str(requirement.specifier) or "no version"
            out.append(
                Problem(
                    where, field, f"{requirement.name}: {got}; want {want} ({requirement.name} is {target.version})"
                )
            )
    return out


def check_versions(built: Sequence[Built], projects: dict[str, Project]) -> list[Problem]:
    """The file name, the metadata and ``__version__`` agree; the release has one version."""
    out = []
    core = projects.get(CORE)
    release = core.version if core is not None else None
    for item in built:
        where = item.path.name
        named = file_version(item.path)
        if named is not None and item.version and Version(named) != Version(item.version):
            out.append(Problem(where, "Version", f"{item.version}, but the file name says {named}"))
        project = projects.get(item.name)
        if project is not None and project.version is not None and item.version != project.version:
            out.append(
                Problem(
                    where,
                    "Version",
                    f"{item.version}, but {project.folder.name}'s __version__ is {project.version} (rebuild)",
                )
            )
        if release is not None and item.version and item.version != release:
            out.append(Problem(where, "Version", f"{item.version}, but {CORE} is {release}: one release, one version"))
    return out


def check_completeness(built: Sequence[Built], projects: dict[str, Project]) -> list[Problem]:
    """Each member of the workspace has its wheel and its sdist."""
    have = {(item.name, item.kind) for item in built}
    out = []
    for name, project in sorted(projects.items()):
        if not project.member:
            continue
        for kind in ("wheel", "sdist"):
            if (name, kind) not in have:
                out.append(Problem(name, "file", f"no {kind} of {name} was built"))
    return out


def _twine(paths: Sequence[Path]) -> list[Problem]:
    """``twine check --strict``, one problem per file that does not pass."""
    if not paths:
        return []
    # one line per file, however long its path (rich wraps at 80 columns, and always on a dumb terminal)
    env = {**os.environ, "COLUMNS": "10000", "NO_COLOR": "1"}
    env.pop("TERM", None)
    cmd = [sys.executable, "-m", "twine", "--no-color", "check", "--strict", *map(str, paths)]
    try:
        result = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [Problem("twine", "long_description", f"twine check did not run: {exc}")]
    output = result.stdout + result.stderr
    if "No module named twine" in output:
        return [Problem("twine", "long_description", "twine is not installed (the dev group has it: uv sync)")]
    out: list[Problem] = []
    current: str | None = None
    status = ""
    details: dict[str, list[str]] = {}
    statuses: dict[str, str] = {}
    for line in output.splitlines():
        match = re.match(r"^Checking (.+?): (.*)$", line)
        if match:
            current, status = match.group(1), match.group(2).strip()
            statuses[current] = status
            details[current] = []
        elif current is not None and line.strip():
            details[current].append(re.sub(r"^(WARNING|ERROR)\s+", "", line.strip()))
    for path in paths:
        status = statuses.get(str(path), "")
        if status == "PASSED":
            continue
        why = "; ".join(details.get(str(path), [])) or status or output.strip()[-300:]
        out.append(Problem(path.name, "long_description", f"twine check --strict: {why}"))
    return out


def check(
    folders: Sequence[Path], *, strict: bool = False, root: Path = ROOT, run_twine: bool = True, complete: bool = True
) -> list[Problem]:
    """Every problem of the distributions in ``folders``; with ``strict`` warnings are
    errors; ``complete``: every member of the workspace has a wheel and an sdist there."""
    projects = workspace_projects(root)
    license_path = root / "LICENSE"
    license_text = license_path.read_bytes() if license_path.is_file() else None
    problems: list[Problem] = []
    if license_text is None:
        problems.append(Problem("LICENSE", "file", f"{license_path} is missing"))
    paths = sorted({p for folder in folders for p in [*folder.glob("*.whl"), *folder.glob("*.tar.gz")]})
    if not paths:
        return [Problem(", ".join(map(str, folders)), "file", "no wheel or sdist to check")]
    built = []
    for path in paths:
        try:
            built.append(read_built(path))
        except (OSError, zipfile.BadZipFile, tarfile.TarError) as exc:
            problems.append(Problem(path.name, "file", f"cannot be read: {exc}"))
    for item in built:
        project = projects.get(item.name)
        if project is None:
            problems.append(
                Problem(item.path.name, "Name", f"{item.metadata.get('Name')!r} is not a project of this repository")
            )
        problems += check_metadata(item, project, license_text)
        problems += check_pins(item.name, _values(item.metadata, "Requires-Dist"), projects, item.path.name)
    problems += check_versions(built, projects)
    if complete:
        problems += check_completeness(built, projects)
    if run_twine:
        problems += _twine([item.path for item in built])
    if strict:
        problems = [Problem(p.file, p.field, p.message, "error") for p in problems]
    return merge_pairs(problems)


def merge_pairs(problems: Iterable[Problem]) -> list[Problem]:
    """One line for a problem that the wheel and the sdist of a distribution share:
    ``name-1.0-py3-none-any.whl and .tar.gz``."""
    by_key: dict[tuple[str, Level, str, str], list[str]] = {}
    for problem in problems:
        match = _WHEEL.match(problem.file) or _SDIST.match(problem.file)
        stem = f"{match.group('name')}-{match.group('version')}" if match else problem.file
        by_key.setdefault((stem, problem.level, problem.field, problem.message), []).append(problem.file)
    out = []
    for (stem, level, field_name, message), files in by_key.items():
        files = sorted(set(files), key=lambda f: (not f.endswith(".whl"), f))
        if len(files) == 2 and files[0].endswith(".whl") and files[1].endswith(".tar.gz"):
            shown = f"{files[0]} and .tar.gz"
        else:
            shown = ", ".join(files)
        out.append((stem, Problem(shown, field_name, message, level)))
    # by distribution; its errors first
    out.sort(key=lambda item: (item[0], item[1].level != "error", item[1].field, item[1].message, item[1].file))
    return [problem for _stem, problem in out]


def check_sources(root: Path = ROOT) -> list[Problem]:
    """The pins and versions as the pyprojects declare them, without building anything."""
    problems = []
    projects = workspace_projects(root)
    versions = {p.version for p in projects.values()}
    for name, project in sorted(projects.items()):
        data = tomllib.loads((project.folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        where = str((project.folder / "pyproject.toml").relative_to(root))
        problems += check_pins(name, data.get("dependencies", []), projects, where, "dependencies")
        for extra, requirements in data.get("optional-dependencies", {}).items():
            problems += check_pins(name, requirements, projects, where, f"optional-dependencies.{extra}")
        if project.version is None:
            problems.append(Problem(where, "version", "no __version__ found ([tool.hatch.version] path)"))
        elif len(versions) > 1:
            problems.append(
                Problem(
                    where,
                    "version",
                    f"{project.version}; the projects have {', '.join(sorted(str(v) for v in versions))}",
                )
            )
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("folders", nargs="+", type=Path, help="folders holding the built wheels and sdists")
    parser.add_argument("--strict", action="store_true", help="every warning is an error (for a real publish)")
    args = parser.parse_args(argv)
    problems = check(args.folders, strict=args.strict)
    for problem in problems:
        print(problem.format())
    count = sum(len([*f.glob("*.whl"), *f.glob("*.tar.gz")]) for f in args.folders)
    errors = sum(p.level == "error" for p in problems)
    warnings = len(problems) - errors
    print(f"{count} distribution files checked: {errors} error(s), {warnings} warning(s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
