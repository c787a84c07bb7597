"""The snapshot loop: run one script in a prepared sandbox session.

The sandbox suspends whenever the script reaches the host, and the loop answers:

* ``tools.<name>(**args)`` — the call goes through ``ctx.execute_tool`` (validation,
  ``tool_call`` gate, execution, ``tool_result``) and the snapshot resumes with its value,
  or with ``RuntimeError(<the tool's error text>)``;
* ``async_tools.<name>(**args)`` — the call starts as a task and the script gets a
  future; when every sandbox task waits on futures, the loop resumes it with whichever
  calls finished, so ``asyncio.gather`` runs tool calls concurrently;
* ``call_tool(name, **args)`` / ``call_tool_async(name, **args)`` — the same, for a tool
  named at run time (the sandbox has no ``getattr``);
* ``models.<function>(...)`` — the model catalogue and classifier / image calls
  (:mod:`pi_codemode.models_api`); ``models.classify_async`` and
  ``models.generate_images_async`` give futures, like ``async_tools``;
* ``text()``, ``image()``, ``store()``, ``load()``, ``search_tools()``, ``describe_tool()``,
  ``describe_namespace()`` — answered here; ``exit()`` ends the script;
* file system and OS calls — refused with ``PermissionError``; undefined names — ``NameError``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pi_hookspecs import ImageContent, ToolResult

from .catalog import Catalog, CatalogTool
from .discovery import Discovery
from .models_api import ASYNC_FUNCTIONS, ModelsApi
from .output import Output
from .store import ScriptStore

if TYPE_CHECKING:
    from pydantic_monty import AsyncFunctionSnapshot, AsyncFutureSnapshot, AsyncMontySession

__all__ = ["MAX_TOOL_CALLS", "ScriptAbort", "ScriptExit", "ScriptRun", "ToolCallError"]

MAX_TOOL_CALLS = 1_000
FS_REFUSED = "codemode scripts have no file system or OS access; use tools (tools.read, tools.bash …) instead"
_ARGS_PREVIEW = 200
_ERROR_PREVIEW = 500


class ToolCallError(Exception):
    """A nested call failed; raised in the script as ``RuntimeError``."""


class ScriptExit(Exception):
    """``exit()``: the script ends successfully."""


class ScriptAbort(Exception):
    """A host-side limit ended the script (it fails with this message)."""


_SCRIPT_ERRORS = (ToolCallError, TypeError, ValueError, NameError)
"""Errors of a host call that the script sees (and may catch); others end the script."""


def _jsonable(value: Any, where: str) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{where}: {value} is not a JSON number")
        return value
    if isinstance(value, list | tuple):
        return [_jsonable(v, where) for v in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: dict keys must be strings, got {type(key).__name__}")
            out[key] = _jsonable(item, where)
        return out
    raise TypeError(f"{where}: a {type(value).__name__} cannot be passed to a tool (use JSON values)")


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def script_value(tool: CatalogTool, result: ToolResult) -> Any:
    """What a call returns to the script (see :mod:`pi_codemode.stubs`)."""
    if tool.structured and result.structured_content is not None:
        return json.loads(json.dumps(result.structured_content, default=str))
    text = result.text_content()
    if result.is_error:
        raise ToolCallError(text or f"tool {tool.name} failed")
    images = [b for b in result.content if isinstance(b, ImageContent)]
    if not images:
        return text
    blocks = [{"type": "image", "data": b.data, "mime_type": b.mime_type, "note": text} for b in images]
    return blocks[0] if len(blocks) == 1 else blocks


class ScriptRun:
    """One script: its host calls, output, store view and call records."""

    def __init__(
        self,
        ctx: Any,
        catalog: Catalog,
        discovery: Discovery,
        store: ScriptStore,
    ) -> None:
        self.ctx = ctx
        self.catalog = catalog
        self.store = store
        self.output = Output()
        self.models = ModelsApi(ctx)
        self.calls: list[dict[str, Any]] = []
        self.console: list[tuple[str, str]] = []
        self._pending: dict[int, asyncio.Task[Any]] = {}
        self._helpers: dict[str, Callable[..., Any]] = {
            "text": self.output.text,
            "image": self._image,
            "store": store.store,
            "load": store.load,
            "search_tools": discovery.search_tools,
            "describe_tool": discovery.describe_tool,
            "describe_namespace": discovery.describe_namespace,
        }

    def _image(self, value: Any) -> None:
        self.output.image(value)

    # ------------------------------------------------------------------ the loop

    async def run(self, session: AsyncMontySession, code: str) -> Any:
        """Run ``code``; returns the value of its final expression. Raises Monty's
        errors (type check, syntax, runtime), :class:`ScriptExit` and :class:`ScriptAbort`."""
        from pydantic_monty import AsyncFunctionSnapshot, AsyncFutureSnapshot, CollectStreams, MontyComplete

        from .output import MAX_OUTPUT_CHARS

        console = CollectStreams(max_bytes=MAX_OUTPUT_CHARS)
        try:
            snap: Any = await session.feed_start(code, print_callback=console)
            while not isinstance(snap, MontyComplete):
                if isinstance(snap, AsyncFunctionSnapshot):
                    snap = await self._call(snap)
                elif isinstance(snap, AsyncFutureSnapshot):
                    snap = await self._settle(snap)
                else:  # a name the script never defined
                    snap = await snap.resume()
            return snap.output
        finally:
            self.console = list(console.output)
            for task in self._pending.values():
                if task.done():
                    _ = task.cancelled() or task.exception()  # retrieved: no "never retrieved" warning
                else:
                    task.cancel()
            for record in self.calls:
                if record["status"] == "running":
                    record["status"] = "cancelled"

    async def _call(self, snap: AsyncFunctionSnapshot) -> Any:
        name = snap.function_name
        if snap.is_os_function:
            if name in ("import", "import_stubs"):
                return await snap.resume_auto()
            return await snap.resume({"exception": PermissionError(FS_REFUSED)})
        if name in ("exit", "quit"):
            raise ScriptExit
        if (
            name.startswith("async_tools.")
            or name == "codemode.call_tool_async"
            or name.removeprefix("models.") in ASYNC_FUNCTIONS
        ):
            self._pending[snap.call_id] = asyncio.ensure_future(self._host_call(name, snap.args, snap.kwargs))
            return await snap.resume({"future": ...})
        try:
            value = await self._host_call(name, snap.args, snap.kwargs)
        except _SCRIPT_ERRORS as exc:
            return await snap.resume({"exception": _in_script(exc)})
        return await snap.resume({"return_value": value})

    async def _host_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        module, _, attr = name.partition(".")
        if module in ("tools", "async_tools"):
            return await self._call_tool(attr, args, kwargs)
        if module == "codemode" and attr in ("call_tool", "call_tool_async"):
            return await self._call_by_name(args, kwargs)
        if module == "codemode" and attr in self._helpers:
            return self._helpers[attr](*args, **kwargs)
        if module == "models":
            return await self.models.call(attr, args, kwargs)
        raise NameError(f"name {name!r} is not defined")

    async def _settle(self, snap: AsyncFutureSnapshot) -> Any:
        ids = [i for i in snap.pending_call_ids if i in self._pending]
        if not ids:
            missing = {i: {"exception": RuntimeError("this call has no result")} for i in snap.pending_call_ids}
            return await snap.resume(missing)  # type: ignore[arg-type]
        await asyncio.wait([self._pending[i] for i in ids], return_when=asyncio.FIRST_COMPLETED)
        results: dict[int, Any] = {}
        for call_id in ids:
            task = self._pending[call_id]
            if not task.done():
                continue
            del self._pending[call_id]
            error = task.exception()
            if error is None:
                results[call_id] = {"return_value": task.result()}
            elif isinstance(error, _SCRIPT_ERRORS):
                results[call_id] = {"exception": _in_script(error)}
            else:
                raise error
        return await snap.resume(results)

    # ------------------------------------------------------------------ tool calls

    async def _call_by_name(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """``call_tool(name, **args)``: a tool by name or identifier."""
        if len(args) != 1 or not isinstance(args[0], str):
            raise TypeError("call_tool() takes the tool's name, then its arguments as keywords")
        tool = self.catalog.resolve(args[0])
        if tool is None:
            raise ToolCallError(f"no callable tool is called {args[0]!r} (see ALL_TOOLS or search_tools())")
        return await self._call_tool(tool.ident, (), kwargs)

    async def _call_tool(self, ident: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        tool = self.catalog.by_ident.get(ident)
        if tool is None:
            raise ToolCallError(f"no tool is called {ident!r}")
        if args:
            raise TypeError(f"tools.{ident}() takes keyword arguments only")
        if len(self.calls) >= MAX_TOOL_CALLS:
            raise ScriptAbort(f"the script made more than {MAX_TOOL_CALLS} tool calls")
        arguments = _jsonable(tool.stub.to_arguments(kwargs), f"tools.{ident}()")
        record: dict[str, Any] = {
            "name": tool.name,
            "args": _truncate(json.dumps(arguments, ensure_ascii=False), _ARGS_PREVIEW),
            "status": "running",
        }
        self.calls.append(record)
        start = time.perf_counter()
        result = await self.ctx.execute_tool(tool.name, arguments)
        record["duration_ms"] = round((time.perf_counter() - start) * 1000, 3)
        record["status"] = "error" if result.is_error else "ok"
        if result.is_error:
            record["error"] = _truncate(result.text_content(), _ERROR_PREVIEW)
        return script_value(tool, result)


def _in_script(error: Exception) -> Exception:
    """The exception a failed call raises inside the script."""
    if isinstance(error, ToolCallError):
        return RuntimeError(str(error))
    return error
