"""Every distribution name a doc or a message gives is one this workspace builds.

The project's distributions are the ``pluggable-pi`` family (``pi-core``, ``pi-agent``,
``pi-coding-agent`` and a dozen ``pi-*`` ports of pi belong to other projects on PyPI).
A user who copies ``pip install X`` or ``pi install X`` from a doc, a ``--help`` text or an
error message must get this project's package, never someone else's: these tests read
every tracked text file and fail on

* a name of the working names the workspace used before (``pi-core``, ``pi-mcp``, …);
* a ``pluggable-pi…`` name that no ``pyproject.toml`` of the workspace declares;
* an install command (``pip install``, ``pi install``, ``uv tool install``, ``pipx
  install``, ``uvx --from``, ``--with``) whose requirement is neither a workspace
  distribution nor a known third-party tool.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]

OLD_NAMES = re.compile(
    r"(?<![\w./@-])pi-(core|hookspecs|mcp|codemode|tool-search|toolindex|sandbox|otel|acp|bedrock|vertex|policy"
    r"|llama|fleet)(?![\w-])"
)
"""The working names of the workspace's distributions before the release names (and of
the plugins DESIGN.md plans): nobody's package, or somebody else's."""

FAMILY = re.compile(r"(?<![\w./@-])pluggable-pi(?:-[a-z0-9]+)*(?![\w-])")

EXAMPLE_PLUGINS = {"pluggable-pi-hello", "pluggable-pi-shell-guard", "pluggable-pi-foo", "pluggable-pi-audit"}
"""Plugins the docs make from the template (``cookiecutter-extension``) or name as a
third-party package in an example: a plugin author's, not this workspace's."""

THIRD_PARTY = {
    "cookiecutter",
    "pytest",
    "pytest-asyncio",
    "uv",
    "pipx",
    "twine",
    "build",
    "mcp",
    "ruff",
    "mypy",
    "acme-pi-policy",
    "tools-mcp",
    "google-auth",
    "botocore",
    "opentelemetry-sdk",
}
"""Requirements of install commands in the docs that are not the workspace's."""

INSTALL = re.compile(
    r"\b(?:pip3?\s+install|uv\s+pip\s+install|uv\s+tool\s+install|pipx\s+install|pipx\s+inject\s+\S+"
    r"|pi\s+install|uvx\s+--from|--with)\s+(?P<args>[^`#\n)]*)"
)
OPTIONS_WITH_VALUE = {
    "--find-links",
    "-f",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--python",
    "-p",
    "--pip-args",
    "--target",
    "--prefix",
    "--spec",
    "-c",
    "--constraint",
    "-r",
    "--requirement",
}


def workspace_versions() -> dict[str, str]:
    """Each distribution of the workspace (normalised name) and its version (the
    ``__version__`` its pyproject's ``[tool.hatch.version]`` names, or a literal)."""
    versions = {}
    for path in tracked("pyproject.toml", "*/pyproject.toml", "*/*/pyproject.toml"):
        if "{{" in str(path):
            continue  # the cookiecutter template's own project
        data = tomllib.loads(path.read_text())
        project = data.get("project", {})
        if "name" not in project:
            continue
        version = project.get("version")
        if version is None:
            source = path.parent / data["tool"]["hatch"]["version"]["path"]
            found = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", source.read_text(), re.M)
            assert found, f"{source}: no __version__"
            version = found.group(1)
        versions[canonicalize_name(project["name"])] = version
    return versions


def workspace_distributions() -> set[str]:
    return set(workspace_versions())


WHEEL_FILE = re.compile(r"\b(pluggable_pi[a-z0-9_]*)-([0-9][^-/\s`]*)-py3-none-any\.whl")


def tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z", "--", *patterns], cwd=REPO, capture_output=True, check=True)
    return [REPO / name for name in out.stdout.decode().split("\0") if name]


def text_files() -> list[Path]:
    files = tracked("*.md", "*.py", "*.toml", "*.json", "*.txt", "*.cfg", "*.sh", ".ci/*", "*.html", "*.j2")
    this = Path(__file__).resolve()
    return [p for p in files if p.resolve() != this and p.name != "uv.lock" and p.is_file()]


def lines_of(path: Path) -> list[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    return list(enumerate(text.splitlines(), start=1))


def install_requirements(args: str) -> list[str]:
    """The requirement arguments of one install command's argument text (up to the end
    of the command: ``&&``, ``|``, ``;``)."""
    found: list[str] = []
    skip = False
    for raw in args.split():
        if raw in ("&&", "||", "|", ";") or raw.startswith("#"):
            break
        word = raw.strip("'\"`,;")
        if skip or not word or word == "\\":
            skip = False
            continue
        if word.startswith("-"):
            skip = "=" not in word and word in OPTIONS_WITH_VALUE
            continue
        if (
            "/" in word
            or word.startswith((".", "~", "$", "{", "<"))
            or word.endswith((".whl", ".tar.gz", ".zip"))
            or "|" in word
            or not word[:1].isalpha()
            or word.isupper()
        ):
            continue  # a path, a URL, a wheel file, a variable or a placeholder such as NAME|PATH
        found.append(word.split("@")[0].strip())
    return found


def looks_like_ours(name: str) -> bool:
    """A requirement a reader would take for one of pi's packages."""
    return name.startswith(("pi-", "pi_", "pluggable")) or "-pi-" in name or name.endswith("-pi")


def test_no_doc_or_message_uses_a_name_the_workspace_gave_up() -> None:
    hits = [
        f"{path.relative_to(REPO)}:{number}: {match.group(0)}"
        for path in text_files()
        for number, line in lines_of(path)
        for match in OLD_NAMES.finditer(line)
    ]
    assert hits == [], "names that belong to nobody or to another project:\n" + "\n".join(hits)


def test_every_pluggable_pi_name_is_a_distribution_of_the_workspace() -> None:
    built = workspace_distributions()
    allowed = built | EXAMPLE_PLUGINS
    hits = [
        f"{path.relative_to(REPO)}:{number}: {match.group(0)}"
        for path in text_files()
        for number, line in lines_of(path)
        for match in FAMILY.finditer(line)
        if canonicalize_name(match.group(0)) not in allowed and not line[match.end() :].startswith("*")
    ]
    assert hits == [], f"not built by this workspace ({', '.join(sorted(built))}):\n" + "\n".join(hits)


def test_every_install_command_names_a_workspace_distribution() -> None:
    allowed = workspace_distributions() | EXAMPLE_PLUGINS | {canonicalize_name(n) for n in THIRD_PARTY}
    hits = []
    for path in text_files():
        if "tests" in path.relative_to(REPO).parts:
            continue  # a test's made-up packages (pi-absent, pi-not-installed-anywhere) are nobody's
        for number, line in lines_of(path):
            for match in INSTALL.finditer(line):
                for argument in install_requirements(match.group("args")):
                    try:
                        name = canonicalize_name(Requirement(argument).name)
                    except InvalidRequirement:
                        continue  # prose after the words ("pi install: name at least one package")
                    if looks_like_ours(name) and name not in allowed:
                        hits.append(f"{path.relative_to(REPO)}:{number}: {match.group(0).strip()}")
    assert hits == [], "install commands naming a package this workspace does not build:\n" + "\n".join(hits)


def test_a_wheel_file_named_in_a_doc_is_one_the_release_builds() -> None:
    """``dist/pluggable_pi_sandbox-1.0.0-py3-none-any.whl`` in a README is a file
    ``python3 tasks.py release`` makes: the distribution exists and the version is its own."""
    versions = workspace_versions()
    hits = []
    for path in text_files():
        if "tests" in path.relative_to(REPO).parts:
            continue
        for number, line in lines_of(path):
            for match in WHEEL_FILE.finditer(line):
                name, version = canonicalize_name(match.group(1)), match.group(2)
                if name in EXAMPLE_PLUGINS:
                    continue
                if versions.get(name) != version:
                    hits.append(f"{path.relative_to(REPO)}:{number}: {match.group(0)} (built: {versions.get(name)})")
    assert hits == [], "wheel files the release does not build:\n" + "\n".join(hits)


def test_the_workspace_builds_the_family_it_documents() -> None:
    built = workspace_distributions()
    assert "pluggable-pi" in built and "pluggable-pi-hookspecs" in built
    assert all(name.startswith("pluggable-pi") for name in built), built
    assert not built & {"pi-core", "pi-agent", "pi-coding-agent"}


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ('"pluggable-pi[standard]" --find-links dist', ["pluggable-pi[standard]"]),
        ("-e ./pluggable-pi-hello", []),
        ("pluggable-pi-sandbox          # or", ["pluggable-pi-sandbox"]),
        ("git+https://example.org/x.git@v1", []),
        ("NAME|PATH|git+URL", []),
        ("pi-foo>=1.2 ./pi-foo", ["pi-foo>=1.2"]),
        ("--python /usr/bin/python3 pluggable-pi-otel && pi list", ["pluggable-pi-otel"]),
    ],
)
def test_install_requirements_reads_an_install_command(args: str, expected: list[str]) -> None:
    assert install_requirements(args) == expected
