"""Refusals of the sandbox: recognised in a command's output, reported to the model
(in the tool result) and to ``sandbox_violation`` handlers.

:func:`find` costs time linear in the output and never more than :data:`MAX_SCAN`
characters of it: one pass of a single alternation of fixed phrases (the error
messages) finds every candidate, then small patterns run only on a bounded window
next to each phrase (the path before ``: Permission denied``, the quoted path after
``Permission denied: '``, the host after ``Could not resolve host``), never over a
whole line. A command printing one long line therefore cannot make the scan slow.
"""

from __future__ import annotations

import inspect
import os
import re
import sys
import threading
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from .settings import Plan

Kind = Literal["read", "write", "network"]
Finding = tuple[Kind, str, str, str]
"""``(kind, target, why, line)``."""


class SandboxViolation(BaseModel):
    """What the sandbox refused (the ``event`` of the ``sandbox_violation`` hook)."""

    # defer_build: its validator is built at the first refusal, not by every command's
    # tool_result (which imports this module to scan the output): about 8 ms
    model_config = ConfigDict(defer_build=True)

    kind: Kind
    target: str
    """The path, or ``host:port`` (``network`` when the host is unknown)."""
    command: str
    source: Literal["tool", "user"] = "tool"
    tool_call_id: str | None = None
    preset: str = ""
    backend: str = ""
    detail: str = ""


MAX_SCAN = 128 * 1024
"""Characters of an output :func:`find` scans (its end, which the bash tool keeps: its
result holds at most the last 50 KB of the output and a notice, so this is all of it)."""
PATH_WINDOW = 4096
"""Characters a path next to an error phrase may have (``PATH_MAX``); a longer run is
not taken for a path."""
HOST_WINDOW = 512
"""Characters looked at after a network phrase (a host name has at most 253)."""
MAX_FINDINGS = 100
"""Refusals :func:`find` reports at most (the scan stops there)."""
MAX_PATHS = 2000
"""Distinct paths :func:`find` classifies at most (each costs a few system calls)."""
DETAIL = 300
"""Characters of the output line kept as a refusal's ``line``."""

_FS_ERRORS = ("Read-only file system", "Permission denied", "Operation not permitted")
_NETWORK_PHRASES = (
    # in order of preference: on one line, the first of these that matches is reported
    "Could not resolve host",  # ":? HOST" follows
    "Failed to connect to ",  # "HOST port PORT" follows
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "nodename nor servname provided",
    "getaddrinfo failed",
    "Connection refused",
    "Couldn't connect to server",
    "urlopen error",
)
_SOCKET = len(_NETWORK_PHRASES)
"""Index of the last network pattern: ``socket`` followed, later on its line, by
``Permission denied`` or ``Operation not permitted`` (case-insensitive)."""
_FIRST_CHARACTERS = "".join(sorted({p[0] for p in (*_FS_ERRORS, *_NETWORK_PHRASES)})) + "sS\u017f"
"""Where a phrase may start (``socket`` in any case, ``\u017f`` being a long s)."""
_ALTERNATIVES = (
    "|".join(re.escape(p) for p in _FS_ERRORS),
    *(re.escape(p) for p in _NETWORK_PHRASES),
    r"(?i:socket)\b",
)
_PHRASES = re.compile(
    # the look-ahead lets the regex engine skip every position no phrase starts at, fast
    f"(?=[{re.escape(_FIRST_CHARACTERS)}])(?:" + "|".join(f"({alternative})" for alternative in _ALTERNATIVES) + ")"
)
"""Every phrase at once (one pass, linear): group 1 is a file-system error, group
``2 + i`` the network phrase ``i``, the last group ``socket`` (any case)."""
_HOSTS = {
    0: re.compile(r"Could not resolve host:? (?P<host>[\w.-]+)"),
    1: re.compile(r"Failed to connect to (?P<host>[\w.:\[\]-]+) port (?P<port>\d+)"),
}
_SOCKET_ERROR = re.compile(r"Permission denied|Operation not permitted", re.IGNORECASE)
_PATH_BEFORE = re.compile(r"['\"’`]?(?P<path>[^\s:'\"‘’`]+)")
"""Matched on the REVERSED text before ``": " + error``: an optional closing quote,
then the path (``['"‘`]?PATH['"’`]?: ERROR``, read backwards)."""
_QUOTE = re.compile("['\"]")
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
"""What ``str.splitlines`` splits at."""
_LINE_BREAK = re.compile("[" + _LINE_BREAKS + "]")


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _real(path: str, cwd: str) -> str:
    return os.path.realpath(os.path.join(cwd, os.path.expanduser(path)))


def classify(path: str, error: str, plan: Plan) -> tuple[Literal["read", "write"], str] | None:
    """Why the sandbox (and not ordinary permissions) refused ``path``, if it did."""
    return _verdict(_real(path, plan.cwd), plan)


def _verdict(real: str, plan: Plan) -> tuple[Literal["read", "write"], str] | None:
    if any(_within(real, d) for d in plan.deny):
        return "read", "a denied path"
    if any(_within(real, p) for p in plan.protected):
        return "write", "a protected path (read-only inside the writable folders)"
    if any(_within(real, w) for w in plan.writable):
        return None
    # Outside the writable folders: the sandbox refused it if pi itself could write
    # there (else the ordinary permissions did; reading is never refused there).
    existing = real
    while existing != "/" and not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if os.access(existing, os.W_OK):
        return "write", "outside the writable folders"
    return None


def find(
    output: str, plan: Plan, *, limit: int | None = MAX_SCAN, stop: threading.Event | None = None
) -> list[Finding]:
    """``(kind, target, why, line)`` for each refusal recognised in ``output``.

    What is recognised, line by line (``str.splitlines``), in this order on a line:

    * ``PATH: ERROR`` (``PATH`` optionally quoted, without blanks or colons), where
      ``ERROR`` is ``Read-only file system``, ``Permission denied`` or ``Operation not
      permitted``: ``bash: /x: Read-only file system``, ``cat: '/x': Permission denied``;
    * ``ERROR: 'PATH'`` or ``ERROR: "PATH"`` with an absolute ``PATH`` (Python's
      ``PermissionError``);
    * when the network is not ``on``, the first of the network messages (curl's
      ``Could not resolve host: HOST`` and ``Failed to connect to HOST port N``, name
      resolution failures, ``Connection refused``, ``socket … Permission denied`` …).

    A path counts when the sandbox, not the ordinary permissions, refused it
    (:func:`classify`). Time is linear in the output: only its last ``limit``
    characters are scanned (``None``: all of it), a path or host is looked for only
    next to its error phrase (a run longer than :data:`PATH_WINDOW` is no path), and
    the scan ends after :data:`MAX_FINDINGS` refusals or :data:`MAX_PATHS` distinct
    paths, or as soon as ``stop`` is set (what was found so far is returned).
    """
    cut = limit is not None and len(output) > limit
    text = output[len(output) - limit :] if cut and limit is not None else output
    scan = _Scan(text, plan, cut)
    hits: list[re.Match[str]] = []
    start = end = -1
    for hit in _PHRASES.finditer(text):
        if stop is not None and stop.is_set():
            return scan.found
        if hit.start() >= end:  # the first phrase of another line
            if hits:
                scan.line(start, end, hits)
                if scan.full:
                    return scan.found
            start, end = _line_bounds(text, hit.start(), max(end, 0))
            hits = []
        hits.append(hit)
    if hits and not (stop is not None and stop.is_set()):
        scan.line(start, end, hits)
    return scan.found


def _line_bounds(text: str, pos: int, after: int) -> tuple[int, int]:
    """Start and end of the line holding ``pos``; no line starts before ``after``."""
    start = after
    for char in _LINE_BREAKS:
        found = text.rfind(char, after, pos)
        if found >= start:
            start = found + 1
    found_break = _LINE_BREAK.search(text, pos)
    return start, found_break.start() if found_break is not None else len(text)


class _Scan:
    """The refusals found so far in ``text`` (the state :func:`find` carries from line
    to line)."""

    def __init__(self, text: str, plan: Plan, cut: bool) -> None:
        self.text = text
        self.plan = plan
        self.cut = cut
        """Whether ``text`` starts in the middle of the output (then its first line is
        no real line start)."""
        self.found: list[Finding] = []
        self.seen: set[tuple[str, str]] = set()
        self.verdicts: dict[str, tuple[str, tuple[Literal["read", "write"], str] | None]] = {}

    @property
    def full(self) -> bool:
        return len(self.found) >= MAX_FINDINGS or len(self.verdicts) >= MAX_PATHS

    def line(self, start: int, end: int, hits: list[re.Match[str]]) -> None:
        """The refusals of one line, from its phrases ``hits``."""
        text = self.text
        errors = [hit for hit in hits if hit.lastindex == 1]
        # PATH: ERROR. A path never crosses a blank, so it never reaches back over
        # another error phrase; like the non-overlapping matches of one regex, it
        # starts at the earliest after the previous refusal found on the line.
        floor = start if start > 0 or not self.cut else -1  # where a path may start
        bound = start  # where to look back to, at most
        for hit in errors:
            if self.full:
                return
            at = hit.start()
            colon = at - 2
            lo = max(bound, colon - PATH_WINDOW - 1)
            bound = at
            if colon - lo < 1 or text[colon:at] != ": ":
                continue
            window = text[lo:colon][::-1]
            match = _PATH_BEFORE.match(window)
            if match is None or (match.end() == len(window) and lo != floor):
                continue  # no path, or a run too long to be one (or cut off by the scan limit)
            self._path(match.group("path")[::-1], start, end, hit.end())
            floor = bound = hit.end()
        # ERROR: 'PATH'
        after = start
        for hit in errors:
            if self.full:
                return
            if hit.start() < after:
                continue
            at = hit.end()
            # the quote, "/", then at least one character that is no quote, on this line
            if text[at : at + 3] not in (": '", ': "') or text[at + 3 : at + 4] != "/" or at + 4 >= end:
                continue
            if text[at + 4] in "'\"":
                continue
            quote = _QUOTE.search(text, at + 5, min(end, at + 4 + PATH_WINDOW))
            if quote is None:
                continue
            self._path(text[at + 3 : quote.start()], start, end, quote.end())
            after = quote.end()
        if self.plan.network != "on":
            self._network(start, end, hits)

    def _path(self, path: str, start: int, end: int, at: int) -> None:
        known = self.verdicts.get(path)
        if known is None:
            real = _real(path, self.plan.cwd)
            known = self.verdicts[path] = (real, _verdict(real, self.plan))
        target, verdict = known
        if verdict is None:
            return
        kind, why = verdict
        if (kind, target) not in self.seen:
            self.seen.add((kind, target))
            self.found.append((kind, target, why, self._detail(start, end, at)))

    def _network(self, start: int, end: int, hits: list[re.Match[str]]) -> None:
        """The first network pattern (in :data:`_NETWORK_PHRASES` order) that matches
        on the line, if any."""
        text = self.text
        by_pattern: dict[int, list[re.Match[str]]] = {}
        for hit in hits:
            if hit.lastindex is not None and hit.lastindex > 1:
                by_pattern.setdefault(hit.lastindex - 2, []).append(hit)
        for index in sorted(by_pattern):
            host, port, at = "network", None, -1
            if index in _HOSTS:
                for hit in by_pattern[index]:
                    found = _HOSTS[index].match(text, hit.start(), min(end, hit.end() + HOST_WINDOW))
                    if found is not None:
                        host, port, at = found.group("host"), found.groupdict().get("port"), found.end()
                        break
            elif index == _SOCKET:  # only after the first "socket" of the line: it sees the most
                error = _SOCKET_ERROR.search(text, by_pattern[index][0].end(), end)
                at = error.end() if error is not None else -1
            else:
                at = by_pattern[index][0].end()
            if at < 0:
                continue
            target = f"{host}:{port}" if port else host
            if ("network", target) not in self.seen and ("network", "network") not in self.seen:
                self.seen.add(("network", target))
                why = "network is off" if self.plan.network == "off" else "not through the proxy, or a host not allowed"
                self.found.append(("network", target, why, self._detail(start, end, at)))
            return

    def _detail(self, start: int, end: int, at: int) -> str:
        """The line (its first :data:`DETAIL` characters); of a long line, the
        :data:`DETAIL` characters that end with the refusal ``at``."""
        if end - start <= PATH_WINDOW:
            return self.text[start:end].strip()[:DETAIL]
        begin = max(start, at - DETAIL)
        excerpt = self.text[begin:at].strip()
        return excerpt if begin == start else "…" + excerpt


async def emit(ctx: Any, violation: SandboxViolation) -> None:
    """Call every ``sandbox_violation`` handler (each with the arguments it names)."""
    hook = getattr(getattr(ctx, "hook", None), "sandbox_violation", None) if ctx is not None else None
    if hook is None:
        return
    for impl in reversed(hook.get_hookimpls()):
        available = {"event": violation, "ctx": ctx}
        kwargs = {name: available[name] for name in impl.argnames if name in available}
        try:
            result = impl.function(**kwargs)
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            message = (
                f"pluggable-pi-sandbox: the sandbox_violation handler of plugin {impl.plugin_name!r} failed: "
                f"{type(exc).__name__}: {exc}"
            )
            try:
                ui = ctx.ui if getattr(ctx, "has_ui", False) else None
            except Exception:
                ui = None
            if ui is not None:
                ui.notify(message, "warning")
            else:
                print(message, file=sys.stderr)
