"""The ``codemode`` tool: its definition and one script run from start to result."""

from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING, Any

from pi_toolindex import ToolIndex

from pi_hookspecs import LoadoutResult, ToolDefinition, ToolLoadout, ToolResult

from .catalog import CODEMODE_TOOL, Catalog, CatalogCache
from .description import CodemodeSettings, build_description, prepare_loadout

if TYPE_CHECKING:
    from .runner import ScriptRun
    from .source import ScriptOptions

# Running a script (its parser, runner, sandbox pool, output and store) is imported by the
# first ``codemode`` call: declaring the tool in a request needs none of it.

__all__ = ["CHECKOUT_WAIT_SECONDS", "CodemodeTool", "reaches_tools"]

CHECKOUT_WAIT_SECONDS = 60.0
"""How long a script waits for a free sandbox worker before it fails without running."""

PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "code": {
            "type": "string",
            "description": "Raw Python source (no markdown fence). Optional first line: # @options: {...}",
        }
    },
    "required": ["code"],
}

_DISCOVERY = ("search_tools", "ALL_TOOLS", "describe_tool", "describe_namespace", "call_tool")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FEED_NAME = re.compile(r"<python-input-\d+>")


def reaches_tools(arguments: dict[str, Any]) -> Any:
    """``"all"`` for scripts that look tools up (``search_tools``, ``ALL_TOOLS``,
    ``describe_*``, ``call_tool``), else the script's words: the tools a call may reach."""
    code = arguments.get("code") if isinstance(arguments, dict) else None
    if not isinstance(code, str):
        return []
    if any(word in code for word in _DISCOVERY):
        return "all"
    return sorted(set(_WORD.findall(code)))


def _monty_error(error: BaseException) -> str:
    from pydantic_monty import MontyCrashedError, MontyRuntimeError, MontySyntaxError, MontyTypingError

    if isinstance(error, MontyTypingError):
        return "The script did not pass the type check, so nothing ran:\n" + _clean_diagnostics(error.display())
    if isinstance(error, MontyRuntimeError | MontySyntaxError):
        return _FEED_NAME.sub("script.py", error.display()).rstrip()
    if isinstance(error, MontyCrashedError):
        return f"The sandbox worker died: {error}"
    return f"{type(error).__name__}: {error}"


_NOISE = re.compile(
    r"^info: (Python 3\.\d+ was assumed|make sure your Python environment|Searched in the following paths"
    r"|\s+\d+\. |`\w+` was added as a builtin)"
)


def _clean_diagnostics(text: str) -> str:
    """ty's report without the notes about the checker's own environment (the Python
    version it assumed, its module search paths), which mean nothing in the sandbox."""
    lines = [line for line in text.rstrip().splitlines() if not _NOISE.match(line)]
    cleaned = "\n".join(lines)
    if "unresolved-import" in cleaned:
        cleaned += "\n(The sandbox has no file system, network, subprocesses or third-party modules.)"
    return cleaned


def _calls_summary(calls: list[dict[str, Any]]) -> str:
    if not calls:
        return "No tool calls were made."
    listed = ", ".join(f"{c['name']} ({c['status']})" for c in calls)
    return f"Tool calls made before the failure (they are not undone): {listed}"


class CodemodeTool:
    """The ``codemode`` tool of one session: settings, the catalog cache and the BM25
    index live here (one instance per session runtime)."""

    def __init__(self) -> None:
        self.settings = CodemodeSettings()
        self.catalogs = CatalogCache()
        self.index = ToolIndex()

    def definition(self) -> ToolDefinition:
        # The plugin's own constants and methods: nothing to validate.
        return ToolDefinition.model_construct(
            name=CODEMODE_TOOL,
            label="codemode",
            description=build_description([], self.settings.inline_budget),
            parameters=PARAMETERS,
            execute=self.execute,
            prompt_snippet="Run Python that calls other tools",
            prompt_guidelines=[
                "Use codemode to batch independent tool calls (asyncio.gather over async_tools), chain them, "
                "or filter large output, instead of many separate calls."
            ],
            exposure="model-only",
            default_active=False,
            prepare_loadout=self.prepare_loadout,
            reaches_tools=reaches_tools,
        )

    def prepare_loadout(self, loadout: ToolLoadout) -> LoadoutResult:
        return prepare_loadout(loadout, self.settings, self.catalogs)

    def catalog(self, ctx: Any) -> Catalog:
        definitions = {d.name: d for d in ctx.get_all_tools()}
        return self.catalogs.get([definitions[name] for name in ctx.tools if name in definitions])

    # ------------------------------------------------------------------ execute

    async def execute(self, args: dict[str, Any], ctx: Any) -> ToolResult:
        from .discovery import Discovery
        from .output import Outcome, Output, render_result
        from .runner import ScriptRun
        from .source import DEFAULT_MAX_OUTPUT_TOKENS, SourceError, parse_source
        from .store import STORE_ENTRY, ScriptStore, read_store

        started = time.perf_counter()
        try:
            code, options = parse_source(str(args.get("code", "")))
        except SourceError as exc:
            outcome = Outcome(False, time.perf_counter() - started, Output(), [], f"{exc}\nNothing ran.")
            return render_result(outcome, DEFAULT_MAX_OUTPUT_TOKENS)
        catalog = self.catalog(ctx)
        store = ScriptStore(read_store(ctx.session_manager.get_branch()))
        # nested calls show up live through their own tool_execution_* events
        run = ScriptRun(ctx, catalog, Discovery(catalog, self.index), store)
        error = await self._run(run, catalog, code, options, ctx.signal)
        if error is None:
            changes = store.changes()
            if changes is not None:
                ctx.append_entry(STORE_ENTRY, changes)
        else:
            error = f"{error}\n\n{_calls_summary(run.calls)}"
        outcome = Outcome(error is None, time.perf_counter() - started, run.output, run.console, error, run.calls)
        result = render_result(outcome, options.max_output_tokens)
        result.usage = run.models.usage()  # classifier and image calls count toward the session's cost
        return result

    async def _run(
        self, run: ScriptRun, catalog: Catalog, code: str, options: ScriptOptions, signal: Any
    ) -> str | None:
        """Run the script within its deadline; ``None`` when it succeeded, else the error."""
        from .output import OutputLimitError
        from .runner import ScriptAbort, ScriptExit
        from .sandbox import SessionSetup, get_sandbox

        setup = SessionSetup(
            key=catalog.key,
            idents=tuple(catalog.by_ident),
            tools_stubs=catalog.tools_stubs,
            async_stubs=catalog.async_stubs,
            all_tools=catalog.all_tools,
        )
        sandbox = get_sandbox()
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        aborted = False

        def on_abort(reason: Any) -> None:
            nonlocal aborted
            aborted = True
            if task is not None:
                loop.call_soon_threadsafe(task.cancel)

        remove = signal.add_callback(on_abort) if signal is not None else None
        lease = None
        deadline = options.timeout_ms / 1000 if options.timeout_ms is not None else None
        try:
            async with asyncio.timeout(deadline):
                try:
                    async with asyncio.timeout(CHECKOUT_WAIT_SECONDS):
                        lease = await sandbox.acquire(setup)
                except TimeoutError:
                    return (
                        f"No sandbox worker became free within {CHECKOUT_WAIT_SECONDS:.0f} s "
                        f"({sandbox.max_workers} allowed, PI_CODEMODE_MAX_WORKERS). Nothing ran."
                    )
                value = await run.run(lease.session, code)
                if value is not None:
                    run.output.text(value)
            return None
        except ScriptExit:
            return None
        except TimeoutError:
            return f"TimeoutError: the script did not finish within timeout_ms ({options.timeout_ms} ms)"
        except asyncio.CancelledError:
            if not aborted:
                raise
            if task is not None:
                task.uncancel()
            return "The script was aborted."
        except (ScriptAbort, OutputLimitError) as exc:
            return f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            return _monty_error(exc)
        finally:
            if remove is not None:
                remove()
            if lease is not None:
                lease.release(prepare_next=setup)
