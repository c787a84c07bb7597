"""pi's own file tools, kept to the policy: the ``file_access`` gate (and, for the
``read`` tool's images, which skip ``file_access``, a ``tool_call`` check).

pi's built-in ``read``, ``write`` and ``edit`` tools run in pi's process, outside the
sandbox. While the sandbox is active (any preset but ``off``), pluggable-pi-sandbox
refuses through them:

* writes to the policy itself and to what runs outside the sandbox later: the agent
  directory's ``settings.json``, the administrator's file (``pi_hookspecs.toolkit.MANAGED_SETTINGS``),
  ``auth.json`` / ``mcp-auth.json``, the sandbox's own state (``<agent>/sandbox``),
  every protected path (the policy's ``protected`` list: the agent directory, the
  project's ``.pi``, ``.git/hooks``, ``.git/config``) and every denied path;
* writes that follow a symbolic link lying in the project or a writable folder (one a
  sandboxed command could have planted) to a place outside every writable folder;
* reads of the denied paths, also through symbolic links (and, for ``edit``, the
  read that precedes its write is checked as the write too).

Writes to ordinary paths outside the project, without such a link, stay allowed: pi's
tools act with the user's permissions. Paths need not exist: a protected folder that
is not there yet (``.pi``, ``~/.aws``) is protected all the same.

Standard library only, imported on the first file access (not when pi starts).
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Literal

from . import settings
from .settings import Plan, Policy, plan

Kind = Literal["read", "write"]
MAX_LINKS = 40
"""Symbolic links followed at most while resolving a path (the kernel's limit)."""

POLICY_NOTE = (
    "pi's file tools keep to the sandbox policy while pluggable-pi-sandbox is active; if the task truly "
    "needs this, ask the user (only they can change the sandbox policy)."
)


@dataclass(frozen=True)
class Refusal:
    """Why the sandbox refuses one file access."""

    kind: Kind
    path: str
    """The path as the tool named it (absolute)."""
    why: str

    @property
    def message(self) -> str:
        """The tool's error text (and the ``reason`` of the block)."""
        verb = "reading" if self.kind == "read" else "writing"
        return f"pluggable-pi-sandbox: {verb} {self.path} is refused: {self.why}. {POLICY_NOTE}"


def fallback_policy() -> Policy:
    """The policy the file tools keep to when the settings are invalid (every command
    is refused then): the defaults, so the policy files stay protected."""
    return settings.resolve(settings.SandboxSettings(), source="defaults", agent=settings.agent_dir())


# --------------------------------------------------------------------------- paths


def resolve(path: str) -> tuple[str, list[str]]:
    """The real path ``path`` leads to (a missing tail kept as written, like
    :func:`os.path.realpath`) and the symbolic links followed on the way, each named by
    its own real location."""
    pending = [part for part in reversed(path.split("/")) if part]
    current = "/"
    links: list[str] = []
    while pending:
        part = pending.pop()
        if part == ".":
            continue
        if part == "..":
            current = os.path.dirname(current)
            continue
        candidate = os.path.join(current, part)
        try:
            target = os.readlink(candidate)
        except OSError:  # not a link, or missing: what follows is kept as written
            current = candidate
            continue
        links.append(candidate)
        if len(links) > MAX_LINKS:  # a loop: the operation fails anyway
            return os.path.realpath(path), links
        if target.startswith("/"):
            current = "/"
        pending.extend(part for part in reversed(target.split("/")) if part)
    return current, links


def _glob(part: str) -> bool:
    return any(c in part for c in "*?[")


def _matches(path: str, root: str) -> bool:
    """``path`` is ``root`` or lies below it; ``*``, ``?`` and ``[...]`` in ``root``
    match within one segment."""
    if not _glob(root):
        return path == root or path.startswith(root.rstrip("/") + "/")
    want = root.split("/")
    have = path.split("/")
    return len(have) >= len(want) and all(fnmatchcase(h, w) for h, w in zip(have, want, strict=False))


def _roots(entries: tuple[str, ...], *, project: str, agent: str) -> list[str]:
    """The policy's path patterns as absolute real paths, whether they exist or not (the
    glob-free head of each is resolved; globs stay for :func:`_matches`)."""
    runtime = settings.runtime_dir()
    out: list[str] = []
    for entry in entries:
        if "{runtime}" in entry and not runtime:
            continue
        text = (
            entry.replace("{agent}", agent)
            .replace("{project}", project)
            .replace("{tmp}", settings.temp_dir())
            .replace("{runtime}", runtime or "")
        )
        text = os.path.normpath(os.path.join(project, os.path.expanduser(text)))
        parts = text.split("/")
        first_glob = next((i for i, part in enumerate(parts) if _glob(part)), len(parts))
        head = os.path.realpath("/".join(parts[:first_glob]) or "/")
        root = "/".join([head.rstrip("/"), *parts[first_glob:]]) if first_glob < len(parts) else head
        if root not in out:
            out.append(root)
    return out


@dataclass
class Rules:
    """What one check compares a path with (real paths, or patterns of them)."""

    plan: Plan
    special: list[tuple[str, str]]
    """``(path, why)``: the policy files, credentials and the sandbox's state."""
    deny: list[str]
    protected: list[str]
    confined: list[str]
    """Where a sandboxed command may have planted a symbolic link: the project and the
    writable folders."""


def rules(policy: Policy, cwd: str) -> Rules:
    the_plan = plan(policy, cwd)
    project = the_plan.cwd
    agent = os.path.realpath(policy.agent_dir or str(settings.agent_dir()))
    named = [
        (os.path.join(agent, "settings.json"), "pi's own settings (the sandbox policy)"),
        (str(settings.MANAGED_SETTINGS), "the administrator's settings (the sandbox policy)"),
        (os.path.join(agent, "auth.json"), "pi's credentials"),
        (os.path.join(agent, "mcp-auth.json"), "pi's credentials"),
        (os.path.join(agent, "sandbox"), "the sandbox's own state"),
    ]
    special: list[tuple[str, str]] = []
    for path, why in named:  # the path, and where it leads when it is a link (a dotfiles manager's)
        for variant in (os.path.normpath(path), os.path.realpath(path)):
            if (variant, why) not in special:
                special.append((variant, why))
    deny = [*the_plan.deny, *_roots(policy.deny_read, project=project, agent=agent)]
    protected = [*the_plan.protected, *_roots(policy.protected, project=project, agent=agent)]
    confined = [project, *the_plan.writable]
    return Rules(the_plan, special, list(dict.fromkeys(deny)), list(dict.fromkeys(protected)), confined)


def _first(paths: tuple[str, ...], roots: list[str]) -> str | None:
    for root in roots:
        if any(_matches(p, root) for p in paths):
            return root
    return None


def _leads(path: str, real: str) -> str:
    return "" if real == path else f"it leads to {real}, "


def check(policy: Policy, cwd: str, operation: Kind, path: str, tool_name: str = "") -> Refusal | None:
    """The refusal of one ``file_access`` (``None``: allowed). ``edit`` reads a file
    in order to write it, so its read is checked as a write too."""
    if not policy.enabled:
        return None
    return _check(rules(policy, cwd), cwd, operation, path, tool_name)


def _check(the_rules: Rules, cwd: str, operation: Kind, path: str, tool_name: str) -> Refusal | None:
    lexical = os.path.normpath(os.path.join(cwd, path))
    real, links = resolve(lexical)
    paths = (lexical, real) if real != lexical else (lexical,)
    denied = _first(paths, the_rules.deny)
    if operation == "read":
        if denied is not None:
            return Refusal("read", path, f"{_leads(lexical, real)}a denied path ({denied})")
        if tool_name != "edit":
            return None
    for special, why in the_rules.special:
        if any(_matches(p, special) for p in paths):
            return Refusal("write", path, f"{_leads(lexical, real)}{why}")
    if denied is not None:
        return Refusal("write", path, f"{_leads(lexical, real)}a denied path ({denied})")
    protected = _first(paths, the_rules.protected)
    if protected is not None:
        return Refusal(
            "write",
            path,
            f"{_leads(lexical, real)}a protected path ({protected}: read-only in the sandbox, it holds what runs "
            "outside it later, such as pi's settings and plugins or git's hooks and config)",
        )
    planted = next((link for link in links if any(_matches(link, c) for c in the_rules.confined)), None)
    if planted is not None and not any(_matches(real, w) for w in the_rules.plan.writable):
        return Refusal(
            "write",
            path,
            f"it goes through the symbolic link {planted} to {real}, outside the writable folders "
            f"({', '.join(the_rules.plan.writable) or 'none'})",
        )
    return None


# --------------------------------------------------------------------------- the read tool's images

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


def read_tool_paths(raw: str, cwd: str) -> list[str]:
    """Every absolute path pi's ``read`` tool may open for the argument ``raw``: its
    resolution (a leading ``@`` dropped, ``~`` expanded, unicode spaces made plain) and
    the macOS spellings it falls back to (as ``pi_core.tools.read.resolve_read_path``)."""
    text = _UNICODE_SPACES.sub(" ", raw)
    if text.startswith("@"):
        text = text[1:]
    if text == "~" or text.startswith("~/"):
        text = os.path.expanduser(text)
    resolved = os.path.normpath(os.path.join(cwd, text))
    out = [resolved]
    ampm = resolved.replace(" AM.", "\u202fAM.").replace(" PM.", "\u202fPM.")
    nfd = unicodedata.normalize("NFD", resolved)
    for candidate in (ampm, nfd, resolved.replace("'", "\u2019"), nfd.replace("'", "\u2019")):
        if candidate not in out:
            out.append(candidate)
    return out


def check_read_tool(policy: Policy, cwd: str, raw: str) -> Refusal | None:
    """The refusal of a ``read`` tool call (``tool_call``): images never reach
    ``file_access``, so the path is checked before the tool runs."""
    if not policy.enabled:
        return None
    the_rules = rules(policy, cwd)
    for path in read_tool_paths(raw, cwd):
        refusal = _check(the_rules, cwd, "read", path, "read")
        if refusal is not None:
            return refusal
    return None
