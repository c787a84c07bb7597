"""A session as one self-contained HTML page (``pi --export``, ``/export``, RPC ``export_html``).

The page holds everything it shows: styles and script inline, images as ``data:`` URIs,
and a Content-Security-Policy that forbids every network fetch and any script but the
page's own (so text of the session can never run as code, even if it were not escaped -
and it is: Jinja2 escapes every value, Markdown is rendered with raw HTML turned off).

It shows the whole tree of the session - every branch - with the active path marked,
each entry (user, assistant with thinking and tool calls, tool results, shell commands,
compaction and branch summaries, plugin messages, model and thinking changes), images
inline, and the system prompt and tools as the session recorded them. Click an entry of
the tree to view its branch; filter the tree as ``/tree`` does (Default, No-tools, User,
Labeled, All). The header totals the session as pi 1.6.0 does; "↓ JSONL" downloads the
session file, whose lines the page holds.

Jinja2, markdown-it-py and Pygments are imported when a page is rendered, never when
this module is imported.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .. import __version__

if TYPE_CHECKING:
    from jinja2 import Environment

    from ._theme import PageTheme

APP_NAME = "pi"
TEMPLATES = Path(__file__).parent / "templates"
LIGHT_CODE_STYLE = "default"
"""The Pygments style of code blocks on a light page (every token colour >= 4.5:1 contrast)."""
DARK_CODE_STYLE = "monokai"
"""The Pygments style of code blocks on a dark page (every token colour >= 4.5:1 contrast)."""


class ExportError(Exception):
    """The export failed; the message is one line naming the file."""


@dataclass(frozen=True)
class PluginRenderings:
    """What the plugins' renderers drew, as text, for the page (pi 1.6.0 puts a plugin
    tool renderer's output on its page; here message and entry renderers' too). The
    terminal UI fills it from the live session's renderers; the page shows each as
    preformatted text in place of its own drawing."""

    tool_calls: Mapping[str, str] = field(default_factory=dict)
    """Tool call id -> what ``render_call`` drew."""
    tool_results: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    """Tool call id -> what ``render_result`` drew collapsed, and expanded when that differs."""
    messages: Mapping[str, str] = field(default_factory=dict)
    """Entry id of a custom message -> what its message renderer drew."""
    entries: Mapping[str, str] = field(default_factory=dict)
    """Entry id of a custom entry -> what its entry renderer drew."""


class _SessionSource(Protocol):
    """What an export needs of an open session (``SessionManager`` has it)."""

    def get_header(self) -> Any: ...

    def get_entries(self) -> Sequence[Any]: ...

    def get_leaf_id(self) -> str | None: ...

    def get_session_file(self) -> str | None: ...

    def get_session_id(self) -> str: ...


# ---------------------------------------------------------------------------- public API


def export_session_html(session_path: Path, out_path: Path | None = None) -> Path:
    """Write the session file ``session_path`` as an HTML page and return the page's path.

    ``out_path`` defaults to ``pi-session-<file name without .jsonl>.html`` in the
    current directory (as pi 1.6.0 names it); an existing directory receives that name.
    Raises :class:`ExportError` (one line) for a missing file, a file that is not a pi
    session, or an output that cannot be written.

    For the session pi itself has open, :func:`export_manager_html` is the better call: it
    sees entries not yet on disk (a new session's file is written with its first answer)
    and can add the live system prompt and tools.
    """
    from ..session import InvalidSessionError, SessionError, SessionManager

    source = Path(os.path.abspath(Path(session_path).expanduser()))
    if not source.exists():
        raise ExportError(f"File not found: {source}")
    if source.is_dir():
        raise ExportError(f"{source} is a directory, not a session file")
    try:
        if source.stat().st_size == 0:
            raise ExportError(f"Session file is empty, nothing to export: {source}")
        manager = SessionManager.open(source, read_only=True)
    except InvalidSessionError:
        raise ExportError(f"Session file is not a valid pi session: {source}") from None
    except (SessionError, OSError, UnicodeDecodeError) as exc:
        raise ExportError(f"Cannot read session file {source}: {_reason(exc)}") from None
    with manager:
        return export_manager_html(manager, out_path)


def export_manager_html(
    session: _SessionSource,
    out_path: Path | str | None = None,
    *,
    system_prompt: str | None = None,
    tools: Sequence[Any] | None = None,
) -> Path:
    """Write an open session (a ``SessionManager``) as an HTML page; returns its path.

    ``system_prompt`` and ``tools`` (declarations: objects with ``name``, ``description``
    and ``parameters``) are shown when no entry of the session records the prompt (a
    session from before system messages were recorded). The default output name comes
    from the session file, or the session id for a session kept in memory.
    """
    return snapshot_session(session).write_html(out_path, system_prompt=system_prompt, tools=tools)


@dataclass(frozen=True, slots=True)
class SessionSnapshot:
    """A copy of an open session's entries, to render away from the thread that owns the
    session (an export of a long session takes a while; the session goes on meanwhile)."""

    header: dict[str, Any]
    entries: list[dict[str, Any]]
    leaf_id: str | None
    stem: str

    def write_html(
        self,
        out_path: Path | str | None = None,
        *,
        system_prompt: str | None = None,
        tools: Sequence[Any] | None = None,
        theme: PageTheme | None = None,
        rendered: PluginRenderings | None = None,
    ) -> Path:
        """Render and write the page (see :func:`export_manager_html`; ``theme`` and
        ``rendered``: see :func:`render_session_html`)."""
        html = render_session_html(
            self.header,
            self.entries,
            self.leaf_id,
            system_prompt=system_prompt,
            tools=[t.to_json() if hasattr(t, "to_json") else t for t in tools or ()],
            theme=theme,
            rendered=rendered,
        )
        return write_page(html, out_path, self.stem)


def snapshot_session(session: _SessionSource) -> SessionSnapshot:
    """The entries of an open session as JSON (cheap: no rendering). Raises
    :class:`ExportError` for a session without a message yet."""
    entries = [entry.to_json() if hasattr(entry, "to_json") else dict(entry) for entry in session.get_entries()]
    if not any(_is_conversation(entry) for entry in entries):  # a model choice alone is no conversation
        raise ExportError("Nothing to export yet - start a conversation first")
    header = session.get_header()
    header_json = header.to_json() if hasattr(header, "to_json") else dict(header or {})
    session_file = session.get_session_file()
    stem = _stem(session_file) if session_file else session.get_session_id()
    return SessionSnapshot(header_json, entries, session.get_leaf_id(), stem)


def default_output_name(session_file: str | os.PathLike[str]) -> str:
    """``pi-session-<file name without .jsonl>.html``: pi 1.6.0's name for an export."""
    return f"{APP_NAME}-session-{_stem(session_file)}.html"


def render_session_html(
    header: Mapping[str, Any] | None,
    entries: Sequence[Mapping[str, Any]],
    leaf_id: str | None,
    *,
    system_prompt: str | None = None,
    tools: Sequence[Any] | None = None,
    theme: PageTheme | None = None,
    rendered: PluginRenderings | None = None,
) -> str:
    """The page for a session given as its header and entries (JSON objects as in the
    file) and the leaf of its active branch. ``theme``: the user's pi theme, which fixes
    the page's colours (without one the page follows the browser's light or dark scheme);
    ``rendered``: what the plugins' renderers drew (:class:`PluginRenderings`)."""
    from markupsafe import Markup

    from . import _markup, _theme, _view

    page = _view.build_page(header, entries, leaf_id, system_prompt=system_prompt, tools=tools)
    env = _environment()
    scheme = None if theme is None else ("light" if theme.appearance == "light" else "dark")
    css = env.get_template("session.css").render(
        pygments_light=Markup(_markup.pygments_css(LIGHT_CODE_STYLE)),
        pygments_dark=Markup(_markup.pygments_css(DARK_CODE_STYLE)),
        scheme=scheme,
    )
    if theme is not None:
        code_style = LIGHT_CODE_STYLE if scheme == "light" else DARK_CODE_STYLE
        css += _theme.theme_css(theme, _markup.pygments_background(code_style))
    script = _read("session.js")
    session_id = page.header.get("id")
    download = f"{session_id if isinstance(session_id, str) and session_id else 'session'}.jsonl"
    # [id, parent id] in file order (an object would not keep it: ids may look like numbers)
    links = [[entry_id, parent] for entry_id, parent in page.parents.items()]
    state = _json_block({"entries": links, "leaf": page.leaf_id, "download": download})
    return env.get_template("session.html.j2").render(
        page=page,
        rendered=rendered or PluginRenderings(),
        css=Markup(css),
        script=Markup(script),
        state=Markup(state),
        jsonl=Markup(_json_block(session_jsonl(header, entries))),
        csp=_csp(css, script),
        version=__version__,
    )


def session_jsonl(header: Mapping[str, Any] | None, entries: Sequence[Mapping[str, Any]]) -> str:
    """The session as a session file holds it - the header line, then one line per entry,
    written as pi writes them - for the page's "↓ JSONL" download."""
    from ..session.storage import dump_line

    lines = [dump_line(dict(header))] if header else []
    lines.extend(dump_line(dict(entry)) for entry in entries)
    return b"".join(lines).decode("utf-8")


def write_page(html: str, out_path: Path | str | None, stem: str) -> Path:
    """Write ``html`` to ``out_path`` (default ``pi-session-<stem>.html`` here; a directory
    receives that name) and return the path written, as pi 1.6.0 reports it: relative
    when ``out_path`` is (the default name is)."""
    name = f"{APP_NAME}-session-{stem}.html"
    target = Path(name) if out_path is None or str(out_path) == "" else Path(out_path).expanduser()
    if target.is_dir():
        target = target / name
    try:
        target.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise ExportError(f"Cannot write {os.path.abspath(target)}: {_reason(exc)}") from None
    return target


# ---------------------------------------------------------------------------- internals


def _is_conversation(entry: Mapping[str, Any]) -> bool:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return not (isinstance(message, Mapping) and message.get("role") == "system")
    return kind in ("custom_message", "compaction", "branch_summary")


def _stem(path: str | os.PathLike[str]) -> str:
    name = os.path.basename(os.fspath(path))
    return name[: -len(".jsonl")] if name.endswith(".jsonl") and len(name) > len(".jsonl") else name


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def _json_block(value: Any) -> str:
    """``value`` as the text of a ``<script type="application/json">`` block, which must not
    contain ``</script`` (or ``<!--``): every ``<`` is escaped."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")


def _read(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


def _csp(css: str, script: str) -> str:
    """No fetches at all (images only from data: URIs), and only this page's own style
    and script, named by their hashes."""

    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"

    return (
        f"default-src 'none'; img-src data:; style-src {digest(css)}; script-src {digest(script)}; "
        "base-uri 'none'; form-action 'none'"
    )


def _blank_none(value: Any) -> Any:
    """``{{ x }}`` of a missing field prints nothing rather than ``None``."""
    return "" if value is None else value


@functools.cache
def _environment() -> Environment:
    from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

    from . import _markup, _view

    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html", "j2"], default_for_string=True, default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_blank_none,
    )
    env.globals.update(
        md=_markup.markdown,
        code=_markup.highlight,
        lexer_for_path=_markup.lexer_for_path,
        blocks=_view.blocks,
        text_of=_view.text_of,
        images_of=_view.images_of,
        image_src=_view.image_src,
        as_dict=_view.as_dict,
        short_path=_view.short_path,
        format_time=_view.format_time,
        format_tokens=_view.format_tokens,
        pretty_json=_view.pretty_json,
        skill_block=_view.skill_block,
        diff_lines=_view.diff_lines,
        read_range=_view.read_range,
        system_text=_view.system_text,
        system_update_text=_view.system_update_text,
        system_update_summary=_view.system_update_summary,
        tool_infos=_view.tool_infos,
    )
    return env
