"""Colour themes of interactive mode, in pi 1.6.0's theme JSON format.

A theme file holds ``name``, optional ``appearance`` (``dark``/``light``), optional
``vars`` (reusable colours) and ``colors``: every token of :data:`TOKENS` (a few are
optional and fall back to another). A colour is ``"#rrggbb"``/``"#rgb"``, an xterm
palette index 0-255, ``"okhsl(h s% l%)"``, ``"oklch(l% c h)"``, the name of a var, or
``""`` for the terminal's default colour.

Themes are found built in (``dark``, ``light``), in ``<agent dir>/themes/``, in a
trusted project's ``.pi/themes/`` and in the ``themes`` setting's files and folders.
``system`` picks dark or light from the terminal (``COLORFGBG``), and so does a pair
``light/dark`` (light theme first). As in pi 1.6.0, ``--theme PATH`` (repeatable)
loads more theme files or folders for the run, ``--no-themes`` leaves out the themes
found in those places (``--theme`` paths still load: :func:`set_cli_themes`), and
``--use-theme NAME`` or the ``theme`` setting chooses one; a theme that cannot be read
is reported in one line naming the file, and the dark theme is used.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from prompt_toolkit.styles import Style
from rich.theme import Theme as RichTheme

from ..._paths import agent_dir, project_dir

TOKENS: tuple[str, ...] = (
    "accent",
    "border",
    "borderAccent",
    "borderMuted",
    "success",
    "error",
    "warning",
    "muted",
    "dim",
    "text",
    "thinkingText",
    "scrollbarTrack",
    "scrollbarThumb",
    "selectedBg",
    "searchMatchBg",
    "searchMatchText",
    "userMessageBg",
    "userMessageText",
    "customMessageBg",
    "customMessageText",
    "customMessageLabel",
    "toolPendingBg",
    "toolSuccessBg",
    "toolErrorBg",
    "toolTitle",
    "toolOutput",
    "mdHeading",
    "mdLink",
    "mdLinkUrl",
    "mdCode",
    "mdCodeBlock",
    "mdCodeBlockBorder",
    "mdQuote",
    "mdQuoteBorder",
    "mdHr",
    "mdListBullet",
    "toolDiffAdded",
    "toolDiffRemoved",
    "toolDiffContext",
    "syntaxComment",
    "syntaxKeyword",
    "syntaxFunction",
    "syntaxVariable",
    "syntaxString",
    "syntaxNumber",
    "syntaxType",
    "syntaxOperator",
    "syntaxPunctuation",
    "thinkingOff",
    "thinkingMinimal",
    "thinkingLow",
    "thinkingMedium",
    "thinkingHigh",
    "thinkingXhigh",
    "thinkingMax",
    "bashMode",
)
FALLBACKS = {
    "scrollbarTrack": "muted",
    "scrollbarThumb": "text",
    "searchMatchBg": "selectedBg",
    "searchMatchText": "text",
    "thinkingMax": "thinkingXhigh",
}
BUILTIN = ("dark", "light")


class ThemeError(ValueError):
    pass


# --------------------------------------------------------------------------- colours

_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?"
_OKHSL = re.compile(rf"^okhsl\(\s*({_NUMBER})(?:deg)?\s+({_NUMBER})(%)?\s+({_NUMBER})(%)?\s*\)$", re.I)
_OKLCH = re.compile(rf"^oklch\(\s*({_NUMBER})(%)?\s+({_NUMBER})\s+({_NUMBER})(?:deg)?\s*\)$", re.I)
_HEX = re.compile(r"^#([0-9a-f]{3}|[0-9a-f]{6})$", re.I)
_CUBE = (0, 95, 135, 175, 215, 255)
_BASIC = (
    (0, 0, 0),
    (128, 0, 0),
    (0, 128, 0),
    (128, 128, 0),
    (0, 0, 128),
    (128, 0, 128),
    (0, 128, 128),
    (192, 192, 192),
    (128, 128, 128),
    (255, 0, 0),
    (0, 255, 0),
    (255, 255, 0),
    (0, 0, 255),
    (255, 0, 255),
    (0, 255, 255),
    (255, 255, 255),
)


def _oklab_to_linear(lightness: float, a: float, b: float) -> tuple[float, float, float]:
    l_ = (lightness + 0.3963377774 * a + 0.2158037573 * b) ** 3
    m_ = (lightness - 0.1055613458 * a - 0.0638541728 * b) ** 3
    s_ = (lightness - 0.0894841775 * a - 1.2914855480 * b) ** 3
    return (
        4.0767416621 * l_ - 3.3077115913 * m_ + 0.2309699292 * s_,
        -1.2684380046 * l_ + 2.6097574011 * m_ - 0.3413193965 * s_,
        -0.0041960863 * l_ - 0.7034186147 * m_ + 1.7076147010 * s_,
    )


def _to_srgb(linear: tuple[float, float, float]) -> tuple[int, int, int]:
    def channel(x: float) -> int:
        x = min(1.0, max(0.0, x))
        value = 1.055 * x ** (1 / 2.4) - 0.055 if x >= 0.0031308 else 12.92 * x
        return round(min(1.0, max(0.0, value)) * 255)

    r, g, b = linear
    return channel(r), channel(g), channel(b)


def _max_saturation(a: float, b: float) -> float:
    if -1.88170328 * a - 0.80936493 * b > 1:
        k = (1.19086277, 1.76576728, 0.59662641, 0.75515197, 0.56771245)
        w = (4.0767416621, -3.3077115913, 0.2309699292)
    elif 1.81444104 * a - 1.19445276 * b > 1:
        k = (0.73956515, -0.45954404, 0.08285427, 0.12541070, 0.14503204)
        w = (-1.2684380046, 2.6097574011, -0.3413193965)
    else:
        k = (1.35733652, -0.00915799, -1.15130210, -0.50559606, 0.00692167)
        w = (-0.0041960863, -0.7034186147, 1.7076147010)
    saturation = k[0] + k[1] * a + k[2] * b + k[3] * a * a + k[4] * a * b
    k_l = 0.3963377774 * a + 0.2158037573 * b
    k_m = -0.1055613458 * a - 0.0638541728 * b
    k_s = -0.0894841775 * a - 1.2914855480 * b
    l_, m_, s_ = 1 + saturation * k_l, 1 + saturation * k_m, 1 + saturation * k_s
    f = w[0] * l_**3 + w[1] * m_**3 + w[2] * s_**3
    f1 = w[0] * 3 * k_l * l_**2 + w[1] * 3 * k_m * m_**2 + w[2] * 3 * k_s * s_**2
    f2 = w[0] * 6 * k_l**2 * l_ + w[1] * 6 * k_m**2 * m_ + w[2] * 6 * k_s**2 * s_
    return saturation - f * f1 / (f1 * f1 - 0.5 * f * f2)


def _cusp(a: float, b: float) -> tuple[float, float]:
    saturation = _max_saturation(a, b)
    peak = max(_oklab_to_linear(1, saturation * a, saturation * b))
    lightness = (1 / peak) ** (1 / 3)
    return lightness, lightness * saturation


def _gamut_intersection(a: float, b: float, l1: float, c1: float, l0: float, cusp: tuple[float, float]) -> float:
    cusp_l, cusp_c = cusp
    if (l1 - l0) * cusp_c - (cusp_l - l0) * c1 <= 0:
        return cusp_c * l0 / (c1 * cusp_l + cusp_c * (l0 - l1))
    t = cusp_c * (l0 - 1) / (c1 * (cusp_l - 1) + cusp_c * (l0 - l1))
    dl, dc = l1 - l0, c1
    k_l = 0.3963377774 * a + 0.2158037573 * b
    k_m = -0.1055613458 * a - 0.0638541728 * b
    k_s = -0.0894841775 * a - 1.2914855480 * b
    l_dt, m_dt, s_dt = dl + dc * k_l, dl + dc * k_m, dl + dc * k_s
    lightness, chroma = l0 * (1 - t) + t * l1, t * c1
    l_, m_, s_ = lightness + chroma * k_l, lightness + chroma * k_m, lightness + chroma * k_s
    lms = (l_**3, m_**3, s_**3)
    d1 = (3 * l_dt * l_**2, 3 * m_dt * m_**2, 3 * s_dt * s_**2)
    d2 = (6 * l_dt**2 * l_, 6 * m_dt**2 * m_, 6 * s_dt**2 * s_)
    best = math.inf
    for w in (
        (4.0767416621, -3.3077115913, 0.2309699292),
        (-1.2684380046, 2.6097574011, -0.3413193965),
        (-0.0041960863, -0.7034186147, 1.7076147010),
    ):
        value = sum(wi * x for wi, x in zip(w, lms, strict=True)) - 1
        first = sum(wi * x for wi, x in zip(w, d1, strict=True))
        second = sum(wi * x for wi, x in zip(w, d2, strict=True))
        u = first / (first * first - 0.5 * value * second)
        step = -value * u
        best = min(best, step if u >= 0 else math.inf)
    return t + best


def _st_mid(a: float, b: float) -> tuple[float, float]:
    s = 0.11516993 + 1 / (
        7.44778970
        + 4.15901240 * b
        + a
        * (
            -2.19557347
            + 1.75198401 * b
            + a * (-2.13704948 - 10.02301043 * b + a * (-4.24894561 + 5.38770819 * b + 4.69891013 * a))
        )
    )
    t = 0.11239642 + 1 / (
        1.61320320
        - 0.68124379 * b
        + a
        * (
            0.40370612
            + 0.90148123 * b
            + a * (-0.27087943 + 0.61223990 * b + a * (0.00299215 - 0.45399568 * b - 0.14661872 * a))
        )
    )
    return s, t


def okhsl_to_rgb(hue: float, saturation: float, lightness: float) -> tuple[int, int, int]:
    """OKHSL (hue in degrees, saturation and lightness 0-1) to sRGB (Björn Ottosson's
    conversion: saturation is relative to the gamut, so every value fits)."""
    if lightness >= 1:
        return 255, 255, 255
    if lightness <= 0:
        return 0, 0, 0
    a_, b_ = math.cos(math.radians(hue)), math.sin(math.radians(hue))
    k1, k2 = 0.206, 0.03
    k3 = (1 + k1) / (1 + k2)
    big_l = (lightness * lightness + k1 * lightness) / (k3 * (lightness + k2))
    if saturation <= 0:
        return _to_srgb(_oklab_to_linear(big_l, 0, 0))
    cusp = _cusp(a_, b_)
    c_max = _gamut_intersection(a_, b_, big_l, 1, big_l, cusp)
    st_max = (cusp[1] / cusp[0], cusp[1] / (1 - cusp[0]))
    k = c_max / min(big_l * st_max[0], (1 - big_l) * st_max[1])
    st_mid = _st_mid(a_, b_)
    c_a, c_b = big_l * st_mid[0], (1 - big_l) * st_mid[1]
    c_mid = 0.9 * k * math.sqrt(math.sqrt(1 / (1 / c_a**4 + 1 / c_b**4)))
    c_a, c_b = big_l * 0.4, (1 - big_l) * 0.8
    c_0 = math.sqrt(1 / (1 / c_a**2 + 1 / c_b**2))
    mid, mid_inv = 0.8, 1.25
    if saturation < mid:
        t = mid_inv * saturation
        k_1 = mid * c_0
        k_2 = 1 - k_1 / c_mid
        chroma = t * k_1 / (1 - k_2 * t)
    else:
        t = (saturation - mid) / (1 - mid)
        k_0 = c_mid
        k_1 = (1 - mid) * c_mid * c_mid * mid_inv * mid_inv / c_0
        k_2 = 1 - k_1 / (c_max - c_mid)
        chroma = k_0 + t * k_1 / (1 - k_2 * t)
    return _to_srgb(_oklab_to_linear(big_l, chroma * a_, chroma * b_))


def oklch_to_rgb(lightness: float, chroma: float, hue: float) -> tuple[int, int, int]:
    """OKLCH to sRGB, reducing chroma until the colour fits the gamut."""
    a_, b_ = math.cos(math.radians(hue)), math.sin(math.radians(hue))

    def fits(linear: tuple[float, float, float]) -> bool:
        return all(-1e-7 <= x <= 1 + 1e-7 for x in linear)

    direct = _oklab_to_linear(lightness, chroma * a_, chroma * b_)
    if fits(direct):
        return _to_srgb(direct)
    low, high, best = 0.0, chroma, _oklab_to_linear(lightness, 0, 0)
    for _ in range(20):
        middle = (low + high) / 2
        candidate = _oklab_to_linear(lightness, middle * a_, middle * b_)
        if fits(candidate):
            low, best = middle, candidate
        else:
            high = middle
    return _to_srgb(best)


def indexed_to_rgb(index: int) -> tuple[int, int, int]:
    if index < 16:
        return _BASIC[index]
    if index < 232:
        cube = index - 16
        return _CUBE[cube // 36], _CUBE[(cube % 36) // 6], _CUBE[cube % 6]
    gray = 8 + (index - 232) * 10
    return gray, gray, gray


def parse_color(value: Any) -> str | None:
    """A colour value as ``#rrggbb`` (``None``: the terminal's default). Raises
    :class:`ThemeError` for anything else."""
    if isinstance(value, bool):
        raise ThemeError(f"invalid colour {json.dumps(value)}")
    if isinstance(value, int):
        if not 0 <= value <= 255:
            raise ThemeError(f"palette index {value} is not between 0 and 255")
        return "#{:02x}{:02x}{:02x}".format(*indexed_to_rgb(value))
    if not isinstance(value, str):
        raise ThemeError(f"invalid colour {json.dumps(value)}")
    if value == "":
        return None
    if match := _HEX.match(value):
        digits = match.group(1)
        return "#" + ("".join(c * 2 for c in digits) if len(digits) == 3 else digits).lower()
    if match := _OKHSL.match(value):
        saturation = float(match.group(2)) / (100 if match.group(3) else 1)
        lightness = float(match.group(4)) / (100 if match.group(5) else 1)
        if not (0 <= saturation <= 1 and 0 <= lightness <= 1):
            raise ThemeError(f"{value}: saturation and lightness must be between 0 and 100%")
        return "#{:02x}{:02x}{:02x}".format(*okhsl_to_rgb(float(match.group(1)), saturation, lightness))
    if match := _OKLCH.match(value):
        lightness = float(match.group(1)) / (100 if match.group(2) else 1)
        return "#{:02x}{:02x}{:02x}".format(*oklch_to_rgb(lightness, float(match.group(3)), float(match.group(4))))
    raise ThemeError(f'invalid colour {value!r} (use #rrggbb, 0-255, okhsl(...), oklch(...), a var or "")')


# --------------------------------------------------------------------------- themes


@dataclass
class Theme:
    name: str
    colors: dict[str, str | None]
    appearance: str = "dark"
    path: str | None = None
    colorless: bool = False

    def color(self, token: str) -> str | None:
        return None if self.colorless else self.colors.get(token)

    def _style(self, token: str, extra: str = "", *, background: str | None = None) -> str:
        parts = [extra] if extra else []
        colour = self.color(token)
        if colour:
            parts.append(colour)
        if background and self.color(background):
            parts.append(f"on {self.color(background)}")
        return " ".join(parts) or "none"

    def rich_theme(self) -> RichTheme:
        """Styles for the transcript: the plain colour names the transcript uses mapped
        to the theme's tokens, and rich's markdown styles."""
        s = self._style
        styles = {
            "red": s("error"),
            "green": s("success"),
            "yellow": s("warning"),
            "cyan": s("accent"),
            "blue": s("accent"),
            "magenta": s("customMessageLabel"),
            "dim": s("dim"),
            "bold cyan": s("accent", "bold"),
            "bold green": s("bashMode", "bold"),
            "bold": s("userMessageText", "bold"),
            "dim italic": s("thinkingText", "italic"),
            "tool": s("toolTitle"),
            "tool.output": s("toolOutput"),
            "tool.error": s("error"),
            "diff.added": s("toolDiffAdded") if self.color("toolDiffAdded") or self.colorless else "green",
            "diff.removed": s("toolDiffRemoved") if self.color("toolDiffRemoved") or self.colorless else "red",
            "diff.context": s("toolDiffContext") if self.color("toolDiffContext") or self.colorless else "dim",
            "thinking": s("thinkingText", "italic"),
            "markdown.h1": s("mdHeading", "bold"),
            "markdown.h2": s("mdHeading", "bold"),
            "markdown.h3": s("mdHeading", "bold"),
            "markdown.h4": s("mdHeading"),
            "markdown.h5": s("mdHeading"),
            "markdown.h6": s("mdHeading"),
            "markdown.code": s("mdCode"),
            "markdown.code_block": s("mdCodeBlock"),
            "markdown.code_block_border": s("mdCodeBlockBorder"),
            "markdown.link": s("mdLink"),
            "markdown.link_url": s("mdLinkUrl", "underline"),
            "markdown.block_quote": s("mdQuote"),
            "markdown.hr": s("mdHr"),
            "markdown.item.bullet": s("mdListBullet"),
            "markdown.item.number": s("mdListBullet"),
        }
        return RichTheme(styles, inherit=True)

    def prompt_style(self) -> Style:
        def c(token: str, extra: str = "") -> str:
            # without colours (NO_COLOR) the plain ANSI defaults below apply
            colour = self.color(token)
            return " ".join(p for p in (extra, f"fg:{colour}") if p) if colour else ""

        selected = self.color("selectedBg")
        return Style.from_dict(
            {
                "prompt": c("accent", "bold") or "ansicyan bold",
                "live": c("text"),
                "thinking": c("thinkingText", "italic") or "ansibrightblack italic",
                "tool": c("toolTitle") or "ansicyan",
                "dim": c("dim") or "ansibrightblack",
                "spinner": c("warning") or "ansiyellow",
                "hint": c("warning") or "ansiyellow",
                "footer": c("muted") or "ansibrightblack",
                "bottom-toolbar": "noreverse " + (c("muted") or ""),
                "completion-menu": f"bg:{selected} {c('text')}" if selected else "bg:ansibrightblack ansiwhite",
            }
        )

    def dialog_style(self) -> Style:
        def c(token: str, extra: str = "") -> str:
            # without colours (NO_COLOR) the plain ANSI defaults below apply
            colour = self.color(token)
            return " ".join(p for p in (extra, f"fg:{colour}") if p) if colour else ""

        return Style.from_dict(
            {
                "title": "bold",
                "question": c("accent", "bold") or "ansicyan bold",
                "dim": c("dim") or "ansibrightblack",
                "cursor": c("accent", "bold") or "ansicyan bold",
                "hotkey": c("warning") or "ansiyellow",
                "filter": c("warning") or "ansiyellow",
            }
        )


def theme_from_json(data: Any, where: str) -> Theme:
    """A :class:`Theme` from parsed theme JSON; :class:`ThemeError` names ``where``."""
    if not isinstance(data, dict):
        raise ThemeError(f"{where}: a theme is a JSON object")
    name = data.get("name")
    if not isinstance(name, str) or not name or "/" in name:
        raise ThemeError(f"{where}: \"name\" must be a non-empty string without '/'")
    appearance = data.get("appearance", "dark")
    if appearance not in ("dark", "light"):
        raise ThemeError(f'{where}: "appearance" must be "dark" or "light"')
    variables = data.get("vars") or {}
    colors = data.get("colors")
    if not isinstance(variables, dict) or not isinstance(colors, dict):
        raise ThemeError(f'{where}: "vars" and "colors" must be objects')
    unknown = sorted(set(colors) - set(TOKENS))
    if unknown:
        raise ThemeError(f"{where}: unknown colour token(s) {', '.join(unknown)}")
    missing = [t for t in TOKENS if t not in colors and t not in FALLBACKS]
    if missing:
        raise ThemeError(f"{where}: missing colour token(s) {', '.join(missing)}")

    def resolve(token: str, value: Any, seen: tuple[str, ...] = ()) -> str | None:
        if isinstance(value, str) and value in variables:
            if value in seen:
                raise ThemeError(f"{where}: var {value!r} refers to itself")
            return resolve(token, variables[value], (*seen, value))
        try:
            return parse_color(value)
        except ThemeError as exc:
            raise ThemeError(f"{where}: colors.{token}: {exc}") from None

    resolved: dict[str, str | None] = {}
    for token in TOKENS:
        if token in colors:
            resolved[token] = resolve(token, colors[token])
    for token, fallback in FALLBACKS.items():
        resolved.setdefault(token, resolved.get(fallback))
    return Theme(name, resolved, appearance)


def _builtin(name: str) -> Theme:
    text = (
        resources.files(__package__ or "pi_core.cli.tui").joinpath("themes", f"{name}.json").read_text(encoding="utf-8")
    )
    return theme_from_json(json.loads(text), f"built-in theme {name}")


@dataclass
class CliThemes:
    """What the command line says about themes (one per process: :func:`set_cli_themes`)."""

    paths: list[Path] = field(default_factory=list)
    """``--theme`` files and folders, absolute."""
    discover: bool = True
    """``False`` with ``--no-themes``."""


CLI_THEMES = CliThemes()


def set_cli_themes(values: list[str], no_themes: bool, cwd: str) -> tuple[str | None, list[str]]:
    """Take ``--theme`` values and ``--no-themes`` for this process. Returns the theme
    name to select, if a value was one (this pi's ``--theme NAME`` before pi 1.6.0's
    meaning, a path), and the problems to show (one line each)."""
    problems: list[str] = []
    chosen: str | None = None
    CLI_THEMES.paths, CLI_THEMES.discover = [], not no_themes
    known = _names_known(cwd) if values else set()
    for value in values:
        path = Path(value).expanduser()
        path = path if path.is_absolute() else Path(cwd) / path
        if path.exists():
            CLI_THEMES.paths.append(path)
        elif os.sep not in value and not value.endswith(".json") and value.split("/")[0] in known:
            chosen = value
            problems.append(
                f"--theme takes a theme file or folder (as in pi 1.6.0): selecting the theme {value!r} "
                f"for this run (--use-theme {value} says so)"
            )
        else:
            problems.append(f"Theme path does not exist: {path}")
    return chosen, problems


def _names_known(cwd: str) -> set[str]:
    """Theme names known before the settings are read (built in, ``<agent dir>/themes``)."""
    return set(available_themes(None, cwd))


def _theme_files(settings: Any, cwd: str) -> list[Path]:
    places: list[Path] = []
    if CLI_THEMES.discover:
        places.append(agent_dir() / "themes")
        if settings is not None and getattr(settings, "project_trusted", False):
            places.append(project_dir(cwd) / "themes")
        if settings is not None:
            places += [Path(p) for p in getattr(settings, "theme_paths", ())]
    places += CLI_THEMES.paths
    files: list[Path] = []
    for place in places:
        if place.is_dir():
            files += sorted(place.glob("*.json"))
        elif place.suffix == ".json" and place.is_file():
            files.append(place)
    return files


def available_themes(settings: Any, cwd: str) -> dict[str, str | None]:
    """Theme name -> file (``None``: built in)."""
    found: dict[str, str | None] = {name: None for name in BUILTIN}
    found["system"] = None
    for file in _theme_files(settings, cwd):
        try:
            data = json.loads(file.read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            found.setdefault(data["name"], str(file))
    return found


def system_appearance() -> str:
    """``light`` when ``COLORFGBG`` says the background is light, else ``dark``."""
    value = os.environ.get("COLORFGBG", "")
    try:
        background = int(value.split(";")[-1])
    except ValueError:
        return "dark"
    return "light" if background in (7, 15) or 9 < background < 16 else "dark"


def load_theme(name: Any, settings: Any, cwd: str, problems: list[str] | None = None) -> Theme:
    """The theme called ``name`` (``None``: ``system``). Problems go to ``problems`` (one
    line each) and the dark theme is used."""
    colorless = bool(os.environ.get("NO_COLOR"))
    wanted = name if isinstance(name, str) and name else "system"
    if "/" in wanted:  # "light/dark": the first for a light terminal, the second for a dark one
        light, _, dark = wanted.partition("/")
        wanted = (light if system_appearance() == "light" else dark) or "system"
    if wanted == "system":
        wanted = system_appearance()
    theme: Theme | None = None
    if wanted in BUILTIN:
        theme = _builtin(wanted)
    else:
        path = available_themes(settings, cwd).get(wanted)
        if path is None:
            if problems is not None:
                problems.append(
                    f"Theme {wanted!r} not found (built in: dark, light; custom themes: "
                    f"{agent_dir() / 'themes'}): using dark"
                )
        else:
            try:
                theme = theme_from_json(json.loads(Path(path).read_text(encoding="utf-8-sig")), path)
                theme.path = path
            except (OSError, ValueError) as exc:
                if problems is not None:
                    problems.append(f"{exc if isinstance(exc, ThemeError) else f'{path}: {exc}'}: using the dark theme")
    theme = theme or _builtin("dark")
    theme.colorless = colorless
    return theme


@dataclass
class ThemeState:
    """What changes with the theme (kept by the app)."""

    theme: Theme
    problems: list[str] = field(default_factory=list)


def page_theme(theme: Theme) -> Any:
    """``theme`` as the exported page takes it (:class:`pi_core.export._theme.PageTheme`):
    its resolved colours and the ``export`` section of its file (``pageBg``, ``cardBg``,
    ``infoBg``; vars resolved, values that are no colour left out)."""
    from ...export._theme import PageTheme

    export: dict[str, str] = {}
    if theme.path:
        try:
            data = json.loads(Path(theme.path).read_text(encoding="utf-8-sig"))
        except (OSError, ValueError):
            data = {}
        section = data.get("export") if isinstance(data, dict) else None
        variables: dict[str, Any] = (
            data["vars"] if isinstance(data, dict) and isinstance(data.get("vars"), dict) else {}
        )
        if isinstance(section, dict):
            for key in ("pageBg", "cardBg", "infoBg"):
                value = section.get(key)
                value = variables.get(value, value) if isinstance(value, str) else value
                try:
                    colour = parse_color(value) if value is not None else None
                except ThemeError:
                    colour = None
                if colour:
                    export[key] = colour
    return PageTheme(name=theme.name, appearance=theme.appearance, colors=dict(theme.colors), export=export)
