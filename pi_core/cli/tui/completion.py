"""Tab completion of the input line: ``/commands`` (built-in, plugin, prompt
templates, ``/skill:name``), their arguments, and ``@path`` file references."""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document

MAX_PATHS = 200


@dataclass(frozen=True)
class CommandInfo:
    name: str
    description: str = ""
    source: str = "built-in"


ArgumentValues = Callable[[str, str], Iterable[tuple[str, str]]]
"""``(command name, argument prefix)`` -> ``(value, description)`` pairs."""


def _coerce(item: Any) -> tuple[str, str] | None:
    if isinstance(item, str):
        return item, ""
    if isinstance(item, dict):
        value = item.get("value") or item.get("label")
        return (str(value), str(item.get("description") or "")) if value else None
    value = getattr(item, "value", None) or getattr(item, "label", None)
    return (str(value), str(getattr(item, "description", "") or "")) if value else None


def plugin_argument_values(provider: Callable[[str], Any] | None, prefix: str) -> list[tuple[str, str]]:
    """Values from a plugin command's ``get_argument_completions`` (strings, dicts or
    objects with ``value``/``label`` and ``description``); a failing or async
    provider gives nothing."""
    if provider is None:
        return []
    try:
        result = provider(prefix)
    except Exception:
        return []
    if inspect.isawaitable(result):
        close = getattr(result, "close", None)
        if close is not None:
            close()
        return []
    return [pair for pair in map(_coerce, result or []) if pair is not None]


def path_completions(word: str, cwd: str) -> Iterator[Completion]:
    """Completions of an ``@path`` word (``word`` includes the ``@``)."""
    typed = word[1:]
    expanded = os.path.expanduser(typed)
    directory, partial = os.path.split(expanded)
    base = directory if os.path.isabs(directory) else os.path.join(cwd, directory)
    try:
        names = sorted(os.listdir(base or cwd))
    except OSError:
        return
    shown_dir = os.path.split(typed)[0]
    matches = [n for n in names if n.startswith(partial)] or [n for n in names if n.lower().startswith(partial.lower())]
    count = 0
    for name in matches:
        if name.startswith(".") and not partial.startswith("."):
            continue
        is_dir = os.path.isdir(os.path.join(base, name))
        text = "@" + (os.path.join(shown_dir, name) if shown_dir else name) + ("/" if is_dir else "")
        yield Completion(text, start_position=-len(word), display=name + ("/" if is_dir else ""))
        count += 1
        if count >= MAX_PATHS:
            return


class PiCompleter(Completer):
    def __init__(
        self, commands: Callable[[], list[CommandInfo]], arguments: ArgumentValues, cwd: Callable[[], str]
    ) -> None:
        self.commands = commands
        self.arguments = arguments
        self.cwd = cwd

    def get_completions(self, document: Document, complete_event: CompleteEvent) -> Iterator[Completion]:
        text = document.text_before_cursor
        word = document.get_word_before_cursor(WORD=True)
        if word.startswith("@"):
            yield from path_completions(word, self.cwd())
            return
        if text.startswith("/") and "\n" not in text:
            name, space, arg = text[1:].partition(" ")
            if not space:
                yield from self._command_names(name)
                return
            for value, meta in self.arguments(name, arg):
                if value.startswith(arg) or arg.lower() in value.lower():
                    yield Completion(value, start_position=-len(arg), display_meta=meta)

    def _command_names(self, prefix: str) -> Iterator[Completion]:
        commands = self.commands()
        first = [c for c in commands if c.name.startswith(prefix)]
        rest = [c for c in commands if c not in first and prefix and prefix.lower() in c.name.lower()]
        for command in first + rest:
            meta = command.description if command.source == "built-in" else f"{command.description} ({command.source})"
            yield Completion("/" + command.name, start_position=-(len(prefix) + 1), display_meta=meta.strip())


def wants_completion_while_typing(text: str) -> bool:
    """Open the menu by itself only for ``/commands`` and ``@paths``."""
    if text.startswith("/") and "\n" not in text:
        return True
    word = text.rsplit(None, 1)[-1] if text.strip() else ""
    return word.startswith("@") and not text[-1:].isspace()
