"""Markdown and source code as safe HTML fragments (markdown-it-py and Pygments).

Everything returned here is :class:`markupsafe.Markup`: the one place where text of the
session becomes markup. Raw HTML in Markdown is shown as text (``html`` off), link
targets other than http(s)/mailto/relative ones are dropped by markdown-it's link
validation, and an image that is not a ``data:`` URI becomes a plain link, so the page
never loads anything from the network.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict
    from pygments.formatters import HtmlFormatter

MAX_HIGHLIGHT_CHARS = 200_000
"""Text longer than this is shown without colours (highlighting it would take seconds)."""

_EXTENSION_LEXERS = {
    "ts": "typescript",
    "tsx": "tsx",
    "js": "javascript",
    "jsx": "jsx",
    "mjs": "javascript",
    "cjs": "javascript",
    "py": "python",
    "pyi": "python",
    "rb": "ruby",
    "rs": "rust",
    "go": "go",
    "java": "java",
    "kt": "kotlin",
    "c": "c",
    "h": "c",
    "cc": "cpp",
    "cpp": "cpp",
    "hpp": "cpp",
    "cs": "csharp",
    "swift": "swift",
    "php": "php",
    "sh": "bash",
    "bash": "bash",
    "zsh": "bash",
    "fish": "fish",
    "ps1": "powershell",
    "sql": "sql",
    "html": "html",
    "htm": "html",
    "css": "css",
    "scss": "scss",
    "less": "less",
    "json": "json",
    "jsonl": "json",
    "yaml": "yaml",
    "yml": "yaml",
    "toml": "toml",
    "ini": "ini",
    "xml": "xml",
    "svg": "xml",
    "md": "markdown",
    "markdown": "markdown",
    "lua": "lua",
    "r": "r",
    "dockerfile": "docker",
    "makefile": "make",
    "mk": "make",
    "diff": "diff",
    "patch": "diff",
}


def lexer_for_path(path: str) -> str | None:
    """The Pygments lexer name for a file path, by its name or extension (None: plain text)."""
    name = posixpath.basename(path.replace("\\", "/")).lower()
    if name in ("dockerfile", "makefile"):
        return _EXTENSION_LEXERS[name]
    _, dot, ext = name.rpartition(".")
    return _EXTENSION_LEXERS.get(ext) if dot else None


@functools.cache
def _formatter() -> HtmlFormatter[str]:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(cssclass="highlight", wrapcode=True)


def highlight(code: str, language: str | None) -> Markup:
    """``code`` as a ``<div class="highlight"><pre>…`` block, coloured when ``language``
    names a Pygments lexer (an unknown one, or none, gives escaped plain text)."""
    from pygments import highlight as pygments_highlight
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    if language and len(code) <= MAX_HIGHLIGHT_CHARS:
        try:
            lexer = get_lexer_by_name(language, stripnl=False, ensurenl=False)
        except ClassNotFound:
            lexer = None
        if lexer is not None:
            return Markup(pygments_highlight(code, lexer, _formatter()))
    return Markup('<div class="highlight"><pre><code>') + escape(code) + Markup("</code></pre></div>")


def pygments_background(style: str) -> str:
    """The background colour of a Pygments style's code blocks (``#rrggbb``)."""
    from pygments.styles import get_style_by_name

    colour = str(get_style_by_name(style).background_color or "#ffffff")
    if len(colour) == 4:  # #rgb
        colour = "#" + "".join(c * 2 for c in colour[1:])
    return colour


def pygments_css(style: str) -> str:
    """The colour rules of a Pygments style for ``.highlight`` code blocks: the block's
    background and base colour and one rule per token type (none of Pygments' global
    ``pre`` or line-number rules). The page wraps each style in the media query of its
    colour scheme, so the rules of one scheme never leak into the other."""
    from pygments.formatters import HtmlFormatter

    formatter: HtmlFormatter[str] = HtmlFormatter(style=style, cssclass="highlight")
    background: list[str] = formatter.get_background_style_defs(".highlight")  # type: ignore[no-untyped-call]
    tokens: list[str] = formatter.get_token_style_defs(".highlight")  # type: ignore[no-untyped-call]
    return "\n".join([*background, *tokens])


def _render_fence(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    info = token.info.strip().split(maxsplit=1)[0] if token.info.strip() else ""
    return str(highlight(token.content, info or None))


def _render_code_block(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    return str(highlight(tokens[idx].content, None))


def _render_image(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    alt = self.renderInlineAsText(token.children or [], options, env)
    if src.lower().startswith("data:image/"):
        return str(Markup('<img class="md-image" src="{}" alt="{}">').format(src, alt))
    # a remote picture would be a network fetch: offer it as a link instead
    label = alt or src
    return str(Markup('<a href="{}" rel="noopener noreferrer">[image: {}]</a>').format(src, label))


def _render_link_open(self: Any, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType) -> str:
    token = tokens[idx]
    token.attrSet("rel", "noopener noreferrer")
    return str(self.renderToken(tokens, idx, options, env))


@functools.cache
def _markdown() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    md.add_render_rule("fence", _render_fence)
    md.add_render_rule("code_block", _render_code_block)
    md.add_render_rule("image", _render_image)
    md.add_render_rule("link_open", _render_link_open)
    return md


def markdown(text: str) -> Markup:
    """Markdown ``text`` as HTML (raw HTML in it is escaped, code blocks highlighted)."""
    return Markup(_markdown().render(text))
