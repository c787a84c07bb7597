"""The path allowlist: a tool's ``path`` resolved the way pi's file tools resolve it,
then matched against globs relative to the project.

Globs: ``*`` and ``?`` stay within one path segment, ``**`` spans any number of
segments (``src/**`` is everything below ``src``, ``**/*.md`` every markdown file),
``[abc]`` is a character class. A glob matches the whole relative path.
"""

from __future__ import annotations

import functools
import os
import re

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


def resolve_tool_path(path: str, cwd: str) -> str:
    """The absolute real path a file tool would write for ``path``: unicode spaces
    normalised, a leading ``@`` dropped, ``~`` expanded, joined to ``cwd``, and symbolic
    links followed (the file tools write through them)."""
    path = _UNICODE_SPACES.sub(" ", path)
    if path.startswith("@"):
        path = path[1:]
    if path == "~" or path.startswith(("~/", "~" + os.sep)):
        path = os.path.expanduser(path)
    return os.path.realpath(os.path.join(cwd, path))


def project_relative(path: str, cwd: str) -> str | None:
    """``path`` relative to the project (``/``-separated), or ``None`` when it is outside."""
    project = os.path.realpath(cwd)
    target = resolve_tool_path(path, cwd)
    if target == project:
        return ""
    if os.path.commonpath([project, target]) != project:
        return None
    return os.path.relpath(target, project).replace(os.sep, "/")


@functools.lru_cache(maxsize=512)
def glob_regex(glob: str) -> re.Pattern[str]:
    """The regular expression of a project glob (see the module docstring)."""
    glob = glob.strip().removeprefix("./").lstrip("/")
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "[" and (end := glob.find("]", i + 2)) != -1:
            body = glob[i + 1 : end].replace("\\", "\\\\")
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


def matches(relative: str, globs: list[str]) -> str | None:
    """The first glob matching the project-relative path, or ``None``."""
    return next((glob for glob in globs if glob_regex(glob).fullmatch(relative)), None)
