"""Which model a pattern names: pi 1.6.0's rules for ``--model``, ``--models`` and
``provider/id[:thinking]`` references.

The rules work on light references (provider, id, name), so that choosing among the
whole catalogue builds no ``Model`` object; the registry materialises the one chosen.

* ``provider/rest`` names the longest matching provider id, but is only a hint: the
  whole text may also be a model id elsewhere (a gateway's ``zai/glm-5``). The named
  provider wins when it has a credential; otherwise a sole usable exact-id match wins.
* An exact id offered by several providers picks the only one with a credential, else
  it is ambiguous.
* Otherwise (``fuzzy``) a part of an id or name matches; among several providers the
  usable ones are preferred; aliases (not ending in ``-YYYYMMDD``) beat dated ids, then
  the greatest id wins. The same id left on several providers is ambiguous.
* ``:<thinking>`` at the end is a thinking level (``strict``: an invalid level makes the
  pattern unknown; ``lenient``: it is dropped with a warning).

Ids sort as pi 1.6.0 sorts them, with JavaScript's ``localeCompare`` (ICU root
collation): punctuation before digits before letters, case second (:func:`collation_key`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, Literal, Protocol, TypeVar

from pi_hookspecs import THINKING_LEVELS


class ModelLike(Protocol):
    @property
    def provider(self) -> str: ...

    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...


M = TypeVar("M", bound=ModelLike)
T = TypeVar("T")

ThinkingSuffix = Literal["strict", "lenient", "none"]

_DATED = re.compile(r"-\d{8}$")

# ICU root collation of ASCII punctuation and symbols (all before digits and letters).
_PUNCTUATION = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"
_PUNCTUATION_RANK = {c: i for i, c in enumerate(_PUNCTUATION)}


def collation_key(text: str) -> tuple[tuple[tuple[int, int], ...], tuple[int, ...]]:
    """A sort key ordering strings as JavaScript's ``a.localeCompare(b)`` does for ids:
    whitespace, then punctuation, then digits, then letters (case-insensitively),
    lower case before upper case as a tie-break."""
    primary: list[tuple[int, int]] = []
    tertiary: list[int] = []
    for char in text:
        if char.isspace():
            primary.append((0, ord(char)))
        elif char in _PUNCTUATION_RANK:
            primary.append((1, _PUNCTUATION_RANK[char]))
        elif char.isdigit():
            primary.append((3, ord(char)))
        elif char.isalpha():
            primary.append((4, ord(char.lower())))
        else:
            primary.append((2, ord(char)))
        tertiary.append(1 if char.isupper() else 0)
    return tuple(primary), tuple(tertiary)


def is_alias(model_id: str) -> bool:
    """Not a dated snapshot (``claude-sonnet-4-5`` rather than ``claude-sonnet-4-5-20250929``)."""
    return model_id.endswith("-latest") or not _DATED.search(model_id)


def split_thinking_suffix(text: str) -> tuple[str, str] | None:
    """``("base", "level")`` when ``text`` ends in ``:<valid thinking level>``."""
    base, sep, suffix = text.rpartition(":")
    if not sep or suffix not in THINKING_LEVELS:
        return None
    return base, suffix


def split_provider_prefix(text: str, providers: Iterable[str]) -> tuple[str, str] | None:
    """``(provider, rest)`` for ``provider/rest`` with the longest known provider id
    (ids may contain ``/`` themselves)."""
    lower = text.lower()
    best: tuple[str, str] | None = None
    for provider in providers:
        prefix = provider.strip().lower()
        if not prefix or (best is not None and len(best[0]) >= len(provider)):
            continue
        slash = lower.find("/", len(prefix))
        if slash == -1 or lower[:slash].strip() != prefix:
            continue
        rest = text[slash + 1 :].strip()
        if rest:
            best = (provider, rest)
    return best


def _providers_of(models: Iterable[ModelLike]) -> list[str]:
    return list(dict.fromkeys(m.provider for m in models))


class Target(Generic[T]):
    """Where an unknown model id would go: the provider (its models, the anchor first),
    the text after ``provider/``, the id without a thinking suffix, and the suffix."""

    __slots__ = ("model_id", "model_text", "provider", "provider_models", "thinking_level")

    def __init__(
        self, provider: str, provider_models: list[T], model_text: str, model_id: str, thinking_level: str | None
    ) -> None:
        self.provider = provider
        self.provider_models = provider_models
        self.model_text = model_text
        self.model_id = model_id
        self.thinking_level = thinking_level


class Reference(Generic[T]):
    """The outcome of :func:`resolve_reference`: ``status`` is ``resolved`` (``model``),
    ``ambiguous`` (``candidates``, ``usable_count`` of them with a credential) or
    ``not-found`` (with a ``target`` when the text names a provider)."""

    __slots__ = ("candidates", "model", "status", "target", "thinking_level", "usable_count", "warning")

    def __init__(
        self,
        status: Literal["resolved", "ambiguous", "not-found"],
        model: T | None = None,
        *,
        candidates: list[T] | None = None,
        usable_count: int = 0,
        target: Target[T] | None = None,
    ) -> None:
        self.status = status
        self.model = model
        self.thinking_level: str | None = None
        self.warning: str | None = None
        self.candidates: list[T] = candidates or []
        self.usable_count = usable_count
        self.target = target


def resolve_reference(
    text: str,
    models: Sequence[M],
    usable: Callable[[str], bool],
    *,
    provider: str | None = None,
    thinking_suffix: ThinkingSuffix = "strict",
    fuzzy: bool = True,
) -> Reference[M]:
    """pi 1.6.0's ``resolveModelReference``: ``usable(provider)`` only breaks ties
    between providers, so a unique match resolves without credentials."""
    text = text.strip()
    if not text:
        return Reference("not-found")
    constraint = provider.lower() if provider else None
    pool = [m for m in models if m.provider.lower() == constraint] if constraint else list(models)
    providers = _providers_of(pool)
    result = _resolve_text(text, pool, providers, usable, thinking_suffix, fuzzy)
    if result.status != "not-found":
        return result
    split = split_provider_prefix(text, providers)
    if constraint:
        anchor = pool[0] if pool else None
    else:
        anchor = next((m for m in pool if split is not None and m.provider == split[0]), None)
    if anchor is None:
        return result
    model_text = split[1] if split is not None else text
    suffix = None if thinking_suffix == "none" else split_thinking_suffix(model_text)
    return Reference(
        "not-found",
        target=Target(
            provider=anchor.provider,
            provider_models=[anchor, *(m for m in pool if m.provider == anchor.provider and m is not anchor)],
            model_text=model_text,
            model_id=suffix[0] if suffix else model_text,
            thinking_level=suffix[1] if suffix else None,
        ),
    )


def _resolve_text(
    text: str,
    pool: list[M],
    providers: list[str],
    usable: Callable[[str], bool],
    thinking_suffix: ThinkingSuffix,
    fuzzy: bool,
) -> Reference[M]:
    reference = _select_reference(text, pool, providers, fuzzy, usable)
    if reference is not None:
        return reference
    if fuzzy:
        found = _select_fuzzy(fuzzy_matches(text, pool), usable)
        if found is not None:
            return found
    if thinking_suffix == "none":
        return Reference("not-found")
    thinking = split_thinking_suffix(text)
    if thinking is not None:
        inner = _resolve_text(thinking[0], pool, providers, usable, thinking_suffix, fuzzy)
        if inner.status == "not-found":
            return inner
        inner.thinking_level = None if inner.warning else thinking[1]
        return inner
    if thinking_suffix == "strict":
        return Reference("not-found")
    base, sep, suffix = text.rpartition(":")
    if not sep:
        return Reference("not-found")
    inner = _resolve_text(base, pool, providers, usable, thinking_suffix, fuzzy)
    if inner.status == "not-found":
        return inner
    inner.thinking_level = None
    inner.warning = f'Invalid thinking level "{suffix}" in pattern "{text}". Using default instead.'
    return inner


def _select_reference(
    text: str, pool: list[M], providers: list[str], fuzzy: bool, usable: Callable[[str], bool]
) -> Reference[M] | None:
    lower = text.lower()
    raw = [m for m in pool if m.id.lower() == lower]
    split = split_provider_prefix(text, providers)
    named: M | None = None
    if split is not None:
        own = [m for m in pool if m.provider == split[0]]
        rest = split[1].lower()
        named = next((m for m in own if m.id.lower() == rest), None)
        if named is None:
            named = next((m for m in raw if m.provider == split[0]), None)
        if named is None and fuzzy:
            named = best_fuzzy_match(fuzzy_matches(split[1], own))
    others = [m for m in raw if m is not named]
    candidates = [named, *others] if named is not None else others
    if not candidates:
        return None
    if len({m.provider for m in candidates}) == 1:
        return Reference("resolved", candidates[0])
    if named is not None and usable(named.provider):
        return Reference("resolved", named)
    usable_others = [m for m in others if usable(m.provider)]
    if len(usable_others) == 1:
        return Reference("resolved", usable_others[0])
    if not usable_others and named is not None:
        return Reference("resolved", named)
    return Reference("ambiguous", candidates=candidates, usable_count=len(usable_others))


def fuzzy_matches(text: str, models: Iterable[M]) -> list[M]:
    """The models whose id or name contains ``text`` (case-insensitively)."""
    lower = text.lower()
    return [m for m in models if lower in m.id.lower() or (m.name and lower in m.name.lower())]


def _select_fuzzy(matches: list[M], usable: Callable[[str], bool]) -> Reference[M] | None:
    if not matches:
        return None
    several = len({m.provider for m in matches}) > 1
    usable_matches = [m for m in matches if usable(m.provider)] if several else []
    pool = usable_matches or matches
    best = best_fuzzy_match(pool)
    if best is None:
        return None
    tied = [m for m in pool if m.id == best.id]
    if len({m.provider for m in tied}) == 1:
        return Reference("resolved", best)
    return Reference("ambiguous", candidates=tied, usable_count=len(tied) if usable_matches else 0)


def best_fuzzy_match(matches: Sequence[M]) -> M | None:
    """Aliases before dated ids, then the greatest id (the first of equals)."""
    aliases = [m for m in matches if is_alias(m.id)]
    pool = aliases or list(matches)
    if not pool:
        return None
    return max(pool, key=lambda m: collation_key(m.id))


@functools.lru_cache(maxsize=64)
def glob_regex(pattern: str) -> Any:
    """A case-insensitive matcher (``.match(text) -> bool``) for a glob as ``minimatch``
    reads it, from wcmatch: ``*`` and ``?`` stay within one ``/`` segment, ``**`` as a
    whole segment crosses them, ``[...]`` is a character class, ``{a,b}`` an alternative."""
    from wcmatch import glob  # kept off the startup path: only a --models glob needs it

    return glob.compile(pattern, flags=glob.GLOBSTAR | glob.BRACE | glob.DOTGLOB | glob.IGNORECASE | glob.FORCEUNIX)


def sort_refs(refs: Iterable[str]) -> list[str]:
    return sorted(refs, key=collation_key)


def resolve_scope(patterns: Iterable[str], models: Sequence[M]) -> tuple[list[tuple[M, str | None]], list[str]]:
    """pi 1.6.0's ``resolveModelScopeFromModels`` (``--models``, ``enabledModels``):
    every model of ``models`` the patterns select (exact ids, fuzzy matches,
    case-insensitive globs, ``:<thinking>`` suffixes) and the warnings. Every model is
    usable here, so a pattern several providers match adds each, with a warning."""
    selected: list[tuple[M, str | None]] = []
    seen: set[tuple[str, str]] = set()
    warnings: list[str] = []

    def add(model: M, level: str | None) -> None:
        key = (model.provider, model.id)
        if key not in seen:
            seen.add(key)
            selected.append((model, level))

    def ambiguous(pattern: str, candidates: Iterable[M]) -> None:
        names = ", ".join(sorted({m.provider for m in candidates}, key=collation_key))
        warnings.append(f'Pattern "{pattern}" matches several providers: {names}. Use provider/id to choose one.')

    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            thinking = split_thinking_suffix(pattern)
            glob, level = thinking if thinking else (pattern, None)
            exact = resolve_reference(glob, models, lambda _p: True, thinking_suffix="none", fuzzy=False)
            if exact.status == "resolved" and exact.model is not None:
                matches = [exact.model]
            elif exact.status == "ambiguous":
                matches = exact.candidates
                ambiguous(pattern, matches)
            else:
                regex = glob_regex(glob)
                matches = [m for m in models if regex.match(f"{m.provider}/{m.id}") or regex.match(m.id)]
            if not matches:
                warnings.append(f'No models match pattern "{pattern}"')
            for model in matches:
                add(model, level)
            continue
        result = resolve_reference(pattern, models, lambda _p: True, thinking_suffix="lenient", fuzzy=True)
        if result.status == "not-found":
            warnings.append(f'No models match pattern "{pattern}"')
            continue
        if result.warning:
            warnings.append(result.warning)
        if result.status == "ambiguous":
            ambiguous(pattern, result.candidates)
        found = [result.model] if result.status == "resolved" and result.model is not None else result.candidates
        for model in found:
            add(model, result.thinking_level)
    return selected, warnings
