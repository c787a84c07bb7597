"""``ctx.ui.custom()``: a plugin's own component in place of the input line.

A component is any object with ``render(width) -> list[str]`` (lines, ANSI colours
allowed) and ``handle_input(key)``; ``invalidate()`` and ``dispose()`` are optional.
The factory a plugin passes gets ``(tui, theme, keybindings, done)``:

* ``tui`` (:class:`ComponentHost`): ``width``, ``height`` and ``request_render()``;
* ``theme`` (:class:`ComponentTheme`): ``fg(token, text)``, ``bg(token, text)``,
  ``bold(text)``, ``italic(text)``, ``underline(text)``, ``dim(text)`` in the colours
  of the current theme;
* ``keybindings`` (:class:`ComponentKeys`): ``matches(key, action)`` for pi's action
  ids (``tui.select.up`` … and the input line's, as ``keybindings.json`` maps them);
* ``done(value)`` ends the component; :func:`run_component` returns ``value``.

The component runs as one inline prompt_toolkit application (like the dialogs), so it
waits for the other dialogs and the input line comes back when it is done. Keys reach
``handle_input`` in pi's notation: ``"a"``, ``"A"``, ``"enter"``, ``"escape"``,
``"up"``, ``"tab"``, ``"shift+tab"``, ``"backspace"``, ``"ctrl+c"`` … (Escape is
delivered at once, so Alt combinations arrive as ``"escape"`` and then the key).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from prompt_toolkit.application import Application
from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, to_formatted_text
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import HSplit, Layout, Window
from prompt_toolkit.layout.controls import FormattedTextControl
from prompt_toolkit.output import Output

_SELECT_DEFAULTS: dict[str, tuple[str, ...]] = {
    "tui.select.up": ("up",),
    "tui.select.down": ("down",),
    "tui.select.pageUp": ("pageUp",),
    "tui.select.pageDown": ("pageDown",),
    "tui.select.confirm": ("enter",),
    "tui.select.cancel": ("escape", "ctrl+c"),
}
"""The pickers' actions of pi 1.6.0 and their keys (this TUI's pickers use the same)."""

_NAMES: dict[str, str] = {
    Keys.ControlM.value: "enter",
    Keys.ControlJ.value: "ctrl+j",
    Keys.ControlI.value: "tab",
    Keys.BackTab.value: "shift+tab",
    Keys.ControlH.value: "backspace",
    Keys.Escape.value: "escape",
    Keys.Up.value: "up",
    Keys.Down.value: "down",
    Keys.Left.value: "left",
    Keys.Right.value: "right",
    Keys.Home.value: "home",
    Keys.End.value: "end",
    Keys.PageUp.value: "pageUp",
    Keys.PageDown.value: "pageDown",
    Keys.Delete.value: "delete",
    Keys.Insert.value: "insert",
    " ": "space",
}


def key_name(keys: list[str]) -> str:
    """prompt_toolkit's key presses as one key in pi's notation (``c-x`` -> ``ctrl+x``;
    Escape then a key -> ``alt+key``)."""
    alt = len(keys) > 1 and keys[0] == Keys.Escape.value
    key = keys[-1]
    if key in _NAMES:
        name = _NAMES[key]
    elif key.startswith("c-") and len(key) == 3:
        name = f"ctrl+{key[2:]}"
    elif key.startswith("s-"):
        name = f"shift+{key[2:]}"
    elif key.startswith("c-"):
        name = f"ctrl+{key[2:]}"
    else:
        name = key
    return f"alt+{name}" if alt else name


def _normal(key: str) -> str:
    return key.strip().lower()


class ComponentKeys:
    """``keybindings`` of a component: which keys trigger pi's actions."""

    def __init__(self, keymap: Any = None) -> None:
        self.keymap = keymap

    def keys(self, action: str) -> list[str]:
        """The keys of ``action`` in pi's notation (``keybindings.json`` wins)."""
        bindings = getattr(self.keymap, "bindings", None) or {}
        if action in bindings:
            return list(bindings[action])
        return list(_SELECT_DEFAULTS.get(action, ()))

    def matches(self, key: str, action: str) -> bool:
        """Whether ``key`` (as ``handle_input`` got it) triggers ``action``."""
        wanted = _normal(key)
        return any(_normal(bound) == wanted for bound in self.keys(action))


def _hex(colour: str | None) -> tuple[int, int, int] | None:
    if not colour or not colour.startswith("#") or len(colour) != 7:
        return None
    try:
        return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)
    except ValueError:
        return None


class ComponentTheme:
    """``theme`` of a component: ANSI styling in the current theme's colours (none with
    ``NO_COLOR`` or a colourless theme)."""

    def __init__(self, theme: Any = None) -> None:
        self.theme = theme
        self.name = getattr(theme, "name", "")

    def _colour(self, token: str) -> tuple[int, int, int] | None:
        color = getattr(self.theme, "color", None)
        return _hex(color(token)) if color is not None else None

    def fg(self, token: str, text: str) -> str:
        rgb = self._colour(token)
        return f"\x1b[38;2;{rgb[0]};{rgb[1]};{rgb[2]}m{text}\x1b[39m" if rgb else text

    def bg(self, token: str, text: str) -> str:
        rgb = self._colour(token)
        return f"\x1b[48;2;{rgb[0]};{rgb[1]};{rgb[2]}m{text}\x1b[49m" if rgb else text

    def bold(self, text: str) -> str:
        return f"\x1b[1m{text}\x1b[22m"

    def dim(self, text: str) -> str:
        return f"\x1b[2m{text}\x1b[22m"

    def italic(self, text: str) -> str:
        return f"\x1b[3m{text}\x1b[23m"

    def underline(self, text: str) -> str:
        return f"\x1b[4m{text}\x1b[24m"


class ComponentHost:
    """``tui`` of a component: the terminal's size and redrawing."""

    def __init__(self, output: Output | None = None) -> None:
        self.app: Application[Any] | None = None
        self._output = output

    @property
    def width(self) -> int:
        output = self.app.output if self.app is not None else self._output
        return output.get_size().columns if output is not None else 80

    @property
    def height(self) -> int:
        output = self.app.output if self.app is not None else self._output
        return output.get_size().rows if output is not None else 24

    def request_render(self) -> None:
        if self.app is not None:
            self.app.invalidate()


class ComponentError(RuntimeError):
    """The component (or its factory) raised: the message says what, for one line."""


async def run_component(
    factory: Callable[..., Any],
    *,
    theme: Any = None,
    keymap: Any = None,
    output: Output | None = None,
    style: Any = None,
) -> Any:
    """Build the component with ``factory`` and run it until ``done(value)``; returns
    ``value``. Raises :class:`ComponentError` when the factory or the component fails."""
    host = ComponentHost(output)
    finished: list[Any] = []

    def done(value: Any = None) -> None:
        if finished:
            return
        finished.append(value)
        if host.app is not None and host.app.is_running and not host.app.is_done:
            host.app.exit(result=value)

    try:
        component = factory(host, ComponentTheme(theme), ComponentKeys(keymap), done)
        if inspect.isawaitable(component):
            component = await component
    except Exception as exc:
        raise ComponentError(f"the component factory raised {type(exc).__name__}: {exc}") from exc
    if finished:  # done before it was shown
        _dispose(component)
        return finished[0]
    if not callable(getattr(component, "render", None)):
        raise ComponentError(f"the factory returned {type(component).__name__}, which has no render(width)")
    failure: list[BaseException] = []

    def fragments() -> StyleAndTextTuples:
        if failure:
            return []
        try:
            lines = component.render(max(1, host.width - 1))
        except Exception as exc:
            fail(exc, "render")
            return []
        text = "\n".join(str(line) for line in lines or [])
        return to_formatted_text(ANSI(text))

    def fail(exc: BaseException, where: str) -> None:
        failure.append(ComponentError(f"{where} raised {type(exc).__name__}: {exc}"))
        if host.app is not None and host.app.is_running and not host.app.is_done:
            host.app.exit(result=None)

    kb = KeyBindings()

    @kb.add(Keys.Any)
    @kb.add(Keys.Escape, eager=True)  # at once: Escape cancels, and is not read as Alt
    def _key(event: KeyPressEvent) -> None:
        keys = [press.key.value if isinstance(press.key, Keys) else str(press.key) for press in event.key_sequence]
        name = key_name(keys)
        handle = getattr(component, "handle_input", None)
        if handle is None:
            return
        try:
            handle(name)
        except Exception as exc:
            fail(exc, "handle_input")
            return
        invalidate = getattr(component, "invalidate", None)
        if callable(invalidate) and not finished:
            try:
                invalidate()
            except Exception as exc:
                fail(exc, "invalidate")
                return
        event.app.invalidate()

    app: Application[Any] = Application(
        layout=Layout(HSplit([Window(FormattedTextControl(fragments, show_cursor=False), dont_extend_height=True)])),
        key_bindings=kb,
        style=style,
        full_screen=False,
        erase_when_done=True,
        output=output,
    )
    host.app = app
    try:
        if not finished:
            await app.run_async(handle_sigint=False)
    finally:
        host.app = None
        _dispose(component)
    if failure:
        raise failure[0]
    return finished[0] if finished else None


def _dispose(component: Any) -> None:
    dispose = getattr(component, "dispose", None)
    if callable(dispose):
        try:
            dispose()
        except Exception:
            pass  # the component is gone either way
