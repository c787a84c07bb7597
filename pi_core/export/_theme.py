"""The user's pi theme on the exported page, as pi 1.6.0's export applies it.

A theme given to the export (``/export`` passes the terminal's) fixes the page to the
theme's appearance (no light/dark switch by the browser's scheme) and sets its colours:
every token as a ``--pi-<token>`` custom property, the page, card and info backgrounds
from the theme's ``export`` section or derived from ``userMessageBg`` (as pi 1.6.0
derives them), text, accents, status colours and diff backgrounds from their tokens,
and code colours from the ``syntax*`` tokens wherever they keep a contrast of 4.5:1 on
the code's background (elsewhere the Pygments style of the appearance stays).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

_HEX = re.compile(r"^#([0-9a-fA-F]{2})([0-9a-fA-F]{2})([0-9a-fA-F]{2})$")

SYNTAX_CLASSES: dict[str, tuple[str, ...]] = {
    "syntaxComment": ("c", "ch", "cm", "cp", "cpf", "c1", "cs"),
    "syntaxKeyword": ("k", "kc", "kd", "kn", "kp", "kr", "ow"),
    "syntaxFunction": ("nf", "fm", "nb", "bp"),
    "syntaxVariable": ("n", "nv", "vc", "vg", "vi", "vm", "na"),
    "syntaxString": ("s", "sa", "sb", "sc", "dl", "sd", "s2", "se", "sh", "si", "sx", "sr", "s1", "ss"),
    "syntaxNumber": ("m", "mb", "mf", "mh", "mi", "il", "mo"),
    "syntaxType": ("kt", "nc", "nn"),
    "syntaxOperator": ("o",),
    "syntaxPunctuation": ("p",),
}
"""Pygments' token classes each ``syntax*`` token of a pi theme colours."""

_PAGE_VARS: dict[str, tuple[str, ...]] = {
    "--text": ("text",),
    "--muted": ("muted", "dim"),
    "--accent": ("accent",),
    "--border": ("borderMuted", "border"),
    "--user": ("userMessageBg",),
    "--user-edge": ("borderAccent", "accent"),
    "--assistant-edge": ("accent",),
    "--tool-edge": ("toolTitle", "accent"),
    "--summary-edge": ("warning",),
    "--custom-edge": ("customMessageLabel", "success"),
    "--error": ("error",),
    "--warning": ("warning",),
    "--success": ("success",),
    "--added": ("toolSuccessBg",),
    "--removed": ("toolErrorBg",),
}
"""The page's colour properties and the theme tokens that set them (the first one set)."""


@dataclass(frozen=True)
class PageTheme:
    """A pi theme as the export uses it: resolved ``#rrggbb`` colours (``None``: the
    terminal's default, left to the page) and the theme file's ``export`` colours."""

    name: str
    appearance: str = "dark"
    colors: Mapping[str, str | None] = field(default_factory=dict)
    export: Mapping[str, str] = field(default_factory=dict)


def rgb(colour: str) -> tuple[int, int, int] | None:
    match = _HEX.match(colour.strip())
    return (int(match.group(1), 16), int(match.group(2), 16), int(match.group(3), 16)) if match else None


def luminance(colour: tuple[int, int, int]) -> float:
    """WCAG relative luminance."""

    def linear(channel: int) -> float:
        value = channel / 255
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    r, g, b = colour
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b)


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _hex(colour: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*(max(0, min(255, round(c))) for c in colour))


def _scaled(colour: tuple[int, int, int], factor: float) -> tuple[int, int, int]:
    r, g, b = (max(0, min(255, round(c * factor))) for c in colour)
    return r, g, b


def backgrounds(theme: PageTheme) -> tuple[str, str, str]:
    """``(page, card, info)`` backgrounds: the theme's ``export`` colours, else derived
    from ``userMessageBg`` as pi 1.6.0 does (a light base: the page a little darker, the
    card the base; a dark one: both darker)."""
    base = rgb(theme.colors.get("userMessageBg") or "") or (0x34, 0x35, 0x41)
    r, g, b = base
    if luminance(base) > 0.5:
        derived = (_hex(_scaled(base, 0.96)), _hex(base), _hex((min(255, r + 10), min(255, g + 5), max(0, b - 20))))
    else:
        derived = (_hex(_scaled(base, 0.7)), _hex(_scaled(base, 0.85)), _hex((min(255, r + 20), min(255, g + 15), b)))
    chosen = [theme.export.get(key) for key in ("pageBg", "cardBg", "infoBg")]
    page, card, info = (
        value if isinstance(value, str) and rgb(value) else fallback
        for value, fallback in zip(chosen, derived, strict=True)
    )
    return page, card, info


def theme_css(theme: PageTheme, code_background: str) -> str:
    """The rules that put ``theme`` on the page (after the page's own)."""
    page, card, info = backgrounds(theme)
    card_rgb = rgb(card) or (0x20, 0x20, 0x28)
    card_2 = _hex(_scaled(card_rgb, 0.95 if theme.appearance == "light" else 1.2))
    declarations = [f"color-scheme: {'light' if theme.appearance == 'light' else 'dark'};"]
    for token, value in sorted(theme.colors.items()):
        if value and rgb(value):
            declarations.append(f"--pi-{token}: {value};")
    declarations += [f"--bg: {page};", f"--card: {card};", f"--card-2: {card_2};", f"--info: {info};"]
    for prop, tokens in _PAGE_VARS.items():
        for token in tokens:
            value = theme.colors.get(token)
            if value and rgb(value):
                declarations.append(f"{prop}: {value};")
                break
    rules = [":root {\n  " + "\n  ".join(declarations) + "\n}"]
    code_bg = rgb(code_background)
    for token, classes in SYNTAX_CLASSES.items():
        value = theme.colors.get(token)
        colour = rgb(value or "")
        if colour is None or code_bg is None or contrast(colour, code_bg) < 4.5:
            continue  # the Pygments colour stays where the theme's would be hard to read
        selectors = ", ".join(f"html .highlight .{name}" for name in classes)
        rules.append(f"{selectors} {{ color: {value}; }}")
    return "\n".join(rules) + "\n"
