"""Key bindings of interactive mode, remappable in ``<agent dir>/keybindings.json``.

The file uses pi 1.6.0's format: an object from action ids (``app.model.cycleForward``,
``tui.input.newLine`` … or the older names such as ``cycleModelForward``) to a key or
a list of keys, in pi's notation: ``ctrl+p``, ``shift+ctrl+p``, ``alt+up``,
``shift+tab``, ``escape``, ``f5`` … An empty list switches an action off. Unknown
actions, keys pi cannot read and an unreadable file are reported in one line each;
the defaults then stay in force.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prompt_toolkit.input.ansi_escape_sequences import ANSI_SEQUENCES
from prompt_toolkit.keys import Keys

from ..._paths import agent_dir

KEYBINDINGS_FILE = "keybindings.json"


@dataclass(frozen=True)
class Action:
    id: str
    defaults: tuple[str, ...]
    description: str


ACTIONS: tuple[Action, ...] = (
    Action("tui.input.submit", ("enter",), "Send the message (steer while pi works)"),
    Action("tui.input.newLine", ("shift+enter", "ctrl+j"), "New line"),
    Action("app.message.followUp", ("alt+enter",), "Queue a follow-up message (new line when idle)"),
    Action("app.message.dequeue", ("alt+up",), "Take queued messages back into the input line"),
    Action("app.interrupt", ("escape",), "Abort the current work; twice on an empty line: doubleEscapeAction"),
    Action("app.clear", ("ctrl+c",), "Clear the input line (abort while pi works); twice exits"),
    Action("app.exit", ("ctrl+d",), "Exit when the input line is empty"),
    Action("app.suspend", ("ctrl+z",), "Suspend pi to the background (fg brings it back)"),
    Action("app.thinking.cycle", ("shift+tab",), "Cycle the thinking level"),
    Action("app.model.cycleForward", ("ctrl+p",), "Next model of the scope (/scoped-models, --models)"),
    Action("app.model.cycleBackward", ("shift+ctrl+p",), "Previous model of the scope"),
    Action("app.model.select", ("ctrl+l",), "Open the model picker"),
    Action("app.tools.expand", ("ctrl+o",), "Expand or collapse tool output"),
    Action("app.thinking.toggle", ("ctrl+t",), "Show or hide thinking blocks"),
    Action("app.editor.external", ("ctrl+g",), "Edit the draft in $VISUAL / $EDITOR (externalEditor)"),
    Action("app.message.copy", ("ctrl+x",), "Copy the last answer"),
    Action("app.clipboard.pasteImage", ("ctrl+v",), "Paste an image (or text) from the clipboard"),
    Action("app.session.new", (), "Start a new session"),
    Action("app.session.tree", (), "Open the session tree"),
    Action("app.session.fork", (), "Fork the session"),
    Action("app.session.resume", (), "Resume a session"),
)
PICKER_KEYS: tuple[tuple[str, tuple[Action, ...]], ...] = (
    (
        "/tree",
        (
            Action("app.tree.editLabel", ("shift+l",), "Edit the label of the entry"),
            Action("app.tree.foldOrUp", ("ctrl+left", "alt+left"), "Fold the branch, or move up"),
            Action("app.tree.unfoldOrDown", ("ctrl+right", "alt+right"), "Unfold the branch, or move down"),
            Action("app.tree.filter.default", ("ctrl+d",), "Filter: default"),
            Action("app.tree.filter.noTools", ("ctrl+t",), "Filter: no tool results"),
            Action("app.tree.filter.userOnly", ("ctrl+u",), "Filter: your messages only"),
            Action("app.tree.filter.labeledOnly", ("ctrl+l",), "Filter: labelled entries only"),
            Action("app.tree.filter.all", ("ctrl+a",), "Filter: everything"),
            Action("app.tree.filter.cycleForward", ("ctrl+o",), "Next filter"),
            Action("app.tree.filter.cycleBackward", ("shift+ctrl+o",), "Previous filter"),
        ),
    ),
    (
        "Session picker (/resume)",
        (
            Action("app.session.rename", ("ctrl+r",), "Rename the session"),
            Action("app.session.delete", ("ctrl+d",), "Delete the session"),
            Action("app.session.toggleSort", ("ctrl+s",), "Sort: recent / created / name"),
            Action("app.session.toggleNamedFilter", ("ctrl+n",), "Named sessions only"),
            Action("app.session.togglePath", ("ctrl+p",), "Show paths"),
            Action("tui.input.tab", ("tab",), "This folder / every folder"),
        ),
    ),
    (
        "/scoped-models",
        (
            Action("app.models.toggle", ("space",), "Enable or disable the model (Enter too)"),
            Action("app.models.enableAll", ("ctrl+a",), "Enable all"),
            Action("app.models.clearAll", ("ctrl+x",), "Clear all"),
            Action("app.models.toggleProvider", ("ctrl+p",), "Enable or disable the provider's models"),
            Action("app.models.save", ("ctrl+s",), "Save to enabledModels"),
        ),
    ),
    (
        "Fullscreen transcript (--tui-mode fullscreen)",
        (
            Action("tui.altScreen.pageUp", ("pageup",), "Scroll the transcript up a page"),
            Action("tui.altScreen.pageDown", ("pagedown",), "Scroll the transcript down a page"),
            Action("tui.altScreen.halfPageUp", (), "Scroll up half a page"),
            Action("tui.altScreen.halfPageDown", (), "Scroll down half a page"),
            Action("tui.altScreen.lineUp", (), "Scroll up a line"),
            Action("tui.altScreen.lineDown", (), "Scroll down a line"),
            Action("tui.altScreen.previousPrompt", ("ctrl+shift+up",), "Jump to the previous message of yours"),
            Action("tui.altScreen.nextPrompt", ("ctrl+shift+down",), "Jump to the next message of yours"),
            Action("tui.altScreen.search", ("ctrl+shift+f",), "Search the transcript"),
            Action("tui.altScreen.searchNext", ("enter", "ctrl+g"), "While searching: the next match (upwards)"),
            Action("tui.altScreen.searchPrevious", ("shift+enter", "ctrl+shift+g"), "While searching: the match below"),
            Action("tui.altScreen.searchClose", ("escape",), "Close the search"),
            Action("tui.altScreen.top", ("ctrl+home",), "Scroll to the beginning of the transcript"),
            Action("tui.altScreen.bottom", ("ctrl+end",), "Scroll to the end and follow new output"),
        ),
    ),
)
"""Keys of the pickers (remappable like the others)."""
EDITOR_ACTIONS: tuple[tuple[Action, str], ...] = (
    (Action("tui.editor.cursorUp", ("up",), "Cursor up (older history on the first line)"), "auto-up"),
    (Action("tui.editor.cursorDown", ("down",), "Cursor down (newer history on the last line)"), "auto-down"),
    (Action("tui.editor.historyPrevious", (), "Previous history entry"), "previous-history"),
    (Action("tui.editor.historyNext", (), "Next history entry"), "next-history"),
    (Action("tui.editor.cursorLeft", ("left", "ctrl+b"), "Cursor left"), "backward-char"),
    (Action("tui.editor.cursorRight", ("right", "ctrl+f"), "Cursor right"), "forward-char"),
    (Action("tui.editor.cursorWordLeft", ("alt+left", "ctrl+left", "alt+b"), "Word left"), "backward-word"),
    (Action("tui.editor.cursorWordRight", ("alt+right", "ctrl+right", "alt+f"), "Word right"), "forward-word"),
    (Action("tui.editor.cursorLineStart", ("home", "ctrl+a"), "Line start"), "beginning-of-line"),
    (Action("tui.editor.cursorLineEnd", ("end", "ctrl+e"), "Line end"), "end-of-line"),
    (Action("tui.editor.deleteCharBackward", ("backspace",), "Delete the character before"), "backward-delete-char"),
    (Action("tui.editor.deleteCharForward", ("delete", "ctrl+d"), "Delete the character after"), "delete-char"),
    (
        Action("tui.editor.deleteWordBackward", ("ctrl+w", "alt+backspace"), "Delete the word before"),
        "unix-word-rubout",
    ),
    (Action("tui.editor.deleteWordForward", ("alt+d", "alt+delete"), "Delete the word after"), "kill-word"),
    (Action("tui.editor.deleteToLineStart", ("ctrl+u",), "Delete to the line start"), "unix-line-discard"),
    (Action("tui.editor.deleteToLineEnd", ("ctrl+k",), "Delete to the line end"), "kill-line"),
    (Action("tui.editor.yank", ("ctrl+y",), "Paste the text deleted last"), "yank"),
    (Action("tui.editor.yankPop", ("alt+y",), "After a paste: the text deleted before"), "yank-pop"),
    (Action("tui.editor.undo", ("ctrl+-",), "Undo"), "undo"),
)
"""The input line's editing actions with the readline command (prompt_toolkit's named
commands, or ``auto-up`` / ``auto-down``) a remapped key runs. prompt_toolkit's own
editing keys stay bound: a key remapped here is added to them."""
UNSUPPORTED: dict[str, str] = {
    "tui.editor.jumpForward": "no jump-to-character in this input line",
    "tui.editor.jumpBackward": "no jump-to-character in this input line",
    "tui.editor.pageUp": "the input line does not scroll by pages",
    "tui.editor.pageDown": "the input line does not scroll by pages",
    "tui.input.copy": "no text selection in this TUI (the terminal copies)",
    "tui.select.up": "the pickers use ↑",
    "tui.select.down": "the pickers use ↓",
    "tui.select.pageUp": "the pickers use PageUp",
    "tui.select.pageDown": "the pickers use PageDown",
    "tui.select.confirm": "the pickers use Enter",
    "tui.select.cancel": "the pickers use Esc and Ctrl+C",
    "app.session.deleteNoninvasive": "the session picker deletes with app.session.delete",
    "app.thinking.save": "/settings saves the thinking level",
    "app.tree.toggleLabelTimestamp": "/tree shows no label timestamps",
    "app.models.reorderUp": "/scoped-models keeps the models' order",
    "app.models.reorderDown": "/scoped-models keeps the models' order",
}
"""pi 1.6.0's actions this TUI has no feature for, with why: accepted in keybindings.json
(listed once, in one line, as having no effect here)."""
BY_ID = {a.id: a for a in ACTIONS}
for _title, _actions in PICKER_KEYS:
    BY_ID.update({a.id: a for a in _actions})
BY_ID.update({a.id: a for a, _command in EDITOR_ACTIONS})

LEGACY_NAMES = {
    "submit": "tui.input.submit",
    "newLine": "tui.input.newLine",
    "followUp": "app.message.followUp",
    "dequeue": "app.message.dequeue",
    "interrupt": "app.interrupt",
    "clear": "app.clear",
    "exit": "app.exit",
    "cycleThinkingLevel": "app.thinking.cycle",
    "cycleModelForward": "app.model.cycleForward",
    "cycleModelBackward": "app.model.cycleBackward",
    "selectModel": "app.model.select",
    "expandTools": "app.tools.expand",
    "toggleThinking": "app.thinking.toggle",
    "externalEditor": "app.editor.external",
    "pasteImage": "app.clipboard.pasteImage",
    "newSession": "app.session.new",
    "tree": "app.session.tree",
    "fork": "app.session.fork",
    "resume": "app.session.resume",
}

# Keys terminals only report with the kitty keyboard protocol or xterm's
# modifyOtherKeys: their sequences are taught to prompt_toolkit as spare function keys.
_EXTRA_SEQUENCES: dict[str, tuple[tuple[str, ...], Keys]] = {
    "shift+enter": (("\x1b[13;2u", "\x1b[27;2;13~"), Keys.F20),
    "shift+ctrl+p": (("\x1b[112;6u", "\x1b[27;6;112~", "\x1b[80;6u"), Keys.F21),
    "ctrl+shift+p": (("\x1b[112;6u", "\x1b[27;6;112~", "\x1b[80;6u"), Keys.F21),
    "shift+ctrl+o": (("\x1b[111;6u", "\x1b[27;6;111~", "\x1b[79;6u"), Keys.F23),
    "ctrl+shift+o": (("\x1b[111;6u", "\x1b[27;6;111~", "\x1b[79;6u"), Keys.F23),
    "ctrl+-": (("\x1b[45;5u", "\x1b[27;5;45~"), Keys.F24),
    "ctrl+enter": (("\x1b[13;5u", "\x1b[27;5;13~"), Keys.F22),
    "ctrl+shift+f": (("\x1b[102;6u", "\x1b[27;6;102~", "\x1b[70;6u"), Keys.F19),
    "shift+ctrl+f": (("\x1b[102;6u", "\x1b[27;6;102~", "\x1b[70;6u"), Keys.F19),
    "ctrl+shift+g": (("\x1b[103;6u", "\x1b[27;6;103~", "\x1b[71;6u"), Keys.F18),
    "shift+ctrl+g": (("\x1b[103;6u", "\x1b[27;6;103~", "\x1b[71;6u"), Keys.F18),
}
_NAMED = {
    "enter": "enter",
    "return": "enter",
    "escape": "escape",
    "esc": "escape",
    "tab": "tab",
    "space": "space",
    "backspace": "backspace",
    "delete": "delete",
    "insert": "insert",
    "up": "up",
    "down": "down",
    "left": "left",
    "right": "right",
    "home": "home",
    "end": "end",
    "pageup": "pageup",
    "pagedown": "pagedown",
}
_installed = False


def install_sequences() -> None:
    """Teach prompt_toolkit the escape sequences of the extra keys (once)."""
    global _installed
    if _installed:
        return
    for sequences, key in _EXTRA_SEQUENCES.values():
        for sequence in sequences:
            ANSI_SEQUENCES.setdefault(sequence, key)
    # prompt_toolkit reads xterm's Ctrl+Shift+Up as Ctrl+Shift+Down and the other way round
    ANSI_SEQUENCES["\x1b[1;6A"] = Keys.ControlShiftUp
    ANSI_SEQUENCES["\x1b[1;6B"] = Keys.ControlShiftDown
    _installed = True


class KeyError_(ValueError):
    pass


def to_prompt_toolkit(key: str) -> tuple[str, ...]:
    """pi's key notation as prompt_toolkit keys: ``ctrl+p`` -> ``("c-p",)``,
    ``alt+up`` -> ``("escape", "up")``, ``shift+tab`` -> ``("s-tab",)``. Raises
    :class:`KeyError_` for a key this terminal layer cannot tell apart."""
    text = key.strip().lower()
    if text in _EXTRA_SEQUENCES:
        return (_EXTRA_SEQUENCES[text][1].value,)
    parts = text.split("+")
    base, mods = parts[-1], set(parts[:-1])
    unknown = mods - {"ctrl", "alt", "shift", "meta", "option"}
    if unknown or not base:
        raise KeyError_(f"unknown modifier in {key!r}")
    alt = bool(mods & {"alt", "meta", "option"})
    ctrl, shift = "ctrl" in mods, "shift" in mods
    if base in _NAMED:
        name = _NAMED[base]
        if name == "tab" and shift and not ctrl:
            name = "s-tab"
        elif ctrl and shift and name in ("up", "down", "left", "right", "home", "end"):
            name = f"c-s-{name}"
        elif ctrl and name in ("up", "down", "left", "right", "home", "end", "delete", "pageup", "pagedown"):
            name = f"c-{name}"
        elif shift and name in ("up", "down", "left", "right", "home", "end", "delete"):
            name = f"s-{name}"
        elif ctrl or shift:
            raise KeyError_(f"{key!r} is not reported by terminals as a key of its own")
        if name == "space":
            name = " "
        return ("escape", name) if alt else (name,)
    if len(base) == 1:
        if ctrl and shift:
            raise KeyError_(f"{key!r} is not reported by terminals as a key of its own")
        if ctrl:
            if not (base.isalpha() or base in "@\\]^_"):
                raise KeyError_(f"{key!r} is not reported by terminals as a key of its own")
            name = f"c-{base}"
        else:
            name = base.upper() if shift else base
        return ("escape", name) if alt else (name,)
    if base.startswith("f") and base[1:].isdigit() and 1 <= int(base[1:]) <= 19 and not (mods - {"shift", "ctrl"}):
        prefix = "c-" if ctrl else "s-" if shift else ""
        return (f"{prefix}{base}",)
    raise KeyError_(f"unknown key {key!r}")


def display(key: str) -> str:
    """``shift+ctrl+p`` -> ``Shift+Ctrl+P``."""
    return "+".join(part.capitalize() if len(part) > 1 else part.upper() for part in key.split("+"))


@dataclass
class Keymap:
    bindings: dict[str, list[str]] = field(default_factory=dict)
    """Action id -> keys in pi's notation."""
    problems: list[str] = field(default_factory=list)
    path: Path | None = None
    inert: list[str] = field(default_factory=list)
    """Ids of ``keybindings.json`` this TUI accepts but has no feature for (:data:`UNSUPPORTED`)."""
    text: str = ""
    """What ``keybindings.json`` held when read (``""``: no file)."""

    def keys(self, action: str) -> list[tuple[str, ...]]:
        out = []
        for key in self.bindings.get(action, []):
            try:
                out.append(to_prompt_toolkit(key))
            except KeyError_:
                continue
        return out

    def picker_actions(self, actions: Sequence[tuple[str, str]]) -> list[tuple[tuple[str, ...], str, str]]:
        """``(action id, name)`` pairs as a picker's extra keys: ``(keys, name, hint)``."""
        out: list[tuple[tuple[str, ...], str, str]] = []
        for action_id, name in actions:
            keys = self.keys(action_id)
            hint = f"{display(self.bindings[action_id][0])} {BY_ID[action_id].description.lower()}" if keys else ""
            for index, key in enumerate(keys):
                out.append((key, name, hint if index == 0 else ""))
        return out

    def owner(self, keys: tuple[str, ...]) -> str | None:
        """The input line's action bound to ``keys``, if any."""
        for action in ACTIONS:
            if keys in self.keys(action.id):
                return action.id
        return None

    def first_key(self, action: str) -> str:
        """The first key of ``action`` for a hint (``Ctrl+O``), or its id when unbound."""
        keys = self.bindings.get(action, [])
        return display(keys[0]) if keys else action

    def describe(self, action: str) -> str:
        keys = self.bindings.get(action, [])
        return ", ".join(display(k) for k in keys) if keys else "(unbound)"


def load_keymap(directory: Path | None = None) -> Keymap:
    """The defaults, then ``keybindings.json`` of the agent folder on top."""
    path = (directory or agent_dir()) / KEYBINDINGS_FILE
    keymap = Keymap({a.id: list(a.defaults) for a in BY_ID.values()}, path=path)
    if not path.exists():
        return keymap
    try:
        keymap.text = path.read_text(encoding="utf-8-sig")
        raw: Any = json.loads(keymap.text)
    except (OSError, ValueError) as exc:
        keymap.problems.append(f"{path}: cannot read it ({exc}); the default keys apply")
        return keymap
    if not isinstance(raw, dict):
        keymap.problems.append(f"{path}: must hold a JSON object of action -> key(s); the default keys apply")
        return keymap
    for name, value in raw.items():
        if name == "$schema":
            continue
        action = LEGACY_NAMES.get(name, name)
        if action in UNSUPPORTED:
            keymap.inert.append(action)
            continue
        if action not in keymap.bindings:
            keymap.problems.append(f"{path}: unknown action {name!r} (/hotkeys lists them)")
            continue
        keys = [value] if isinstance(value, str) else value
        if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
            keymap.problems.append(f"{path}: {name} must be a key or a list of keys, found {json.dumps(value)}")
            continue
        good = []
        for key in keys:
            try:
                to_prompt_toolkit(key)
                good.append(key.strip().lower())
            except KeyError_ as exc:
                keymap.problems.append(f"{path}: {name}: {exc}")
        keymap.bindings[action] = good
    if keymap.inert:
        keymap.problems.append(f"{path}: no effect in this TUI (no such feature here): {', '.join(keymap.inert)}")
    return keymap


def remapped_editor_actions(keymap: Keymap) -> list[tuple[str, list[tuple[str, ...]]]]:
    """``(readline command, keys)`` of the editing actions ``keybindings.json`` remaps."""
    out = []
    for action, command in EDITOR_ACTIONS:
        if keymap.bindings.get(action.id) != list(action.defaults):
            keys = keymap.keys(action.id)
            if keys:
                out.append((command, keys))
    return out


def external_editor_command(settings_value: Any) -> str | None:
    """The command Ctrl+G runs: ``externalEditor``, then ``$VISUAL``, ``$EDITOR``."""
    for candidate in (settings_value, os.environ.get("VISUAL"), os.environ.get("EDITOR")):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return None
