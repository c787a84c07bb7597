"""Text to search terms.

``tokenize(text)`` turns tool names, descriptions and queries into the terms the index
counts:

1. **Words** are runs of letters and digits; everything else separates them, so
   ``mcp__github__create_issue``, ``create-issue`` and ``issues.create`` all split.
2. **camelCase and digits**: ``createPullRequest`` -> ``create pull request``,
   ``HTTPServer`` -> ``http server``, ``oauth2Token`` -> ``oauth 2 token``.
3. **Lowercase**, then English **stop words** are dropped (``the``, ``an``, ``to`` …).
4. **Light stemming** (:func:`stem`) so inflections of one word meet.
5. **CJK** runs (Chinese, Japanese, Korean) become overlapping character bigrams, since
   they have no spaces: ``创建表格`` -> ``创建 建表 表格``.

Words and whitespace-separated chunks are memoised (up to 200,000 of them), so
tokenizing a large catalogue costs little more than splitting it on whitespace.
"""

from __future__ import annotations

import functools
import re
from itertools import chain

__all__ = ["STOP_WORDS", "stem", "tokenize"]

STOP_WORDS: frozenset[str] = frozenset(
    """
    a an and any are as at be been being but by can could did do does doing for from
    had has have having how i if in into is it its itself me my of on or our ours please
    should so some such than that the their theirs them then there these they this those
    to too us was we were what when where which while who whom why will with would you
    your yours
    """.split()
)
"""Function words dropped from documents and queries alike."""

_WORD = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_CJK_CHARS = "\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff"


@functools.cache
def _non_ascii_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The patterns for words outside ASCII (parts, CJK runs), compiled on first use:
    their large character ranges take several milliseconds to compile, and tool names
    and descriptions are mostly ASCII."""
    parts = re.compile(rf"[{_CJK_CHARS}]+|[0-9]+|[^\W\d_{_CJK_CHARS}]+")
    return parts, re.compile(rf"[{_CJK_CHARS}]+")


_VOWELS = frozenset("aeiouy")
_KEEP_DOUBLE = frozenset("dflsz")
_CACHE_LIMIT = 200_000


def _has_vowel(word: str) -> bool:
    return any(ch in _VOWELS for ch in word)


def _undouble(word: str) -> str:
    """``gett`` -> ``get``, ``committ`` -> ``commit``; ``add``, ``pass``, ``install`` stay."""
    if len(word) >= 3 and word[-1] == word[-2] and word[-1] not in _VOWELS and word[-1] not in _KEEP_DOUBLE:
        return word[:-1]
    return word


def stem(word: str) -> str:
    """A light English stemmer for lowercase words, applied alike to documents and queries.

    Three steps, each at most once, only on alphabetic words longer than three letters:

    * plurals: ``queries`` -> ``query``; ``branches``/``boxes``/``classes`` lose ``es``;
      otherwise a final ``s`` goes unless the word ends in ``ss``, ``us`` or ``is``;
    * ``-ing`` / ``-ed`` (``creating``, ``created``), keeping a stem of at least three
      letters with a vowel and undoubling its last consonant (``getting`` -> ``get``);
    * a final ``e`` (not ``ee``), so ``create``, ``created`` and ``creating`` all become
      ``creat``.

    It is deliberately simple: irregular forms (``written``) and a few doubled letters
    (``embedded``) do not meet their base word.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith(("sses", "ches", "shes", "xes", "zes")):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if len(word) >= 6 and word.endswith("ing") and _has_vowel(word[:-3]):
        word = _undouble(word[:-3])
    elif len(word) >= 5 and word.endswith("ed") and not word.endswith("eed") and _has_vowel(word[:-2]):
        word = _undouble(word[:-2])
    if len(word) >= 4 and word.endswith("e") and not word.endswith("ee"):
        word = word[:-1]
    return word


def _cjk_terms(run: str) -> list[str]:
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


def _terms_of_word(word: str) -> tuple[str, ...]:
    out: list[str] = []
    if word.isascii():
        parts = [word] if word.isalpha() and word.islower() else _CAMEL.findall(word)
        cjk = None
    else:
        non_ascii, cjk = _non_ascii_patterns()
        parts = non_ascii.findall(word)
    for part in parts:
        if cjk is not None and cjk.match(part):
            out.extend(_cjk_terms(part))
            continue
        lower = part.lower()
        if lower not in STOP_WORDS:
            out.append(stem(lower))
    return tuple(out)


class _ChunkCache(dict[str, tuple[str, ...]]):
    """Whitespace-separated chunk -> its terms, computed on the first lookup. Splitting
    on whitespace and looking chunks up keeps the per-word work in C."""

    def __missing__(self, chunk: str) -> tuple[str, ...]:
        if len(self) >= _CACHE_LIMIT:
            self.clear()
            _words.clear()
        words = _WORD.findall(chunk)
        if len(words) == 1 and words[0] == chunk:
            terms = _word_lookup(chunk)
        else:
            terms = tuple(chain.from_iterable(map(_word_lookup, words)))
        self[chunk] = terms
        return terms


class _WordCache(dict[str, tuple[str, ...]]):
    def __missing__(self, word: str) -> tuple[str, ...]:
        terms = self[word] = _terms_of_word(word)
        return terms


_words = _WordCache()
_word_lookup = _words.__getitem__
_lookup = _ChunkCache().__getitem__


def tokenize(text: str) -> list[str]:
    """The search terms of ``text``, in order, repeats kept (see the module docs)."""
    return list(chain.from_iterable(map(_lookup, text.split())))
