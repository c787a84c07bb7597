"""``tools/release_check.py``: the checks ``python3 tasks.py release`` runs on the built
distributions, on small distributions written by hand in a small workspace; and the
workspace's own versions and pins, read from its sources (no build)."""

from __future__ import annotations

import textwrap
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from release_support import LICENSE, REPO, release_check, sdist, tasks, wheel

import pi_core
import pi_hookspecs

rc = release_check()


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A workspace like pi's: the core, the contract and one plugin, at 1.0.0."""
    root = tmp_path / "repo"
    write(
        root / "pyproject.toml",
        """
        [project]
        name = "pluggable-pi"
        dynamic = ["version"]
        [tool.hatch.version]
        path = "pi_core/__init__.py"
        [tool.hatch.build.targets.wheel]
        packages = ["pi_core"]
        [tool.uv.workspace]
        members = ["hookspecs", "plugins/*"]
    """,
    )
    for folder, name, package in (
        ("", "pluggable-pi", "pi_core"),
        ("hookspecs", "pluggable-pi-hookspecs", "pi_hookspecs"),
        ("plugins/foo", "pluggable-pi-foo", "pi_foo"),
    ):
        base = root / folder
        if folder:
            write(
                base / "pyproject.toml",
                f"""
                [project]
                name = "{name}"
                dynamic = ["version"]
                [tool.hatch.version]
                path = "{package}/__init__.py"
                [tool.hatch.build.targets.wheel]
                packages = ["{package}"]
            """,
            )
        write(base / package / "__init__.py", '__version__ = "1.0.0"\n')
        write(base / package / "py.typed", "")
    write(root / "LICENSE", LICENSE)
    return root


CORE_REQUIRES = ["pluggable-pi-hookspecs<1.1,>=1.0", 'pluggable-pi-foo<2,>=1.0; extra == "standard"']
PLUGIN_REQUIRES = ["pluggable-pi-hookspecs<2,>=1.0", "pydantic>=2.7"]


def build(dist: Path, *, skip: tuple[str, ...] = (), **changes: dict[str, Any]) -> Path:
    """The wheel and sdist of each project; ``changes[name]``: what differs for that one
    (``packages``, ``version`` and the metadata options of ``release_support.metadata``)."""
    projects = {
        "pluggable-pi": {"packages": {"pi_core": ["__init__.py", "py.typed"]}, "requires": CORE_REQUIRES},
        "pluggable-pi-hookspecs": {"packages": {"pi_hookspecs": ["__init__.py", "py.typed"]}, "requires": []},
        "pluggable-pi-foo": {"packages": {"pi_foo": ["__init__.py", "py.typed"]}, "requires": PLUGIN_REQUIRES},
    }
    for name, options in projects.items():
        options = {**options, **changes.get(name.replace("-", "_"), {})}
        version = str(options.pop("version", "1.0.0"))
        packages = options.pop("packages")
        if f"{name}:wheel" not in skip:
            wheel(dist, name, version, packages=packages, **options)  # type: ignore[arg-type]
        if f"{name}:sdist" not in skip:
            sdist(dist, name, version, **options)  # type: ignore[arg-type]
    return dist


def lines(dist: Path, root: Path, **options: Any) -> list[str]:
    return [p.format() for p in rc.check([dist], root=root, run_twine=False, **options)]


URL_WARNINGS = [
    f"warning: {stem}-1.0.0-py3-none-any.whl and .tar.gz: Project-URL: none: a published distribution should link "
    "its home, source and issues (project.urls)"
    for stem in ("pluggable_pi", "pluggable_pi_foo", "pluggable_pi_hookspecs")
]


def test_a_good_release_has_only_the_missing_urls_and_strict_makes_them_errors(repo: Path, tmp_path: Path) -> None:
    dist = build(tmp_path / "dist")
    assert lines(dist, repo) == URL_WARNINGS
    assert lines(dist, repo, strict=True) == [line.replace("warning:", "error:", 1) for line in URL_WARNINGS]


def test_main_prints_one_line_per_problem_and_fails_only_on_errors(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    dist = build(tmp_path / "dist")
    monkeypatch.setattr(rc, "ROOT", repo)
    monkeypatch.setattr(
        rc,
        "check",
        lambda folders, strict=False, _real=rc.check: _real(folders, strict=strict, root=repo, run_twine=False),
    )
    assert rc.main([str(dist)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [*URL_WARNINGS, "6 distribution files checked: 0 error(s), 3 warning(s)"]
    assert rc.main([str(dist), "--strict"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == "6 distribution files checked: 3 error(s), 0 warning(s)"


def test_every_requirement_on_the_workspace_carries_the_semver_pin(repo: Path, tmp_path: Path) -> None:
    dist = build(
        tmp_path / "dist",
        pluggable_pi={"requires": ["pluggable-pi-hookspecs<2,>=1.0", 'pluggable-pi-foo; extra == "standard"']},
        pluggable_pi_foo={"requires": ["pluggable-pi-hookspecs", "pydantic"]},
    )
    problems = [line for line in lines(dist, repo) if "Requires-Dist" in line]
    assert problems == [
        "error: pluggable_pi-1.0.0-py3-none-any.whl and .tar.gz: Requires-Dist: pluggable-pi-foo: no version; "
        "want <2,>=1.0 (pluggable-pi-foo is 1.0.0)",
        "error: pluggable_pi-1.0.0-py3-none-any.whl and .tar.gz: Requires-Dist: pluggable-pi-hookspecs: <2,>=1.0; "
        "want <1.1,>=1.0 (pluggable-pi-hookspecs is 1.0.0)",
        "error: pluggable_pi_foo-1.0.0-py3-none-any.whl and .tar.gz: Requires-Dist: pluggable-pi-hookspecs: "
        "no version; want <2,>=1.0 (pluggable-pi-hookspecs is 1.0.0)",
    ]


def test_licence_classifiers_typing_and_py_typed(repo: Path, tmp_path: Path) -> None:
    dist = build(
        tmp_path / "dist",
        pluggable_pi_hookspecs={
            "license_text": None,
            "drop": ("License-Expression",),
            "classifiers": ["License :: OSI Approved :: MIT License", "Typing :: Typed"],
        },
        pluggable_pi_foo={
            "packages": {"pi_foo": ["__init__.py"]},
            "license_text": "another licence\n",
            "classifiers": [
                "Development Status :: 5 - Production/Stable",
                "Intended Audience :: Developers",
                "Operating System :: OS Independent",
                "Programming Language :: Python :: 3.10",
                "Programming Language :: Python :: 3.12",
            ],
        },
    )
    hookspecs = "pluggable_pi_hookspecs-1.0.0-py3-none-any.whl and .tar.gz"
    foo_wheel, foo = "pluggable_pi_foo-1.0.0-py3-none-any.whl", "pluggable_pi_foo-1.0.0-py3-none-any.whl and .tar.gz"
    assert sorted(line for line in lines(dist, repo) if "Project-URL" not in line) == sorted(
        [
            f"error: {foo}: Classifier: 'Typing :: Typed' missing: pi_foo has a py.typed",
            f"error: {foo}: Classifier: Python 3.10 is listed but Requires-Python is >=3.11",
            f"error: {foo}: Classifier: Python 3.11 (the oldest Requires-Python >=3.11 allows) is not listed",
            f"error: {foo}: License-File: LICENSE differs from the repository's LICENSE",
            f"error: {foo_wheel}: py.typed: pi_foo/py.typed is not in the wheel",
            f"error: {hookspecs}: Classifier: none gives the audience (Intended Audience :: ...)",
            f"error: {hookspecs}: Classifier: none gives the development status (Development Status :: ...)",
            f"error: {hookspecs}: Classifier: none gives the operating systems (Operating System :: ...)",
            f"error: {hookspecs}: Classifier: no Python version (Programming Language :: Python :: 3.x)",
            f'error: {hookspecs}: License-Expression: missing (project.license = "MIT")',
            "error: pluggable_pi_hookspecs-1.0.0-py3-none-any.whl: License-File: LICENSE is named but "
            "pluggable_pi_hookspecs-1.0.0.dist-info/licenses/LICENSE is not in the archive",
            "error: pluggable_pi_hookspecs-1.0.0.tar.gz: License-File: LICENSE is named but "
            "LICENSE is not in the archive",
        ]
    )


def test_a_licence_classifier_next_to_the_expression_is_refused(repo: Path, tmp_path: Path) -> None:
    classifiers = [
        "Development Status :: 5 - Production/Stable",
        "Intended Audience :: Developers",
        "License :: OSI Approved :: MIT License",
        "Operating System :: OS Independent",
        "Programming Language :: Python :: 3.11",
        "Typing :: Typed",
    ]
    dist = build(tmp_path / "dist", pluggable_pi_foo={"classifiers": classifiers})
    assert [line for line in lines(dist, repo) if "Project-URL" not in line] == [
        "error: pluggable_pi_foo-1.0.0-py3-none-any.whl and .tar.gz: Classifier: 'License :: OSI Approved :: MIT "
        "License' next to License-Expression: PEP 639 deprecates licence classifiers and package indexes refuse both"
    ]


def test_versions_agree_and_every_member_is_built(repo: Path, tmp_path: Path) -> None:
    dist = build(tmp_path / "dist", skip=("pluggable-pi-hookspecs:sdist",), pluggable_pi_foo={"version": "1.0.1"})
    assert [line for line in lines(dist, repo) if "Project-URL" not in line] == [
        "error: pluggable-pi-hookspecs: file: no sdist of pluggable-pi-hookspecs was built",
        "error: pluggable_pi_foo-1.0.1-py3-none-any.whl and .tar.gz: Version: 1.0.1, but foo's __version__ is 1.0.0 "
        "(rebuild)",
        "error: pluggable_pi_foo-1.0.1-py3-none-any.whl and .tar.gz: Version: 1.0.1, but pluggable-pi is 1.0.0: "
        "one release, one version",
    ]


def test_the_readme_must_exist_and_its_relative_links_are_a_warning(repo: Path, tmp_path: Path) -> None:
    dist = build(
        tmp_path / "dist",
        pluggable_pi={
            "description": "See [the docs](docs/x.md), [here](#usage), [pypi](https://pypi.org).\n\n[ref]: ../y.md\n"
        },
        pluggable_pi_foo={"description": "", "drop": ("Description-Content-Type", "Keywords", "Author")},
    )
    assert [line for line in lines(dist, repo) if "Project-URL" not in line] == [
        "warning: pluggable_pi-1.0.0-py3-none-any.whl and .tar.gz: Description: 2 relative link(s) will not resolve "
        "on PyPI: docs/x.md, ../y.md",
        "error: pluggable_pi_foo-1.0.0-py3-none-any.whl and .tar.gz: Author: missing: name the authors "
        "(project.authors)",
        "error: pluggable_pi_foo-1.0.0-py3-none-any.whl and .tar.gz: Description: missing: no readme (project.readme)",
        "error: pluggable_pi_foo-1.0.0-py3-none-any.whl and .tar.gz: Description-Content-Type: missing: PyPI would "
        "render the readme as reStructuredText",
        "error: pluggable_pi_foo-1.0.0-py3-none-any.whl and .tar.gz: Keywords: missing (project.keywords)",
    ]


def test_twine_check_strict_runs_on_every_file(repo: Path, tmp_path: Path) -> None:
    """A reStructuredText readme PyPI cannot render fails; markdown passes."""
    broken = "Title\n=====\n\n.. no-such-directive:: x\n"
    dist = build(
        tmp_path / "dist",
        pluggable_pi_foo={
            "description": broken,
            "drop": ("Description-Content-Type",),
            "extra": ["Description-Content-Type: text/x-rst"],
        },
    )
    [problem] = [p.format() for p in rc.check([dist], root=repo) if p.field == "long_description"]
    assert problem.startswith(
        "error: pluggable_pi_foo-1.0.0-py3-none-any.whl and .tar.gz: long_description: "
        "twine check --strict: `long_description` has syntax errors in markup"
    ), problem
    assert 'Unknown directive type "no-such-directive"' in problem


# --------------------------------------------------------------------------- the workspace itself


def test_the_workspace_sources_carry_the_pins_and_one_version() -> None:
    assert rc.check_sources(REPO) == []
    projects = rc.workspace_projects(REPO)
    assert set(projects) == {
        "pluggable-pi",
        "pluggable-pi-hookspecs",
        "pluggable-pi-mcp",
        "pluggable-pi-codemode",
        "pluggable-pi-tool-search",
        "pluggable-pi-toolindex",
        "pluggable-pi-sandbox",
        "pluggable-pi-otel",
        "pluggable-pi-acp",
        "pluggable-pi-bedrock",
        "pluggable-pi-vertex",
        "pluggable-pi-llama",
        "pluggable-pi-fleet",
        "pluggable-pi-policy",
    }
    assert {p.version for p in projects.values()} == {pi_core.__version__}
    assert pi_hookspecs.__version__ == pi_core.__version__
    assert not projects["pluggable-pi-policy"].member


def test_each_distribution_has_its_readme_and_the_licence() -> None:
    licence = (REPO / "LICENSE").read_text()
    assert licence.startswith("MIT License") and "pi contributors" in licence
    for project in rc.workspace_projects(REPO).values():
        assert (project.folder / "README.md").is_file(), project.name
        assert (project.folder / "LICENSE").read_text() == licence, project.name


def test_the_installed_metadata_is_the_packages_version() -> None:
    """Single-sourced: ``[tool.hatch.version]`` reads each package's ``__version__``
    (true of this development environment once ``uv sync`` has run)."""
    import importlib

    for project in rc.workspace_projects(REPO).values():
        if not project.member:
            continue
        module = importlib.import_module(project.packages[0])
        assert metadata.version(project.name) == module.__version__ == project.version, project.name


def test_the_mcp_client_reports_the_plugins_version() -> None:
    import pi_mcp
    from pi_mcp import connection

    assert connection.CLIENT_VERSION == pi_mcp.__version__ == metadata.version("pluggable-pi-mcp")


def test_the_extras_standard_and_all() -> None:
    requires = metadata.requires("pluggable-pi") or []

    def extra(name: str) -> set[str]:
        found = [Requirement(r) for r in requires]
        return {r.name for r in found if r.marker is not None and r.marker.evaluate({"extra": name})}

    assert extra("standard") == {
        "pluggable-pi-mcp",
        "pluggable-pi-codemode",
        "pluggable-pi-tool-search",
        "pluggable-pi-llama",
    }
    assert extra("all") == {
        f"pluggable-pi-{n}"
        for n in ("mcp", "codemode", "tool-search", "sandbox", "otel", "acp", "bedrock", "vertex", "llama", "fleet")
    }


# --------------------------------------------------------------------------- tasks.py install


def test_install_takes_the_wheels_the_extra_needs(tmp_path: Path) -> None:
    t = tasks()
    dist = tmp_path / "dist"
    wheel(
        dist,
        "pluggable-pi",
        "1.0.0",
        packages={"pi_core": ["__init__.py"]},
        requires=[
            "pluggable-pi-hookspecs<1.1,>=1.0",
            "pydantic>=2",
            'pluggable-pi-mcp<2,>=1.0; extra == "standard"',
            'pluggable-pi-codemode<2,>=1.0; extra == "standard"',
            'pluggable-pi-mcp<2,>=1.0; extra == "all"',
            'pluggable-pi-otel<2,>=1.0; extra == "all"',
        ],
    )
    for name, requires in (
        ("hookspecs", []),
        ("mcp", ["pluggable-pi-hookspecs<2,>=1.0"]),
        ("codemode", ["pluggable-pi-hookspecs<2,>=1.0", "pluggable-pi-toolindex<2,>=1.0"]),
        ("toolindex", ["pluggable-pi-hookspecs<2,>=1.0"]),
        ("otel", ["pluggable-pi-hookspecs"]),
    ):
        wheel(dist, f"pluggable-pi-{name}", "1.0.0", packages={f"pi_{name}": ["__init__.py"]}, requires=requires)
    core, standard = t.wheels_for(dist, "standard")
    assert core.name == "pluggable_pi-1.0.0-py3-none-any.whl"
    assert [w.name.split("-")[0] for w in standard] == [
        "pluggable_pi_hookspecs",
        "pluggable_pi_mcp",
        "pluggable_pi_codemode",
        "pluggable_pi_toolindex",
    ]
    _, everything = t.wheels_for(dist, "all")
    assert {w.name.split("-")[0] for w in everything} == {
        "pluggable_pi_hookspecs",
        "pluggable_pi_mcp",
        "pluggable_pi_otel",
    }
