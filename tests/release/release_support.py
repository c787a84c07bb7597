"""Helpers of the release tests: ``tools/release_check.py`` and ``tasks.py`` imported from
their files (neither is a package), and small distributions written by hand."""

from __future__ import annotations

import importlib.util
import io
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[2]


def load(name: str, path: Path) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def release_check() -> ModuleType:
    return load("release_check", REPO / "tools" / "release_check.py")


def tasks() -> ModuleType:
    return load("pi_tasks", REPO / "tasks.py")


LICENSE = "MIT License\n\nCopyright (c) 2026 pi contributors\n"


def metadata(
    name: str,
    version: str,
    *,
    requires: list[str] = (),
    classifiers: list[str] | None = None,
    description: str = "# readme\n\nWhat it is.\n",
    extra: list[str] = (),
    drop: tuple[str, ...] = (),
    license_file: str | None = "LICENSE",
) -> str:
    """A METADATA / PKG-INFO as hatchling writes it, with the fields the release asks for."""
    if classifiers is None:
        classifiers = [
            "Development Status :: 5 - Production/Stable",
            "Intended Audience :: Developers",
            "Operating System :: OS Independent",
            "Programming Language :: Python :: 3.11",
            "Programming Language :: Python :: 3.12",
            "Typing :: Typed",
        ]
    headers = [
        ("Metadata-Version", "2.4"),
        ("Name", name),
        ("Version", version),
        ("Summary", f"{name}: a part of pi"),
        ("Author", "pi contributors"),
        ("License-Expression", "MIT"),
        *([("License-File", license_file)] if license_file else []),
        ("Keywords", "pi,plugin"),
        *(("Classifier", c) for c in classifiers),
        ("Requires-Python", ">=3.11"),
        *(("Requires-Dist", r) for r in requires),
        ("Description-Content-Type", "text/markdown"),
    ]
    lines = [f"{key}: {value}" for key, value in headers if key not in drop] + list(extra)
    return "\n".join(lines) + "\n\n" + description


def wheel(
    folder: Path,
    name: str,
    version: str,
    *,
    packages: dict[str, list[str]],
    license_text: str | None = LICENSE,
    **meta: object,
) -> Path:
    """``name-version-py3-none-any.whl`` holding ``packages`` (package -> file names)."""
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as archive:
        for package, files in packages.items():
            for file in files:
                archive.writestr(f"{package}/{file}", "")
        archive.writestr(f"{stem}.dist-info/METADATA", metadata(name, version, **meta))  # type: ignore[arg-type]
        if license_text is not None:
            archive.writestr(f"{stem}.dist-info/licenses/LICENSE", license_text)
        archive.writestr(f"{stem}.dist-info/RECORD", "")
    return path


def sdist(folder: Path, name: str, version: str, *, license_text: str | None = LICENSE, **meta: object) -> Path:
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}.tar.gz"
    folder.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as archive:
        files = {"PKG-INFO": metadata(name, version, **meta), "pyproject.toml": ""}  # type: ignore[arg-type]
        if license_text is not None:
            files["LICENSE"] = license_text
        for member, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{stem}/{member}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path
