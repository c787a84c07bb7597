"""Which tools are on at startup: ``defaultTools`` in the user's and the (trusted)
project's settings, then ``--tools`` on the command line, applied in that order over
:data:`DEFAULT_TOOLS`.

A list of plain names replaces the selection it inherits; a list of only ``+name`` /
``-name`` entries modifies it. Entries are kept as written (``*`` patterns included):
the tool registry matches them against the tools that exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from .settings import Settings

DEFAULT_TOOLS: tuple[str, ...] = ("read", "bash", "edit", "write")
"""The built-in tools on when no ``defaultTools`` or ``--tools`` says otherwise."""


def _is_modifier(entry: str) -> bool:
    return entry.startswith(("+", "-")) and len(entry) > 1


def apply_tool_selection(base: Iterable[str], entries: Sequence[str]) -> list[str]:
    """One ``defaultTools`` / ``--tools`` list applied to the selection ``base``.

    A list of only ``+name`` / ``-name`` entries changes ``base``; otherwise the plain
    names form the selection and the ``+name`` / ``-name`` entries then apply in order.
    An empty list selects nothing.
    """
    cleaned = [entry.strip() for entry in entries if entry.strip()]
    if cleaned and all(_is_modifier(entry) for entry in cleaned):
        selection = list(dict.fromkeys(base))
    else:
        selection = list(dict.fromkeys(entry for entry in cleaned if not _is_modifier(entry)))
    for entry in cleaned:
        if not _is_modifier(entry):
            continue
        name = entry[1:]
        if entry[0] == "+":
            if name not in selection:
                selection.append(name)
        elif name in selection:
            selection.remove(name)
    return selection


def resolve_default_tools(settings: Settings | None, cli_tools: Sequence[str] | None = None) -> list[str]:
    """The tools enabled at startup: ``read, bash, edit, write``, then the user's
    ``defaultTools``, then the (trusted) project's, then ``--tools`` (``cli_tools``).

    Plain names replace the inherited selection, a list of only ``+name`` / ``-name``
    entries modifies it. On the command line plain names and ``+``/``-`` entries
    cannot be mixed (``ValueError``). ``cli_tools=[]`` (``--no-tools``) selects nothing.
    Entries are returned as written (``*`` patterns included) for the tool registry to
    match.
    """
    selection = list(DEFAULT_TOOLS)
    for entries in _tool_selection_layers(settings, cli_tools):
        selection = apply_tool_selection(selection, entries)
    return selection


def removed_tools(settings: Settings | None, cli_tools: Sequence[str] | None = None) -> list[str]:
    """The names (or ``*`` patterns) of every ``-name`` entry of ``defaultTools`` and
    ``--tools``: tools the user turned off explicitly (unless a later ``+name`` or plain
    name selected them again; the tool registry checks the final selection)."""
    return [
        entry[1:]
        for entries in _tool_selection_layers(settings, cli_tools)
        for entry in entries
        if entry.startswith("-") and len(entry) > 1
    ]


def _tool_selection_layers(settings: Settings | None, cli_tools: Sequence[str] | None) -> Iterator[list[str]]:
    """The tool selection lists in the order they apply: the user's ``defaultTools``,
    the trusted project's, then ``--tools``."""
    if settings is not None:
        yield from settings.default_tools_lists()
    if cli_tools is not None:
        cleaned = [entry.strip() for entry in cli_tools if entry.strip()]
        modifiers = [entry for entry in cleaned if _is_modifier(entry)]
        if modifiers and len(modifiers) != len(cleaned):
            raise ValueError("--tools: plain tool names and +name/-name entries cannot be mixed")
        yield cleaned


__all__ = ["DEFAULT_TOOLS", "apply_tool_selection", "removed_tools", "resolve_default_tools"]
