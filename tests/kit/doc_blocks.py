"""Code blocks of the markdown docs, and the checks each kind of block gets.

A fenced block's language decides what happens to it (see :data:`KINDS`):

* ``python`` — executed; the blocks of one file run in order in one namespace, top-level
  ``await`` is allowed, and every ``test_*`` function a block defines is then called with
  the fixtures it names (``pi``: a :class:`~pi_core.testing.PiHarness`, ``tmp_path``);
* ``python codemode`` — a script for the codemode sandbox (it calls ``tools.*``): compiled
  (top-level ``await`` allowed), not run on the host;
* ``sh`` / ``bash`` — every command line that runs ``pi`` is parsed by pi's own parser
  (and run when it is cheap and offline); other programs must be known;
* ``json``, ``jsonl``, ``jsonc``, ``toml``, ``yaml`` — parsed;
* ``markdown`` — its YAML front matter, if any, is parsed;
* ``text`` and unlabelled blocks — illustrations (output, file layouts): not code.

A hidden block runs like a visible one but is not shown to readers (Sybil's syntax)::

    <!-- invisible-code-block: python
    setup = "code the example needs"
    -->
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

KINDS = {
    "python": "python",
    "py": "python",
    "sh": "shell",
    "bash": "shell",
    "shell": "shell",
    "json": "json",
    "jsonl": "jsonl",
    "jsonc": "jsonc",
    "toml": "toml",
    "yaml": "yaml",
    "markdown": "markdown",
    "md": "markdown",
    "text": "illustration",
    "": "illustration",
}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_HIDDEN = re.compile(r"^<!--\s*invisible-code-block:\s*(?P<lang>\w+)\s*$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    """1-based line of the opening fence."""
    lang: str
    code: str
    hidden: bool = False

    attributes: tuple[str, ...] = ()
    """The words after the language in the fence's info string."""

    @property
    def kind(self) -> str | None:
        if self.lang == "python" and "codemode" in self.attributes:
            return "codemode"
        return KINDS.get(self.lang)

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced (and hidden) code block of a markdown file, in order."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        hidden = _HIDDEN.match(lines[i].strip())
        fence = _FENCE.match(lines[i])
        if hidden:
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "-->")
            found.append(Block(path, i + 1, hidden["lang"], "\n".join(lines[i + 1 : end]) + "\n", hidden=True))
            i = end + 1
        elif fence:
            indent, marker = len(fence["indent"]), fence["fence"]
            info = fence["info"].strip()
            close = re.compile(rf"^[ \t]*{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$")
            end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), None)
            if end is None:
                raise AssertionError(f"{path.name}:{i + 1}: unclosed code fence")
            body = [line[indent:] if line[:indent].strip() == "" else line for line in lines[i + 1 : end]]
            words = info.lower().split()
            found.append(
                Block(path, i + 1, words[0] if words else "", "\n".join(body) + "\n", attributes=tuple(words[1:]))
            )
            i = end + 1
        else:
            i += 1
    return found


# --------------------------------------------------------------------------- shell lines

_OPERATORS = {"|", "||", "&&", ";", "&"}
_REDIRECTS = {">", ">>", "<", "<<", "<<-", "2>", "2>>", "&>"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


_HEREDOC = re.compile(r"<<-?\s*(?P<quote>['\"]?)(?P<word>\w+)(?P=quote)")


def shell_commands(code: str) -> list[tuple[str, list[str]]]:
    """``(line, argv)`` for every simple command of a shell block: comments dropped,
    ``\\``-continued lines joined, pipelines and lists split, redirections and leading
    ``VAR=value`` assignments removed (``export`` keeps its arguments); the body of a
    here-document (``<<'EOF'`` … ``EOF``) is the command's input, not commands."""
    commands: list[tuple[str, list[str]]] = []
    logical = re.sub(r"\\\n", " ", code)
    heredoc: str | None = None
    for line in logical.splitlines():
        if heredoc is not None:
            if line.strip() == heredoc:
                heredoc = None
            continue
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        opened = _HEREDOC.search(line)
        if opened:
            heredoc = opened.group("word")
        lexer = shlex.shlex(line, posix=True, punctuation_chars="|&;<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        argv: list[str] = []
        skip_next = False
        for token in [*lexer, ";"]:
            if skip_next:
                skip_next = False
            elif token in _REDIRECTS:
                skip_next = True
            elif token in _OPERATORS:
                while argv and _ASSIGNMENT.match(argv[0]):
                    argv.pop(0)
                if argv:
                    commands.append((line.strip(), argv))
                argv = []
            else:
                argv.append(token)
    return commands


def program_name(argv: list[str]) -> str:
    return Path(argv[0]).name if argv else ""


def quote(argv: list[str]) -> str:
    return shlex.join(argv)
