"""From parsed command-line options to a running session runtime."""

from __future__ import annotations

import argparse
import base64
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import field
from pathlib import Path
from typing import Any

from pi_hookspecs import ImageContent
from pi_hookspecs.record import dataclass

from ..resources.loader import ResourceOptions
from ..resources.settings import THINKING_LEVELS, Settings, apply_http_proxy, session_dir_setting
from ..runtime import ServiceOptions, SessionRuntime
from ..runtime.services import RequiredExtensionError
from ..session import SessionManager
from ..session.paths import SESSION_DIR_ENV
from ..session.persistence import SessionWriteError
from .options import plugin_flag_values
from .process import startup_done

IMAGE_MAGIC = {
    b"\x89PNG\r\n\x1a\n": "image/png",
    b"\xff\xd8\xff": "image/jpeg",
    b"GIF87a": "image/gif",
    b"GIF89a": "image/gif",
}


class CliError(Exception):
    """A user error on the command line: printed to stderr, exit status 1."""


@dataclass
class InitialInput:
    """The prompts and images the command line gave (``@file`` arguments read)."""

    prompts: list[str] = field(default_factory=list)
    images: list[ImageContent] = field(default_factory=list)


def _image_type(data: bytes) -> str | None:
    for magic, mime in IMAGE_MAGIC.items():
        if data.startswith(magic):
            return mime
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def initial_input(messages: list[str], *, stdin_text: str | None, cwd: str) -> InitialInput:
    """Prompts from the arguments: ``@path`` arguments become ``<file>`` blocks (or image
    attachments) of the first prompt; piped stdin is prepended to the first prompt."""
    files_text = ""
    images: list[ImageContent] = []
    prompts: list[str] = []
    for message in messages:
        if message.startswith("@") and len(message) > 1:
            path = Path(os.path.expanduser(message[1:]))
            path = path if path.is_absolute() else Path(cwd) / path
            if not path.is_file():
                raise CliError(f"File not found: {path}")
            data = path.read_bytes()
            if not data:
                continue
            mime = _image_type(data)
            if mime:
                images.append(ImageContent(data=base64.b64encode(data).decode(), mime_type=mime))
                files_text += f'<file name="{path}"></file>\n'
            else:
                files_text += f'<file name="{path}">\n{data.decode("utf-8", errors="replace")}\n</file>\n'
        else:
            prompts.append(message)
    head = "".join(part for part in (stdin_text and stdin_text.rstrip("\n") + "\n\n", files_text) if part)
    if head:
        if prompts:
            prompts[0] = head + prompts[0]
        else:
            prompts.append(head.rstrip("\n"))
    return InitialInput(prompts=prompts, images=images)


def _session_manager(args: argparse.Namespace, cwd: str) -> SessionManager:
    session_dir = args.session_dir
    if args.fork and (args.session or args.continue_ or args.resume or args.no_session):
        raise CliError("--fork cannot be combined with --session, --continue, --resume or --no-session")
    if args.session_id and (args.session or args.continue_ or args.resume):
        raise CliError("--session-id cannot be combined with --session, --continue or --resume")
    if args.no_session:
        return SessionManager.in_memory(cwd, session_id=args.session_id)
    if args.fork:
        source = (
            args.fork if Path(args.fork).is_file() else SessionManager.find(args.fork, cwd=cwd, session_dir=session_dir)
        )
        return SessionManager.fork_from(source, cwd, session_dir=session_dir)
    if args.session:
        from ..session.listing import resolve_session_arg

        # a path (a new session is saved there when no file is yet) or a session id
        path = resolve_session_arg(args.session, cwd=cwd, session_dir=session_dir)
        # interactive mode's "Continue here" for a session whose folder is gone
        return SessionManager.open(path, session_dir=session_dir, cwd=getattr(args, "session_cwd", None))
    if args.continue_:
        return SessionManager.continue_recent(cwd, session_dir)
    if args.session_id:
        # claimed first: two processes starting the same id cannot both create it
        from ..session.paths import resolve_session_dir
        from ..session.storage import SessionIdClaim

        SessionIdClaim.take(str(resolve_session_dir(cwd, session_dir)), args.session_id)
        try:
            return SessionManager.open(SessionManager.find(args.session_id, cwd=cwd, session_dir=session_dir))
        except Exception:
            return SessionManager.create(cwd, session_dir=session_dir, session_id=args.session_id)
    return SessionManager.create(cwd, session_dir=session_dir)


def resolved_session_dir(args: argparse.Namespace, cwd: str) -> str | None:
    """Where sessions live: ``--session-dir``, else ``$PI_CODING_AGENT_SESSION_DIR``
    (read by the session store), else the ``sessionDir`` setting (a project's only when
    the project is trusted before the session starts: ``--approve``, a saved decision or
    ``defaultProjectTrust``), else ``None``."""
    if args.session_dir:
        return str(args.session_dir)
    if os.environ.get(SESSION_DIR_ENV, "").strip():
        return None
    setting = session_dir_setting(cwd, approve=getattr(args, "approve", None))
    return str(setting) if setting is not None else None


def model_scope(args: argparse.Namespace, settings: Settings) -> list[str]:
    """The model patterns of ``--models``, else of the ``enabledModels`` setting."""
    return list(args.models or settings.enabled_models or [])


def _start_in_scope(session: Any, args: argparse.Namespace) -> str | None:
    """A new session without ``--model`` starts on the first usable model of the scope
    (``--models`` / ``enabledModels``) unless the default model is in it, as pi 1.6.0."""
    patterns = model_scope(args, session.services.resources.settings)
    if not patterns:
        return None
    selections, warnings = session.models.resolve_scope(patterns)
    for warning in warnings:
        print(f"pi: {warning}", file=sys.stderr)
    current = session.agent.state.model
    offered = {model.ref for model in session.models.available(current)}
    usable = [s for s in selections if s.model.ref in offered]
    if not usable:
        return None
    chosen = next((s for s in usable if current is not None and s.model.ref == current.ref), usable[0])
    session.agent.state.model = chosen.model
    if chosen.thinking_level and not args.thinking:
        session.agent.state.thinking_level = session.clamp_thinking_level(chosen.thinking_level)
    level: str | None = chosen.thinking_level
    return level


def service_options(
    args: argparse.Namespace,
    *,
    mode: str,
    ui: Any = None,
    ask_user_trust: Callable[[str], Awaitable[Any]] | None = None,
) -> ServiceOptions:
    return ServiceOptions(
        mode=mode,
        ui=ui,
        ask_user_trust=ask_user_trust,
        cli_extensions=list(args.extension),
        no_extensions=args.no_extensions,
        approve=args.approve,
        resource_options=ResourceOptions(
            skill_paths=list(args.skill),
            prompt_template_paths=list(args.prompt_template),
            no_skills=args.no_skills,
            no_prompt_templates=args.no_prompt_templates,
            no_context_files=args.no_context_files,
            system_prompt=args.system_prompt,
            append_system_prompt=list(args.append_system_prompt),
        ),
        flags=plugin_flag_values(args),
        tools=args.tools,
        exclude_tools=list(args.exclude_tools or []),
        no_tools=args.no_tools,
        no_builtin_tools=args.no_builtin_tools,
    )


async def open_runtime(
    args: argparse.Namespace,
    *,
    mode: str,
    ui: Any = None,
    cwd: str | None = None,
    start: bool = True,
    ask_user_trust: Callable[[str], Awaitable[Any]] | None = None,
) -> SessionRuntime:
    """Create the runtime the options describe: session, plugins, model, thinking.
    ``ask_user_trust(cwd)`` asks the user whether to trust the project (with a UI).
    With ``start=False`` the caller subscribes to the runtime's events first (so it sees
    what ``session_start`` handlers report) and then calls :func:`start_runtime`."""
    try:
        runtime = await _open_runtime(args, mode=mode, ui=ui, cwd=cwd, ask_user_trust=ask_user_trust)
    finally:
        startup_done()  # the collector was paused for start-up (process entry only)
    if start:
        await start_runtime(runtime, args)
    return runtime


async def _open_runtime(
    args: argparse.Namespace,
    *,
    mode: str,
    ui: Any,
    cwd: str | None,
    ask_user_trust: Callable[[str], Awaitable[Any]] | None,
) -> SessionRuntime:
    if args.offline:
        os.environ["PI_OFFLINE"] = "1"
    if args.thinking and args.thinking not in THINKING_LEVELS:
        # As pi 1.6.0: a warning, and the level the session would have had anyway.
        print(
            f'pi: warning: invalid thinking level "{args.thinking}" ignored (valid: {", ".join(THINKING_LEVELS)})',
            file=sys.stderr,
        )
        args.thinking = None
    cwd = str(Path(cwd or os.getcwd()).resolve())
    args.session_dir = resolved_session_dir(args, cwd)
    try:
        manager = _session_manager(args, cwd)
    except CliError:
        raise
    except OSError as exc:  # opening or claiming a session on a file system that refuses it
        where = f" {exc.filename}" if exc.filename else ""
        raise CliError(f"cannot write session{where}: {exc.strerror or exc}") from exc
    except Exception as exc:
        raise CliError(str(exc)) from exc
    options = service_options(args, mode=mode, ui=ui, ask_user_trust=ask_user_trust)
    chosen: dict[str, Any] = {}

    def resolve_model(models: Any) -> Any:
        # --model, resolved as soon as the registry exists (the session starts with it)
        try:
            chosen["selection"] = models.resolve(args.model, provider=args.provider)
        except Exception as exc:
            chosen["error"] = exc
            return None
        return chosen["selection"].model

    try:
        runtime = await SessionRuntime.create(
            manager.get_cwd(),
            options,
            session_manager=manager,
            session_dir=args.session_dir,
            start=False,
            model=resolve_model if args.model else None,
        )
    except RequiredExtensionError as exc:  # named plugins and the fix; never a traceback
        raise CliError(str(exc)) from exc
    try:
        # A session whose file is written after the first answer: make sure now that it
        # can be (a read-only or full file system), before any request is paid for.
        manager.check_storage()
    except SessionWriteError as exc:
        raise CliError(str(exc)) from exc
    session = runtime.session
    settings = session.services.resources.settings
    apply_http_proxy(settings)
    suffix_level: str | None = None
    if args.model:
        if "error" in chosen:
            # what was skipped while loading (a models.json entry with a bad field, a
            # plugin that failed) is often why the model is missing: said first
            for line in diagnostics_of(runtime):
                print(f"pi: {line}", file=sys.stderr)
            raise CliError(str(chosen["error"])) from chosen["error"]
        selection = chosen["selection"]
        if selection.warning:
            print(f"pi: {selection.warning}", file=sys.stderr)
        session.agent.state.model = selection.model
        suffix_level = selection.thinking_level
        if selection.thinking_level and not args.thinking:
            session.agent.state.thinking_level = session.clamp_thinking_level(selection.thinking_level)
    elif args.provider:
        raise CliError("--provider needs --model")
    elif not manager.get_entry_count():
        suffix_level = _start_in_scope(session, args)
    if args.api_key:
        if not args.model:
            raise CliError("--api-key needs a model selected with --model")
        session.api_key_override = args.api_key
    if args.thinking:
        session.agent.state.thinking_level = session.clamp_thinking_level(args.thinking)
    elif not manager.get_entry_count() and not suffix_level and session.agent.state.model is not None:
        # A new session's level follows the model the options chose (its
        # modelThinkingLevels entry, else defaultThinkingLevel), not the one the
        # session was created with before --model applied.
        per_model = settings.model_thinking_level(session.agent.state.model.ref)
        session.agent.state.thinking_level = session.clamp_thinking_level(per_model or settings.default_thinking_level)
    return runtime


async def start_runtime(runtime: SessionRuntime, args: argparse.Namespace) -> None:
    """Fire ``session_start`` (and ``resources_discover``), then apply ``--name``.
    Interactive and RPC mode then refresh the plugins' dynamic model catalogues in the
    background, as pi 1.6.0 does (not with ``--offline`` / ``PI_OFFLINE``)."""
    await runtime.session.start("startup")
    if args.name:
        await runtime.session.set_session_name(args.name)
    session = runtime.session
    if session.services.options.mode in ("tui", "rpc") and session.models.dynamic_providers():
        from .update_models import background_refresh

        background_refresh(session)


def diagnostics_of(runtime: SessionRuntime) -> list[str]:
    """Load problems worth telling the user about: plugins, settings, resources, models."""
    session = runtime.session
    out = [d.format() for d in session.plugins.diagnostics if d.level in ("error", "warning")]
    out += [
        str(d)
        for d in session.services.resources.diagnostics
        if d.level == "error" or (d.level == "warning" and d.kind == "settings")
    ]
    out += session.services.diagnostics
    out += [str(d) for d in session.sm.diagnostics]  # skipped or repaired lines of the session file
    return out
