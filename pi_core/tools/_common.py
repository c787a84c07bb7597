"""What the built-in tools share: errors, path resolution, the tool context accessors,
abort handling and building a :class:`~pi_hookspecs.ToolDefinition` from a pydantic
argument model.

The tools rely on four things of the tool context only: ``ctx.cwd``, ``ctx.signal``
(an :class:`~pi_hookspecs.AbortSignal` or ``None``), ``ctx.update(partial)`` and
``ctx.get_settings()`` (plus, for ``bash``, the runtime's ``bash_spawn`` hook when the
context has one). ``ctx.model`` and ``ctx.session_manager`` are read when the
context has them (for the read tool's non-vision note and the bash tool's ``PI_*``
variables) and skipped otherwise.
"""

from __future__ import annotations

import asyncio
import copy
import os
import re
import threading
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

import pi_hookspecs
from pi_hookspecs import (
    AbortSignal,
    ExecutionMode,
    TextContent,
    ToolAnnotations,
    ToolDefinition,
    ToolResult,
)

from .mutation_queue import file_mutation_lock
from .truncate import DEFAULT_MAX_BYTES, format_size, truncate_head

if TYPE_CHECKING:  # occasional (pi_hookspecs.events.OCCASIONAL): made only for a file_access handler
    from pi_hookspecs import FileAccessResult

T = TypeVar("T")
A = TypeVar("A", bound=BaseModel)

ABORTED_MESSAGE = "Operation aborted"


class ToolError(Exception):
    """A failure the model should read: returned as an error result with this text."""

    def __init__(self, message: str, *, details: Any = None) -> None:
        super().__init__(message)
        self.details = details


class ToolArgs(BaseModel):
    """Base of the argument models: unknown keys are ignored, as the TypeScript pi does.
    A model's validator is built when its tool first runs (``defer_build``); the JSON
    Schema the model sees is generated ahead (:mod:`pi_core.tools._schemas`)."""

    model_config = ConfigDict(extra="ignore", defer_build=True)


# --------------------------------------------------------------------------- context


def ctx_cwd(ctx: Any) -> str:
    cwd = getattr(ctx, "cwd", None)
    return str(cwd) if cwd else os.getcwd()


def ctx_signal(ctx: Any) -> AbortSignal | None:
    signal = getattr(ctx, "signal", None)
    return signal if isinstance(signal, AbortSignal) else None


def ctx_settings(ctx: Any) -> dict[str, Any]:
    getter = getattr(ctx, "get_settings", None)
    if getter is None:
        return {}
    try:
        settings = getter()
    except Exception:  # a detached or stale context: behave as with no settings
        return {}
    return settings if isinstance(settings, dict) else {}


def ctx_optional(ctx: Any, name: str) -> Any:
    """An optional context attribute (``model``, ``session_manager`` …), ``None`` when
    the context lacks it or cannot provide it here (no session yet)."""
    try:
        return getattr(ctx, name, None)
    except Exception:
        return None


async def ctx_bash_spawn(ctx: Any, make_event: Callable[[], Any]) -> Any:
    """The ``bash_spawn`` hook of the runtime the tool runs in: a
    :class:`~pi_core.tools.shell.PreparedSpawn`, or ``None`` when no plugin handles it
    (or the context belongs to no runtime). ``make_event`` builds the event only when
    it is needed."""
    spawn = getattr(ctx, "_bash_spawn", None)
    if spawn is None:
        return None
    return await spawn(make_event)


async def ctx_file_access(
    ctx: Any, operation: Literal["read", "write"], path: str, *, tool_name: str, content: str | None = None
) -> FileAccessResult | None:
    """The ``file_access`` hook of the runtime the tool runs in: the handler's
    :class:`~pi_hookspecs.FileAccessResult`, or ``None`` when no handler took the
    operation (do it locally). A handler that refused the operation (``block``) or
    failed raises :class:`ToolError` with its reason."""
    access = getattr(ctx, "_file_access", None)
    if access is None:
        return None
    outcome = await access(
        lambda: pi_hookspecs.FileAccessEvent(  # occasional: made only when a plugin implements file_access
            operation=operation,
            path=path,
            content=content,
            tool_name=tool_name,
            tool_call_id=ctx_optional(ctx, "tool_call_id"),
        )
    )
    if outcome is None or isinstance(outcome, pi_hookspecs.FileAccessResult):
        return outcome
    raise ToolError(str(getattr(outcome, "reason", None) or outcome))


def text_result(text: str, details: Any = None, *, is_error: bool = False) -> ToolResult:
    """A built-in tool's text result, constructed from pi's own values without
    validation (``ToolResult.text`` / ``ToolResult.error`` validate what plugins pass)."""
    return ToolResult.model_construct(
        content=[TextContent.model_construct(type="text", text=text)], details=details, is_error=is_error
    )


def ctx_update(ctx: Any, partial: ToolResult) -> None:
    update = getattr(ctx, "update", None)
    if update is None:
        return
    try:
        update(partial)
    except Exception:  # progress is best effort; a broken listener must not fail the tool
        pass


def setting(settings: dict[str, Any], dotted: str, default: Any = None) -> Any:
    """``setting(s, "images.blockImages")`` reads nested keys."""
    value: Any = settings
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return default
        value = value[part]
    return value


def raise_if_aborted(signal: AbortSignal | None) -> None:
    if signal is not None and signal.aborted:
        raise ToolError(ABORTED_MESSAGE)


async def run_abortable(signal: AbortSignal | None, awaitable: Awaitable[T]) -> T:
    """Await ``awaitable`` unless ``signal`` aborts first (then cancel it and raise
    :class:`ToolError` "Operation aborted")."""
    task = asyncio.ensure_future(awaitable)
    if signal is None:
        return await task
    if signal.aborted:
        task.cancel()
        raise ToolError(ABORTED_MESSAGE)
    waiter = asyncio.ensure_future(signal.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    task.cancel()
    raise ToolError(ABORTED_MESSAGE)


async def run_to_completion(fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args)`` in a worker thread. If the awaiting task is cancelled, wait
    for the thread to finish before passing the cancellation on, so that a file
    operation never outlives the mutation-queue slot it holds."""
    future = asyncio.ensure_future(asyncio.to_thread(fn, *args))
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        await asyncio.wait({future})
        raise


async def run_stoppable(signal: AbortSignal | None, fn: Callable[..., T], *args: Any) -> T:
    """Run ``fn(*args, stop)`` in a worker thread; ``stop`` is a :class:`threading.Event`
    set when ``signal`` aborts or the awaiting task is cancelled, for ``fn`` to return
    early. Raises :class:`ToolError` "Operation aborted" after an abort."""
    stop = threading.Event()
    remove = signal.add_callback(lambda _reason: stop.set()) if signal is not None else None
    try:
        result = await asyncio.to_thread(fn, *args, stop)
    except asyncio.CancelledError:
        stop.set()
        raise
    finally:
        if remove is not None:
            remove()
    raise_if_aborted(signal)
    return result


async def run_async_file_mutation(ctx: Any, path: str, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``await fn(resolved, path, *args)`` inside the mutation queue of the file
    ``path`` names, like :func:`run_file_mutation` (for work that awaits, e.g. the
    ``file_access`` hook)."""
    signal = ctx_signal(ctx)
    resolved = resolve_path(path, ctx_cwd(ctx))
    async with file_mutation_lock(resolved):
        raise_if_aborted(signal)
        return await fn(resolved, path, *args)


async def run_file_mutation(ctx: Any, path: str, fn: Callable[..., T], *args: Any) -> T:
    """``fn(resolved, path, *args)`` in a worker thread, inside the mutation queue of the
    file ``path`` names (resolved against the context's cwd). The abort is checked inside
    the queue, not raced against: the file operation finishes before the queue moves on,
    so an abort can never interleave two writers."""
    signal = ctx_signal(ctx)
    resolved = resolve_path(path, ctx_cwd(ctx))
    async with file_mutation_lock(resolved):
        raise_if_aborted(signal)
        return await run_to_completion(fn, resolved, path, *args)


# --------------------------------------------------------------------------- paths

_UNICODE_SPACES = re.compile("[\u00a0\u2000-\u200a\u202f\u205f\u3000]")


def normalize_path_input(path: str) -> str:
    """What a model wrote as a path, cleaned: unicode spaces become plain spaces, a
    leading ``@`` is dropped and ``~`` is expanded."""
    path = _UNICODE_SPACES.sub(" ", path)
    if path.startswith("@"):
        path = path[1:]
    if path == "~" or path.startswith("~/") or path.startswith("~" + os.sep):
        path = os.path.expanduser(path)
    return path


def resolve_path(path: str, cwd: str) -> str:
    """``path`` made absolute against ``cwd`` (after :func:`normalize_path_input`)."""
    path = normalize_path_input(path)
    return os.path.normpath(os.path.join(cwd, path))


def require_path(path: str, *, directory: bool = False) -> None:
    """Raise :class:`ToolError` when ``path`` does not exist (or, with ``directory``, is
    not a directory)."""
    if not os.path.exists(path):
        raise ToolError(f"Path not found: {path}")
    if directory and not os.path.isdir(path):
        raise ToolError(f"Not a directory: {path}")


def search_root(path: str | None, ctx: Any, *, directory: bool = False) -> str:
    """The ``path`` argument of a search tool (default: the working directory) resolved
    against the context's cwd and checked with :func:`require_path`."""
    root = resolve_path(path or ".", ctx_cwd(ctx))
    require_path(root, directory=directory)
    return root


def rename_path_alias(args: Any) -> Any:
    """``prepare_arguments`` of the path tools: some models write ``file_path``."""
    if isinstance(args, dict) and "path" not in args and isinstance(args.get("file_path"), str):
        args = {**args, "path": args["file_path"]}
        args.pop("file_path", None)
    return args


# --------------------------------------------------------------------------- definitions


def _clean_schema(node: Any) -> Any:
    """pydantic's JSON Schema made model-friendly: no titles, ``X | None`` shown as
    ``X`` (optional by not being required), no ``default: null``."""
    if isinstance(node, list):
        return [_clean_schema(v) for v in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        out[key] = _clean_schema(value)
    any_of = out.get("anyOf")
    if isinstance(any_of, list):
        rest = [v for v in any_of if v != {"type": "null"}]
        if len(rest) == 1 and len(rest) < len(any_of):
            merged = {**out, **rest[0]}
            merged.pop("anyOf")
            return merged
    return out


def _inline_refs(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = defs[ref.removeprefix("#/$defs/")]
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _inline_refs({**target, **rest}, defs)
    return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of ``model`` as a self-contained object schema (no ``$ref``)."""
    raw = model.model_json_schema()
    schema = _clean_schema(_inline_refs(raw, raw.get("$defs", {})))
    schema.setdefault("properties", {})
    return schema  # type: ignore[no-any-return]


def tool_parameters(name: str, args_model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a built-in tool's arguments: generated ahead for the built-in
    tools (deriving it from the model costs about a millisecond a tool, on every start),
    derived from ``args_model`` for any other."""
    from ._schemas import PARAMETERS

    known = PARAMETERS.get(name)
    if known is None:
        return json_schema(args_model)
    return copy.deepcopy(known)


def define_tool(
    *,
    name: str,
    description: str,
    args_model: type[A],
    run: Callable[[A, Any], Awaitable[ToolResult]],
    prompt_snippet: str,
    prompt_guidelines: list[str],
    annotations: ToolAnnotations,
    default_active: bool = True,
    execution_mode: ExecutionMode = "parallel",
    prepare_arguments: Callable[[Any], Any] | None = None,
    constrained_sampling: dict[str, Any] | None = None,
) -> ToolDefinition:
    """A built-in tool: arguments validated with ``args_model`` (also when ``execute``
    is called directly), :class:`ToolError` turned into an error result."""

    async def execute(args: dict[str, Any], ctx: Any) -> ToolResult:
        raw = prepare_arguments(args) if prepare_arguments is not None else args
        params = args_model.model_validate(raw if raw is not None else {})
        try:
            return await run(params, ctx)
        except ToolError as exc:
            # as pi 1.6.0 records a tool that threw: details an empty object unless given
            return ToolResult.error(str(exc), details=exc.details if exc.details is not None else {})

    # pi's own tools: constant names and texts, nothing a validator would change.
    return ToolDefinition.model_construct(
        name=name,
        label=name,
        description=description,
        parameters=tool_parameters(name, args_model),
        execute=execute,
        prompt_snippet=prompt_snippet,
        prompt_guidelines=prompt_guidelines,
        execution_mode=execution_mode,
        default_active=default_active,
        annotations=annotations,
        args_model=args_model,
        prepare_arguments=prepare_arguments,
        constrained_sampling=constrained_sampling,
    )


STRICT_PREFERRED: dict[str, Any] = {"type": "json_schema", "strict": "prefer"}
"""The constrained sampling pi's read, bash, edit and write ask for (as pi 1.6.0's):
strict arguments where the model and the schema allow it."""


def read_only_annotations(title: str) -> ToolAnnotations:
    """The annotations of a tool that only looks at local files."""
    return ToolAnnotations.model_construct(
        title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )


def destructive_annotations(title: str, *, idempotent: bool, open_world: bool = False) -> ToolAnnotations:
    """The annotations of a tool that changes files (or runs commands)."""
    return ToolAnnotations.model_construct(
        title=title,
        read_only_hint=False,
        destructive_hint=True,
        idempotent_hint=idempotent,
        open_world_hint=open_world,
    )


# --------------------------------------------------------------------------- results


def listing_result(
    lines: list[str],
    *,
    limit: int,
    limit_reached: bool,
    unit: str,
    limit_key: str,
    refine: bool = False,
    notes: Iterable[tuple[str, str, Any]] = (),
) -> ToolResult:
    """``lines`` as one text result, cut to :data:`DEFAULT_MAX_BYTES`, ending in a
    bracketed notice of each limit reached, each also recorded in the details: the
    ``limit`` of ``unit`` (under ``limit_key``; ``refine`` suggests refining the
    pattern), the byte limit, then the ``notes`` (notice, details key, value)."""
    truncation = truncate_head("\n".join(lines), max_lines=2**62)
    output = truncation.content
    details: dict[str, Any] = {}
    notices = []
    if limit_reached:
        hint = ", or refine pattern" if refine else ""
        notices.append(f"{limit} {unit} limit reached. Use limit={limit * 2} for more{hint}")
        details[limit_key] = limit
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation.to_json()
    for notice, key, value in notes:
        notices.append(notice)
        details[key] = value
    if notices:
        output += "\n\n[" + ". ".join(notices) + "]"
    return ToolResult.text(output, details=details or None)


def os_error_text(exc: OSError) -> str:
    """A short reason for an OS error: "permission denied", "not a directory", …"""
    if isinstance(exc, FileNotFoundError):
        return "file not found"
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, IsADirectoryError):
        return "is a directory"
    if isinstance(exc, NotADirectoryError):
        return "a parent is not a directory"
    return (exc.strerror or str(exc)).lower()
