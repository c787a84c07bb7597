"""Whether an installed plugin was made for the plugin contract this pi has.

The contract (``pluggable-pi-hookspecs``, package ``pi_hookspecs``) follows semantic
versioning and a plugin states the major version it was made for in its metadata
(``Requires-Dist: pluggable-pi-hookspecs<2,>=1.0``). pip keeps an environment consistent,
but one can still hold a plugin for another major version (``pip install --no-deps``, a
folder on ``PYTHONPATH``, a plugin installed before pi was upgraded): importing it would
fail somewhere inside with an ``AttributeError``. Before importing a plugin of an installed
distribution, the host asks :func:`contract_mismatch` and reports one error naming both
versions instead.

This runs at every start, for every installed plugin (each declares the requirement).
Importing ``packaging`` would cost ≈3 ms (``packaging.specifiers``) to ≈14 ms
(``packaging.requirements`` with markers), and compiling a few regular expressions
≈0.4 ms: the forms a plugin writes (comparisons with plain release numbers, no
environment marker but an extra) are read here with string methods, and only anything
else (``~=``, wildcards, pre-releases, other markers) is handed to ``packaging``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pi_hookspecs

from .._entrypoints import requirement_name, requirements_on

CONTRACT = "pluggable-pi-hookspecs"
"""The distribution of the plugin contract."""

_NAME_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"
_OPERATORS = (">=", "<=", "==", "!=", "<", ">")
"""The comparisons decided here (longest first); ``~=``, ``===`` and the rest are
``packaging``'s."""


def contract_mismatch(distribution: str | None, version: str | None, installed: str | None = None) -> str | None:
    """Why the plugin of the installed ``distribution`` (at ``version``) must not be
    imported: its requirement on the contract, which the installed contract (``installed``,
    by default ``pi_hookspecs.__version__``) does not satisfy. ``None`` when it does, or
    when the distribution states no such requirement."""
    if distribution is None:
        return None
    requirements = requirements_on(distribution, CONTRACT)
    if not requirements:
        return None
    have = installed if installed is not None else pi_hookspecs.__version__
    needed = unmet_requirement(requirements, have)
    if needed is None:
        return None
    who = f"{distribution} {version}" if version else distribution
    major = have.split(".", 1)[0]
    return (
        f"{who} needs the plugin contract {CONTRACT}{needed}; pi has {have}: not loaded "
        f"(install a release of {distribution} made for the contract {major}.x, "
        f"or a pi whose contract is {CONTRACT}{needed})"
    )


def unmet_requirement(requirements: Iterable[str], installed: str) -> str | None:
    """The version specifier (``>=2.0,<3``) of the first of ``requirements``
    (``Requires-Dist`` values on the contract) that version ``installed`` does not
    satisfy; ``None`` when all are satisfied. A requirement of an extra of the plugin
    (``; extra == "test"``) does not count: pi never installs a plugin's extras."""
    for text in requirements:
        requirement, _, marker = text.partition(";")
        if marker.strip() and not _marker_applies(marker):
            continue
        name = requirement_name(requirement)
        if not name:
            continue
        rest = requirement.lstrip().lstrip(_NAME_CHARS).strip()  # what follows the name
        if rest.startswith("["):  # extras of the contract
            rest = rest[rest.find("]") + 1 :].strip()
        if rest.startswith("@"):
            continue  # a direct reference names no version
        specifier = rest.strip("()").strip()
        if specifier and not satisfies(specifier, installed):
            return _lower_bound_first(specifier)
    return None


def _lower_bound_first(specifier: str) -> str:
    """``<3,>=2.0`` (the order metadata writes) as a reader expects it: ``>=2.0,<3``."""
    clauses = [clause.strip() for clause in specifier.split(",") if clause.strip()]
    return ",".join(sorted(clauses, key=lambda clause: clause.startswith("<")))


def satisfies(specifier: str, version: str) -> bool:
    """Whether ``version`` satisfies the PEP 440 ``specifier`` (``>=1.0,<2``). Plain
    comparisons of release numbers are decided here; every other form by ``packaging``."""
    have = _release(version)
    if have is not None:
        verdict = True
        for clause in specifier.split(","):
            clause = clause.strip()
            operator = next((op for op in _OPERATORS if clause.startswith(op)), None)
            want = _release(clause[len(operator) :].strip()) if operator and not clause.startswith("===") else None
            if operator is None or want is None:
                break  # a form this reader does not decide
            width = max(len(have), len(want))
            left, right = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
            verdict = verdict and _compare(operator, left, right)
        else:
            return verdict
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(specifier).contains(version, prereleases=True)
    except InvalidSpecifier:
        return True  # not pi's to judge: pip would have refused it


def _release(text: str) -> tuple[int, ...] | None:
    """``1.0.2`` as ``(1, 0, 2)``; ``None`` for anything but dot-separated numbers."""
    parts = text.split(".")
    if not all(part.isdigit() and part.isascii() for part in parts):
        return None
    return tuple(int(part) for part in parts)


def _compare(operator: str, have: tuple[int, ...], want: tuple[int, ...]) -> bool:
    if operator == ">=":
        return have >= want
    if operator == "<=":
        return have <= want
    if operator == "<":
        return have < want
    if operator == ">":
        return have > want
    if operator == "==":
        return have == want
    return have != want


def _marker_applies(marker: str) -> bool:
    """Whether a requirement's environment marker holds for pi's own install (no extra)."""
    words = marker.replace("==", " == ").split()
    if len(words) == 3 and words[0] == "extra" and words[1] == "==":
        return False  # only an extra of the plugin: ``extra == "test"``
    from packaging.markers import InvalidMarker, Marker

    try:
        return Marker(marker.strip()).evaluate({"extra": ""})
    except InvalidMarker:
        return True
