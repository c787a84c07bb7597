"""Session commands of interactive mode: the session picker (``/resume``: search,
rename, delete, sort, named only, paths), ``/import``, ``/clone``, ``/export``,
``/share``, ``/copy``, ``/trust``, ``/bug`` and ``/changelog``; and the question asked
for a session whose working folder is gone (Continue here / Fork / Cancel)."""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from rich.markdown import Markdown

from ... import __version__
from ...runtime import MissingSessionCwdError
from ...session import SessionManager
from ...session.listing import SessionInfo
from .base import CommandHost, ago, replay
from .dialogs import Dialogs, Option
from .keys import Keymap
from .render import one_line
from .system import copy_to_clipboard

CwdChoice = Literal["continue", "fork"]


async def ask_missing_cwd(dialogs: Dialogs, session_file: str, cwd: str) -> CwdChoice | None:
    """The session's folder ``cwd`` is gone: continue it here, fork it here, or cancel."""
    here = os.getcwd()
    options: list[Option[CwdChoice]] = [
        Option("continue", "Continue here", f"run it in {here}; asked again next time", key="c"),
        Option("fork", "Fork", f"copy it into a new session of {here}; the original stays unchanged", key="f"),
    ]
    return await dialogs.choose(
        "The session's working folder no longer exists",
        options,
        message=f"{cwd}\n{session_file}",
        filterable=False,
    )


# --------------------------------------------------------------------------- the picker

SortMode = Literal["recent", "created", "name"]
SORTS: tuple[SortMode, ...] = ("recent", "created", "name")
PICKER_ACTIONS: tuple[tuple[str, str], ...] = (
    ("app.session.rename", "rename"),
    ("app.session.delete", "delete"),
    ("app.session.toggleSort", "sort"),
    ("app.session.toggleNamedFilter", "named"),
    ("app.session.togglePath", "paths"),
    ("tui.input.tab", "all"),
)


@dataclass
class SessionPicker:
    """``/resume`` and ``pi --resume``: pick a session; rename or delete one in place."""

    dialogs: Dialogs
    cwd: str
    session_dir: str | None
    keymap: Keymap
    current: str | None = None
    sort: SortMode = "recent"
    named_only: bool = False
    show_paths: bool = False
    all_folders: bool = False
    notes: list[str] = field(default_factory=list)

    def infos(self) -> list[SessionInfo]:
        infos = (
            SessionManager.list_all(self.session_dir)
            if self.all_folders
            else SessionManager.list(self.cwd, self.session_dir)
        )
        if self.named_only:
            infos = [i for i in infos if i.name]
        if self.sort == "created":
            infos.sort(key=lambda i: i.created, reverse=True)
        elif self.sort == "name":
            infos.sort(key=lambda i: ((i.name or "\uffff").lower(), -i.modified.timestamp()))
        return infos

    def option(self, info: SessionInfo) -> Option[str]:
        title = info.name or one_line(info.first_message or "(no messages)", 70)
        details = [ago(info.modified), f"{info.message_count} msgs", info.id[:8]]
        if self.all_folders:
            details.insert(0, info.cwd)
        if self.show_paths:
            details.append(info.path)
        if info.path == self.current:
            details.append("current")
        return Option(info.path, title, " · ".join(details))

    def title(self) -> str:
        view = [f"sorted by {self.sort}"]
        if self.named_only:
            view.append("named only")
        view.append("every folder" if self.all_folders else "this folder")
        return f"Resume which session? ({', '.join(view)})"

    async def run(self) -> str | None:
        query, index = "", 0
        while True:
            infos = self.infos()
            by_path = {i.path: i for i in infos}
            picked = await self.dialogs.pick(
                self.title(),
                [self.option(i) for i in infos],
                actions=self.keymap.picker_actions(PICKER_ACTIONS),
                query=query,
                default=index,
                message="\n".join(self.notes) or ("No sessions match this view" if not infos else ""),
            )
            self.notes = []
            if picked is None:
                return None
            query, index = picked.query, picked.index
            info = by_path.get(picked.value) if picked.value is not None else None
            if picked.action == "select":
                return picked.value
            if picked.action == "sort":
                self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
            elif picked.action == "named":
                self.named_only = not self.named_only
            elif picked.action == "paths":
                self.show_paths = not self.show_paths
            elif picked.action == "all":
                self.all_folders = not self.all_folders
            elif picked.action == "rename" and info is not None:
                await self._rename(info)
            elif picked.action == "delete" and info is not None:
                await self._delete(info)

    async def _rename(self, info: SessionInfo) -> None:
        name = await self.dialogs.text("New name of the session", default=info.name or "", record=False)
        if name is None or not name.strip():
            return
        if info.path == self.current:
            self.notes.append("Rename the current session with /name")
            return
        try:
            manager = SessionManager.open(info.path)
        except Exception as exc:  # locked by another pi, unreadable
            self.notes.append(f"✖ Cannot rename {info.path}: {exc}")
            return
        try:
            manager.append_session_info(name.strip())
            manager.flush()
        finally:
            manager.close()
        self.notes.append(f"Renamed to {name.strip()}")

    async def _delete(self, info: SessionInfo) -> None:
        if info.path == self.current:
            self.notes.append("The current session cannot be deleted")
            return
        title = info.name or one_line(info.first_message or info.id, 60)
        if not await self.dialogs.confirm(
            f"Delete session {title!r}?", f"{info.path} is removed for good", record=False
        ):
            return
        try:
            os.remove(info.path)
        except OSError as exc:
            self.notes.append(f"✖ Cannot delete {info.path}: {exc.strerror or exc}")
            return
        self.notes.append(f"Deleted {info.path}")


async def cmd_resume(app: CommandHost, args: str) -> None:
    session = app.session
    picker = SessionPicker(app.dialogs, session.cwd, app.runtime.session_dir, app.keymap, current=session.session_file)
    path = await picker.run()
    if path is None:
        return
    if path == session.session_file:
        app.out.line("That is the current session", "dim")
        return
    await switch_to(app, path)


async def switch_to(app: CommandHost, path: str) -> None:
    """Resume ``path``; a session whose folder is gone asks Continue here / Fork / Cancel."""
    try:
        result = await app.runtime.switch_session(path)
    except MissingSessionCwdError as missing:
        choice = await ask_missing_cwd(app.dialogs, path, missing.cwd)
        if choice is None:
            app.out.line("Resume cancelled", "yellow")
            return
        if choice == "fork":
            result = await app.runtime.fork_file(path)
        else:
            result = await app.runtime.switch_session(path, cwd=os.getcwd())
    except Exception as exc:
        app.out.line(f"✖ Cannot resume {path}: {exc}", "red")
        return
    if result.get("cancelled"):
        app.out.line("Resume cancelled by a plugin", "yellow")
        return
    app.out.line(f"Resumed {app.session.sm.get_session_id()} in {app.session.cwd}", "green")
    replay(app)


def path_argument(args: str) -> str | None:
    """The first argument, quotes allowed (``/export "my file.html"``)."""
    text = args.strip()
    if not text:
        return None
    try:
        parts = shlex.split(text)
    except ValueError:
        parts = text.split()
    return os.path.expanduser(parts[0]) if parts else None


async def cmd_import(app: CommandHost, args: str) -> None:
    source = path_argument(args)
    if source is None:
        app.out.line("Usage: /import <path.jsonl>", "yellow")
        return
    if not await app.dialogs.confirm("Import session", f"Replace the current session with {source}?"):
        app.out.line("Import cancelled", "yellow")
        return
    try:
        result = await app.runtime.import_session(source)
    except MissingSessionCwdError as missing:
        choice = await ask_missing_cwd(app.dialogs, source, missing.cwd)
        if choice is None:
            app.out.line("Import cancelled", "yellow")
            return
        try:
            if choice == "fork":
                result = await app.runtime.fork_file(source)
            else:
                result = await app.runtime.import_session(source, cwd=os.getcwd())
        except Exception as exc:
            app.out.line(f"✖ Failed to import session: {exc}", "red")
            return
    except Exception as exc:
        app.out.line(f"✖ Failed to import session: {exc}", "red")
        return
    if result.get("cancelled"):
        app.out.line("Import cancelled", "yellow")
        return
    app.out.line(f"Session imported from {source} ({app.session.session_file})", "green")
    replay(app)


async def cmd_clone(app: CommandHost, args: str) -> None:
    leaf = app.session.sm.get_leaf_id()
    if leaf is None:
        app.out.line("Nothing to clone: the session has no entries yet", "yellow")
        return
    result = await app.runtime.fork(leaf, position="at")
    if result.get("cancelled"):
        app.out.line("Clone cancelled by a plugin", "yellow")
        return
    app.out.line(f"Cloned into new session {app.session.sm.get_session_id()}", "green")


# --------------------------------------------------------------------------- export and share


def _write_jsonl(app: CommandHost, target: Path) -> Path:
    sm = app.session.sm
    header = sm.get_header()
    lines = [json.dumps(header.to_json() if header is not None else {}, ensure_ascii=False)]
    lines += [json.dumps(entry.to_json(), ensure_ascii=False) for entry in sm.get_entries()]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return target


def html_export(app: CommandHost) -> Callable[[str | None], Path]:
    """The session as one HTML page (the renderer of :mod:`pi_core.export.html`) in the
    terminal's theme, with what the plugins' renderers draw: taken here, on the loop
    that owns the session; the function returned writes the page (in a thread, it takes
    a while) to a path, by default pi 1.6.0's ``pi-session-<file name>.html`` here."""
    from ...export.html import PluginRenderings, snapshot_session
    from .theme import page_theme

    sm = app.session.sm
    snapshot = snapshot_session(sm)
    theme = getattr(app, "theme", None)
    shown = page_theme(theme) if theme is not None else None
    rendered = PluginRenderings(**app.renderer.export_renderings(list(sm.get_entries())))

    def write(out: str | None) -> Path:
        return Path(snapshot.write_html(out or None, theme=shown, rendered=rendered))

    return write


async def cmd_export(app: CommandHost, args: str) -> None:
    out = path_argument(args)
    if not app.session.sm.get_entries():
        app.out.line("Nothing to export: the session has no entries yet", "yellow")
        return
    try:
        if out is not None and out.endswith(".jsonl"):
            path = await asyncio.to_thread(_write_jsonl, app, Path(out).resolve())
        else:
            path = await asyncio.to_thread(html_export(app), out)
    except ImportError:
        app.out.line("✖ HTML export is not available in this installation: use /export <file>.jsonl", "red")
        return
    except OSError as exc:
        app.out.line(f"✖ Failed to export session: {exc.strerror or exc}: {exc.filename or out}", "red")
        return
    except Exception as exc:
        app.out.line(f"✖ Failed to export session: {exc}", "red")
        return
    app.out.line(f"Session exported to: {path}", "green")


async def cmd_share(app: CommandHost, args: str) -> None:
    gh = shutil.which("gh")
    if gh is None:
        app.out.line(
            "✖ /share needs the GitHub CLI (gh): install it from https://cli.github.com and run gh auth login", "red"
        )
        return
    if not app.session.sm.get_entries():
        app.out.line("Nothing to share: the session has no entries yet", "yellow")
        return
    if not await app.dialogs.confirm(
        "Share this session as a secret GitHub gist?",
        "Anyone with the link can read it: prompts, tool output, file contents and any secrets they show.",
    ):
        app.out.line("Share cancelled", "yellow")
        return
    with tempfile.TemporaryDirectory(prefix="pi-share-") as scratch:
        try:
            page = await asyncio.to_thread(html_export(app), os.path.join(scratch, "session.html"))
        except ImportError:
            page = await asyncio.to_thread(_write_jsonl, app, Path(scratch) / "session.jsonl")
        process = await asyncio.create_subprocess_exec(
            gh,
            "gist",
            "create",
            "--desc",
            f"pi session {app.session.sm.get_session_id()}",
            str(page),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
        )
        stdout, stderr = await process.communicate()
    if process.returncode != 0:
        detail = (stderr or stdout).decode(errors="replace").strip().splitlines()
        app.out.line(f"✖ gh gist create failed: {detail[-1] if detail else f'exit code {process.returncode}'}", "red")
        return
    url = stdout.decode(errors="replace").strip().splitlines()[-1]
    app.out.line(f"Secret gist: {url}", "green")


# --------------------------------------------------------------------------- clipboard


async def cmd_copy(app: CommandHost, args: str) -> None:
    text = app.session.get_last_assistant_text().strip()
    if not text:
        app.out.line("✖ No agent messages to copy yet.", "red")
        return
    how = await asyncio.to_thread(copy_to_clipboard, text, app.out.write)
    if not how:
        app.out.line("✖ Clipboard unavailable: no clipboard tool, and the text exceeds the OSC 52 size limit", "red")
        return
    note = " (through the terminal: OSC 52)" if how == "OSC 52" else ""
    app.out.line(f"Copied last agent message to clipboard{note}", "green")


# --------------------------------------------------------------------------- trust


async def cmd_trust(app: CommandHost, args: str) -> None:
    from ...resources.trust import TrustStore, TrustStoreError

    cwd = app.session.cwd
    store = TrustStore()
    try:
        saved = store.get(cwd)
    except TrustStoreError as exc:
        app.out.line(f"✖ {exc}", "red")
        return
    now = "trusted" if saved else "not trusted" if saved is False else "no saved decision"
    options: list[Option[str]] = [
        Option("trust", "Trust this folder", "load its project plugins, settings and skills", key="t"),
        Option("distrust", "Do not trust this folder", "ignore the project's own files", key="n"),
        Option("forget", "Forget the saved decision", "ask again next time", key="f"),
    ]
    picked = await app.dialogs.choose(
        f"Project trust for {cwd}",
        options,
        message=f"Saved: {now}. The choice applies to future pi processes; /reload applies it now.",
        filterable=False,
    )
    if picked is None:
        return
    label = next(o.label for o in options if o.value == picked)
    try:
        await asyncio.to_thread(store.set, cwd, {"trust": True, "distrust": False}.get(picked))
    except TrustStoreError as exc:
        app.out.line(f"✖ {exc}", "red")
        return
    app.session.services.options.trust_cache.clear()  # decided again on /reload
    app.out.line(f"{label}: saved in {store.path} (run /reload to apply it now)", "green")


# --------------------------------------------------------------------------- bug report


def _bug_metadata(app: CommandHost) -> dict[str, Any]:
    session = app.session
    model = session.model
    settings = session.settings
    return {
        "pi": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "terminal": os.environ.get("TERM_PROGRAM") or os.environ.get("TERM") or "",
        "model": model.ref if model is not None else None,
        "api": model.api if model is not None else None,
        "thinkingLevel": session.thinking_level,
        "plugins": [record.name for record in session.plugins.loaded],
        "settings": {"user": settings.user, "project": settings.project},
        "created": datetime.now(UTC).isoformat(),
    }


def write_bug_report(app: CommandHost, description: str, include_session: bool, out_dir: Path) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    target = out_dir / f"pi-bug-report-{stamp}.zip"
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("description.txt", description + "\n")
        archive.writestr("metadata.json", json.dumps(_bug_metadata(app), indent=2, default=str) + "\n")
        if include_session:
            with tempfile.TemporaryDirectory(prefix="pi-bug-") as scratch:
                archive.write(_write_jsonl(app, Path(scratch) / "session.jsonl"), "session.jsonl")
    return target


async def cmd_bug(app: CommandHost, args: str) -> None:
    description = await app.dialogs.text(
        "What went wrong? (the report stays on your machine until you send it)", default=args.strip(), record=False
    )
    if description is None:
        app.out.line("Bug report cancelled", "yellow")
        return
    include = await app.dialogs.choose(
        "Include the session transcript?",
        [Option(True, "Yes, include the transcript", key="y"), Option(False, "No", key="n")],
        message=(
            "It holds your messages, the model's answers, tool calls and their output (file contents, command output)."
        ),
        filterable=False,
    )
    if include is None:
        app.out.line("Bug report cancelled", "yellow")
        return
    try:
        path = await asyncio.to_thread(write_bug_report, app, description, include, Path(app.session.cwd))
    except OSError as exc:
        app.out.line(f"✖ Cannot write the bug report: {exc.strerror or exc}: {exc.filename}", "red")
        return
    app.out.line(f"Bug report written to {path}", "green")
    app.out.line("Review it, then attach it to an issue at the project's issue tracker (it names no API keys).", "dim")


# --------------------------------------------------------------------------- changelog


def changelog_text() -> str | None:
    from importlib import resources

    try:
        return resources.files("pi_core").joinpath("CHANGELOG.md").read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None


async def cmd_changelog(app: CommandHost, args: str) -> None:
    text = changelog_text()
    if text is None:
        app.out.line("✖ This installation has no changelog (pi_core/CHANGELOG.md)", "red")
        return
    full = args.strip() == "all"
    sections = text.split("\n## ")
    shown = text if full or len(sections) <= 3 else "\n## ".join(sections[:3])
    app.out.print(Markdown(app.renderer.transform_markdown(shown, "changelog")))
    if not full and len(sections) > 3:
        app.out.line("/changelog all shows every version", "dim")
