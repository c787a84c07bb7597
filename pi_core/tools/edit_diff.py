"""Text replacement for the ``edit`` tool: exact and fuzzy matching, line endings, and
the diffs shown to the user.

Matching works on LF-normalised text. An ``oldText`` is first looked up exactly; when
that fails, both sides are compared in a *fuzzy* form: NFKC-normalised, trailing
whitespace stripped from every line, typographic quotes turned into ASCII quotes,
unicode dashes into ``-`` and unicode spaces into plain spaces. When a fuzzy match is
used, only the lines the replacement touches take the normalised form; every other
line keeps its original bytes.
"""

from __future__ import annotations

import difflib
import itertools
import re
import unicodedata
from dataclasses import dataclass

BOM = "\ufeff"

_SINGLE_QUOTES = re.compile("[\u2018\u2019\u201a\u201b]")
_DOUBLE_QUOTES = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")
_LINES_WITH_ENDINGS = re.compile(r"[^\n]*\n|[^\n]+")


class EditError(ValueError):
    """An edit that cannot be applied; the message is written for the model."""


@dataclass(frozen=True)
class Replacement:
    old_text: str
    new_text: str


def strip_bom(text: str) -> tuple[str, str]:
    """``(bom, text_without_bom)``."""
    return (BOM, text[1:]) if text.startswith(BOM) else ("", text)


def detect_line_ending(text: str) -> str:
    """``"\\r\\n"`` when the first line break of ``text`` is CRLF, else ``"\\n"``."""
    lf = text.find("\n")
    return "\r\n" if lf > 0 and text[lf - 1] == "\r" else "\n"


def normalize_to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def restore_line_endings(text: str, ending: str) -> str:
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


def normalize_for_fuzzy_match(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = _SINGLE_QUOTES.sub("'", text)
    text = _DOUBLE_QUOTES.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


@dataclass
class _Match:
    index: int
    length: int
    new_text: str
    edit_index: int


def _find(content: str, old_text: str) -> tuple[int, int, bool]:
    """``(index, length, fuzzy)`` of ``old_text`` in ``content``; index -1 when absent.
    A fuzzy index refers to the fuzzy form of ``content``."""
    index = content.find(old_text)
    if index != -1:
        return index, len(old_text), False
    fuzzy_old = normalize_for_fuzzy_match(old_text)
    index = normalize_for_fuzzy_match(content).find(fuzzy_old)
    if index == -1:
        return -1, 0, False
    return index, len(fuzzy_old), True


def _closest_context(content: str, old_text: str) -> str:
    """Where ``old_text`` was probably meant to go, for the not-found error."""
    lines = content.split("\n")
    if not content:
        return "The file is empty."
    first = old_text.split("\n")[0].strip()
    span = old_text.count("\n") + 1
    for size in range(min(len(first), 60), 7, -4):
        needle = first[:size].strip()
        if not needle:
            continue
        hit = next((i for i, line in enumerate(lines) if needle in line), None)
        if hit is not None:
            start, end = max(0, hit - 2), min(len(lines), hit + span + 3)
            shown = "\n".join(f"  {n + 1}: {lines[n]}" for n in range(start, end))
            return f"Closest match is around line {hit + 1}:\n{shown}"
    shown = "\n".join(f"  {n + 1}: {line}" for n, line in enumerate(lines[:5]))
    return f"The file starts with:\n{shown}"


def _label(index: int, total: int) -> str:
    return "the text" if total == 1 else f"edits[{index}]"


def _apply(content: str, matches: list[_Match], offset: int = 0) -> str:
    for match in sorted(matches, key=lambda m: m.index, reverse=True):
        start = match.index - offset
        content = content[:start] + match.new_text + content[start + match.length :]
    return content


def _apply_keeping_unchanged_lines(original: str, base: str, matches: list[_Match]) -> str:
    """Apply ``matches`` (found in ``base``, the fuzzy form of ``original``) so that the
    lines they touch come from ``base`` and every other line from ``original``."""
    original_lines = _LINES_WITH_ENDINGS.findall(original)
    spans: list[tuple[int, int]] = []
    offset = 0
    for line in _LINES_WITH_ENDINGS.findall(base):
        spans.append((offset, offset + len(line)))
        offset += len(line)
    if len(original_lines) != len(spans):
        raise EditError("The fuzzy match changed the number of lines; use the exact text of the file instead.")

    def line_range(match: _Match) -> tuple[int, int]:
        start = next(i for i, (a, b) in enumerate(spans) if a <= match.index < b)
        end = start
        while spans[end][1] < match.index + match.length:
            end += 1
        return start, end + 1

    groups: list[tuple[int, int, list[_Match]]] = []
    for match in sorted(matches, key=lambda m: m.index):
        start, end = line_range(match)
        if groups and start < groups[-1][1]:
            last = groups[-1]
            groups[-1] = (last[0], max(last[1], end), [*last[2], match])
        else:
            groups.append((start, end, [match]))
    out: list[str] = []
    cursor = 0
    for start, end, group in groups:
        out.extend(original_lines[cursor:start])
        block_start, block_end = spans[start][0], spans[end - 1][1]
        out.append(_apply(base[block_start:block_end], group, block_start))
        cursor = end
    out.extend(original_lines[cursor:])
    return "".join(out)


def apply_edits(content: str, edits: list[Replacement], path: str) -> str:
    """``content`` (LF-normalised, no BOM) with every edit applied. Each ``old_text`` is
    matched against the original content and must occur exactly once; edits must not
    overlap. Raises :class:`EditError` with a message for the model."""
    total = len(edits)
    normalized = [Replacement(normalize_to_lf(e.old_text), normalize_to_lf(e.new_text)) for e in edits]
    for i, edit in enumerate(normalized):
        if not edit.old_text:
            name = "oldText" if total == 1 else f"edits[{i}].oldText"
            raise EditError(f"{name} must not be empty in {path}.")
        if edit.old_text == edit.new_text:
            name = "oldText and newText" if total == 1 else f"edits[{i}].oldText and edits[{i}].newText"
            raise EditError(f"{name} are identical in {path}: there is nothing to change.")
    fuzzy = any(_find(content, e.old_text)[2] for e in normalized)
    base = normalize_for_fuzzy_match(content) if fuzzy else content
    fuzzy_base = normalize_for_fuzzy_match(base)
    matches: list[_Match] = []
    for i, edit in enumerate(normalized):
        index, length, _ = _find(base, edit.old_text)
        if index == -1:
            header = (
                f"Could not find the exact text in {path}." if total == 1 else f"Could not find edits[{i}] in {path}."
            )
            raise EditError(
                f"{header} The old text must match exactly, including all whitespace and newlines.\n"
                + _closest_context(content, edit.old_text)
            )
        count = fuzzy_base.count(normalize_for_fuzzy_match(edit.old_text))
        if count > 1:
            unique = "The text must be unique" if total == 1 else "Each oldText must be unique"
            raise EditError(
                f"Found {count} occurrences of {_label(i, total)} in {path}. "
                f"{unique}: add more surrounding context to make it unique."
            )
        matches.append(_Match(index, length, edit.new_text, i))
    ordered = sorted(matches, key=lambda m: m.index)
    for previous, current in itertools.pairwise(ordered):
        if previous.index + previous.length > current.index:
            raise EditError(
                f"edits[{previous.edit_index}] and edits[{current.edit_index}] overlap in {path}. "
                "Merge them into one edit or target separate regions."
            )
    result = _apply_keeping_unchanged_lines(content, base, matches) if fuzzy else _apply(base, matches)
    if result == content:
        raise EditError(f"No changes made to {path}: the replacement produced identical content.")
    return result


# --------------------------------------------------------------------------- diffs


def display_diff(old: str, new: str, context: int = 4) -> tuple[str, int | None]:
    """A compact diff for display: changed lines as ``-N text`` / ``+N text`` with up to
    ``context`` unchanged lines around them (`` N text``) and `` ...`` for the gaps.
    Returns it with the first changed line number of the new text."""
    a, b = old.split("\n"), new.split("\n")
    width = len(str(max(len(a), len(b))))
    if len(a) > 1 and len(b) > 1 and a[-1] == b[-1] == "":
        a.pop()  # the newline that ends both texts starts no line (as pi 1.6.0 counts them)
        b.pop()
    rows: list[str] = []
    first_changed: int | None = None
    gap = f" {' ' * width} ..."

    def context_rows(start: int, stop: int) -> None:
        rows.extend(f" {str(n + 1).rjust(width)} {a[n]}" for n in range(start, stop))

    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for k, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag != "equal":
            if first_changed is None:
                first_changed = j1 + 1
            rows.extend(f"-{str(n + 1).rjust(width)} {a[n]}" for n in range(i1, i2))
            rows.extend(f"+{str(n + 1).rjust(width)} {b[n]}" for n in range(j1, j2))
            continue
        after_change, before_change = k > 0, k < len(ops) - 1
        size = i2 - i1
        if after_change and before_change:
            if size <= 2 * context:
                context_rows(i1, i2)
            else:
                context_rows(i1, i1 + context)
                rows.append(gap)
                context_rows(i2 - context, i2)
        elif after_change:
            context_rows(i1, min(i2, i1 + context))
            if size > context:
                rows.append(gap)
        elif before_change:
            if size > context:
                rows.append(gap)
            context_rows(max(i1, i2 - context), i2)
    return "\n".join(rows), first_changed


def unified_patch(path: str, old: str, new: str, context: int = 4) -> str:
    """A standard unified diff of ``old`` and ``new`` (``--- path`` / ``+++ path``)."""
    out: list[str] = []
    lines = difflib.unified_diff(
        _LINES_WITH_ENDINGS.findall(old), _LINES_WITH_ENDINGS.findall(new), fromfile=path, tofile=path, n=context
    )
    for line in lines:
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)
