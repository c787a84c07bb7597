"""Before the input line first shows: the session to open (``--resume``'s picker, a
session whose working folder is gone) and the startup header."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from rich.text import Text

from ... import __version__
from ...runtime import AgentSession, no_model_message
from ...session import SessionManager
from ...session.listing import session_info
from .dialogs import Dialogs
from .keys import Keymap
from .output import Transcript, plain
from .sessions_ui import SessionPicker, ask_missing_cwd


async def pick_startup_session(args: argparse.Namespace, dialogs: Dialogs, out: Transcript, keymap: Keymap) -> bool:
    """``--resume``: the session picker sets ``args.session`` (``False``: nothing
    picked, exit)."""
    if not SessionManager.list(os.getcwd(), args.session_dir):
        out.line("No saved sessions in this folder: starting a new one", "yellow")
        args.resume = False
        return True
    picker = SessionPicker(dialogs, os.getcwd(), args.session_dir, keymap)
    path = await picker.run()
    if path is None:
        return False
    args.session, args.resume = path, False
    return True


async def check_session_cwd(args: argparse.Namespace, dialogs: Dialogs) -> bool:
    """``--session`` (or a picked session) whose working folder is gone: Continue here
    / Fork / Cancel (``False``: exit)."""
    path = args.session
    if not path or not os.path.isfile(path):
        return True
    info = session_info(path)
    if info is None or not info.cwd or os.path.isdir(info.cwd):
        return True
    choice = await ask_missing_cwd(dialogs, path, info.cwd)
    if choice is None:
        return False
    if choice == "fork":
        args.fork, args.session = path, None
    else:
        args.session_cwd = os.getcwd()
    return True


def print_header(
    session: AgentSession,
    out: Transcript,
    *,
    plugin_header: list[str] | None,
    scoped_models: Callable[[], list[tuple[Any, str | None]]],
    models_option: list[str] | None,
    entries_at_open: int,
) -> None:
    """The startup header; ``quietStartup``: ``true`` leaves it out, ``"header"``
    keeps only its first and last lines; a plugin's ``ctx.ui.set_header``
    (``plugin_header``) replaces it. ``scoped_models``: the models Ctrl+P cycles
    through, from ``--models`` (``models_option``) or ``enabledModels``;
    ``entries_at_open``: entries the session had when it opened."""
    quiet = session.settings.get("quietStartup", False)
    if quiet is True:
        _startup_warnings(session, out)
        return
    if plugin_header is not None:
        for line in plugin_header:
            out.line(plain(line), "cyan")
        _startup_warnings(session, out)
        return
    model = session.model.ref if session.model is not None else "no model"
    out.print(
        Text.assemble(
            (f"pi {__version__}", "bold"),
            (" · ", "dim"),
            (model, "cyan"),
            (f" · thinking {session.thinking_level}", "dim"),
            (" · ", "dim"),
            (session.cwd, ""),
        )
    )
    if quiet != "header":
        resources = session.services.resources
        tools = session.tools
        loaded = [
            f"{len(session.plugins.loaded)} plugins",
            f"{len(tools.active_names)} of {len(tools.all_definitions())} tools active",
        ]
        if resources.context_files:
            loaded.append(", ".join(os.path.basename(c.path) for c in resources.context_files))
        if resources.skills:
            loaded.append(f"{len(resources.skills)} skills")
        if resources.prompt_templates:
            loaded.append(f"{len(resources.prompt_templates)} prompt templates")
        out.line(" · ".join(loaded), "dim")
        scoped = scoped_models()
        if scoped:
            out.line("Model scope (Ctrl+P): " + ", ".join(m.ref for m, _ in scoped), "dim")
        patterns = models_option or session.settings.enabled_models
        if patterns:
            for warning in session.models.resolve_scope(patterns)[1]:
                out.line(f"Model scope: {warning}", "yellow")
        if entries_at_open:
            sm = session.sm
            name = sm.get_session_name() or sm.get_session_id()
            out.line(f"Session {name}: {entries_at_open} entries", "dim")
    _startup_warnings(session, out)
    # wrapped by rich between words (the terminal would cut "exit" in two)
    out.print(
        Text(
            "/help commands · /hotkeys keys · !cmd shell · Enter send · Shift+Enter or Ctrl+J new line · Ctrl+D exit",
            style="dim",
        )
    )


def _startup_warnings(session: AgentSession, out: Transcript) -> None:
    if session.model is None:
        # as print mode refuses to start; here the user can fix it in place
        message = no_model_message(session.models.models_path)
        out.line(f"{message}; then choose it with /model", "yellow")
    elif session.model.api == "faux":
        out.line("Offline demo model: set ANTHROPIC_API_KEY or OPENAI_API_KEY (or /model) for real answers", "yellow")
