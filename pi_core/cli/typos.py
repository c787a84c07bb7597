"""Whether the first word of ``pi WORD ...`` is a mistyped command name.

``pi instal foo`` would otherwise be sent to the model as a prompt (a paid turn). The
rule must catch the usual slips (``instal``, ``sesions``, ``modles``, ``extension``,
``hepl``, an unfinished ``complet`` or ``complete``) and leave the words that begin
ordinary prompts alone (``test``, ``fix``, ``explain``, ``hello``, ``refactor``, and
``lint``, ``last``, ``helm``, ``versions``, ``compaction``, which are one or two edits
from a command). A WORD is taken for a command NAME when:

* WORD has 5 letters or more and is one edit from NAME: a letter left out, added,
  replaced, or two neighbours swapped (the optimal-string-alignment Damerau-Levenshtein
  distance is 1). Two edits were measured against a 100,000-word English dictionary:
  they take ``versions``, ``passions`` and ``sections`` for ``sessions`` and
  ``compaction`` and ``compilation`` for ``completion``;
* WORD has 4 letters and is NAME with two neighbouring letters swapped (``hepl``,
  ``lsit``): one edit of any other kind turns ``list`` and ``help`` into ``lint``,
  ``last``, ``gist``, ``held``, ``helm``;
* or WORD, less at most its last letter, is the beginning of NAME, at least 7 letters of
  it (an unfinished name: ``complet``, ``complete``, ``extensi``; 6 would take
  ``complex`` for ``completion``).

Words of 3 letters or fewer are never taken (``cap`` is ``acp`` with a swap).
"""

from __future__ import annotations

from collections.abc import Iterable

#: an unfinished name matches on at least this many of its first letters
MIN_PREFIX = 7


def distance(a: str, b: str) -> int:
    """The optimal-string-alignment Damerau-Levenshtein distance: how many letters left
    out, added or replaced, or pairs of neighbouring letters swapped, turn ``a`` into
    ``b`` (no substring is edited twice)."""
    if a == b:
        return 0
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, before[j - 2] + 1)
            current[j] = best
        before, previous = previous, current
    return previous[-1]


def _swapped(word: str, name: str) -> bool:
    """``word`` is ``name`` with one pair of neighbouring letters swapped."""
    diff = [i for i, (x, y) in enumerate(zip(word, name, strict=True)) if x != y]
    return (
        len(diff) == 2 and diff[1] == diff[0] + 1 and word[diff[0]] == name[diff[1]] and word[diff[1]] == name[diff[0]]
    )


def looks_like(word: str, name: str) -> bool:
    """Whether ``word`` (not ``name`` itself) is taken for a slip of ``name`` (the rule
    in this module's docstring)."""
    if word == name or len(word) < 4:
        return False
    if len(word) == 4:
        if len(name) == 4 and _swapped(word, name):
            return True
    elif distance(word, name) <= 1:
        return True
    stem = word if name.startswith(word) else word[:-1]
    return len(stem) >= MIN_PREFIX and name.startswith(stem)


def closest(word: str, names: Iterable[str]) -> str | None:
    """The name ``word`` looks like (the nearest one; on a tie the first), or ``None``."""
    candidates = [name for name in names if looks_like(word, name)]
    if not candidates:
        return None
    return min(candidates, key=lambda name: distance(word, name))
