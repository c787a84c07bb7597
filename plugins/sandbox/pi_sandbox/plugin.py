"""The pi plugin: confines every shell command pi starts, through ``bash_spawn``.

* ``bash_spawn`` (``trylast``: the sandbox wraps the command as every other plugin
  left it) puts the command in the sandbox, or refuses it when the policy cannot be
  read or no sandbox works here (fail closed);
* ``tool_result`` tells the model what the sandbox refused during a ``bash`` call;
* ``file_access`` (``tryfirst``: a gate no handler serving the file may pass) and, for
  the ``read`` tool's images, ``tool_call`` keep pi's own file tools to the policy
  (:mod:`pi_sandbox.file_guard`);
* ``sandbox_violation`` (published with ``add_hookspecs``) tells audit plugins;
* ``/sandbox`` and ``pi sandbox status`` show the policy; ``!unconfined COMMAND``
  runs one user command outside the sandbox after a confirmation.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pi_hookspecs
from pi_hookspecs import TextContent, ToolCallResult, hookimpl

from .settings import Policy, SandboxError, load_policy, plan
from .status import UNCONFINED_PREFIX, describe, summary

if TYPE_CHECKING:  # imported when the first command runs, not when pi starts
    from pi_hookspecs import BashSpawnResult, FileAccessResult, ToolResultPatch

    from .file_guard import Refusal
    from .sandbox import Backend, Command, Sandbox
    from .violations import SandboxViolation

PLUGIN_NAME = "sandbox"
_UNCONFINED = re.compile(rf"^\s*{UNCONFINED_PREFIX}\s+(?P<command>.+)$", re.DOTALL)
MAX_PENDING = 256
PROBE_DELAY = 0.05
"""Seconds a run waits for its first answer before the backend is probed meanwhile."""
"""Tool calls remembered until their result (beyond that, the oldest are forgotten)."""


class SandboxPlugin:
    """One instance per session runtime: the settings are read when it starts
    (``/reload`` reads them again); the backend probe is cached for the process."""

    def __init__(self) -> None:
        self._policy: Policy | None = None
        self._error: SandboxError | None = None
        self._sandbox: Sandbox | None = None
        self._backend: asyncio.Future[Backend] | None = None
        self._probe_timer: asyncio.TimerHandle | None = None
        self.pending: OrderedDict[str, Command] = OrderedDict()

    # ------------------------------------------------------------------ state

    def policy(self) -> Policy:
        """The policy; raise :class:`SandboxError` naming the settings file at fault."""
        if self._policy is None and self._error is None:
            try:
                self._policy = load_policy()
            except SandboxError as exc:
                self._error = exc
        if self._error is not None:
            raise SandboxError(str(self._error), settings_file=self._error.settings_file)
        assert self._policy is not None
        return self._policy

    def _start_probe(self, policy: Policy) -> asyncio.Future[Backend]:
        if self._backend is None:
            loop = asyncio.get_running_loop()
            future: asyncio.Future[Backend] = loop.create_future()
            # a failure is raised to each command that awaits it, never logged as unretrieved
            future.add_done_callback(lambda done: done.cancelled() or done.exception())

            def settle(backend: Backend | None, error: BaseException | None) -> None:
                if future.done():
                    return
                if error is not None:
                    future.set_exception(error)
                else:
                    future.set_result(backend)  # type: ignore[arg-type]

            def probe() -> None:  # a daemon thread: pi never waits for it at exit
                try:
                    from .sandbox import select_backend

                    found = select_backend(policy.backend)
                except BaseException as exc:
                    error: BaseException | None = exc
                    found = None
                else:
                    error = None
                with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                    loop.call_soon_threadsafe(settle, found, error)

            threading.Thread(target=probe, name="pi-sandbox-probe", daemon=True).start()
            self._backend = future
        return self._backend

    async def sandbox(self) -> Sandbox:
        if self._sandbox is None:
            from .sandbox import Sandbox, weaker_guarantees

            policy = self.policy()
            backend = await asyncio.shield(self._start_probe(policy))
            missing = {k: v for k, v in weaker_guarantees(backend).items() if k not in policy.accept_weaker}
            if missing:
                names = ", ".join(f'"{name}"' for name in missing)
                raise SandboxError(
                    f"{backend.detail} cannot keep what the sandbox promises here: "
                    + "; ".join(f"{name} ({why})" for name, why in missing.items())
                    + f'. To run commands with less, add "acceptWeaker": [{names}] to the sandbox settings in '
                    f"{Path(policy.agent_dir) / 'settings.json'}, "
                    "or make bubblewrap work (unprivileged user namespaces)"
                )
            self._sandbox = Sandbox(policy, backend, Path(policy.agent_dir) / "sandbox")
        return self._sandbox

    async def status(self, cwd: str) -> str:
        try:
            policy = self.policy()
        except SandboxError as exc:
            return f"pluggable-pi-sandbox: NOT ACTIVE - every command is refused: {exc}"
        backend, error, weaker = None, None, {}
        if policy.enabled:
            try:
                sandbox = await self.sandbox()
            except SandboxError as exc:
                error = str(exc)
            else:
                from .sandbox import weaker_guarantees

                backend, weaker = sandbox.backend.detail, weaker_guarantees(sandbox.backend)
        return describe(policy, cwd, backend, error, weaker)

    # ------------------------------------------------------------------ registration

    @hookimpl
    def add_hookspecs(self, add: Any) -> None:
        from . import hookspecs

        add(hookspecs)

    @hookimpl
    def register_commands(self, register: Any) -> None:
        try:
            what = summary(self.policy())
        except SandboxError:
            what = "sandbox settings invalid: every command is refused"
        register("sandbox", self._command, description=f"{what}: show the policy")

    @hookimpl
    def register_cli_commands(self, register: Any) -> None:
        register("sandbox", _cli, help=CLI_HELP)

    # ------------------------------------------------------------------ life cycle

    @hookimpl
    async def session_start(self, ctx: Any) -> None:
        # The backend is probed while a run waits for its first answer (agent_start) or
        # when a command needs it (bash_spawn, /sandbox), not at start-up: pi's start
        # does not pay for importing the backends and starting bubblewrap twice. Every
        # command waits for the probe's answer.
        try:
            policy = self.policy()
        except SandboxError as exc:
            # a broken settings file is reported by pi: say what it means here, not it again
            cause = f" until {exc.settings_file} is fixed" if exc.settings_file else f": {exc}"
            ctx.ui.notify(f"pluggable-pi-sandbox: every command is refused{cause}", "error")
            return
        if ctx.has_ui:
            ctx.ui.set_status(PLUGIN_NAME, summary(policy))

    @hookimpl
    async def agent_start(self, event: Any, ctx: Any) -> None:
        # The model may ask for a command in this run: once the run has waited PROBE_DELAY
        # for its first answer, probe in the background thread meanwhile, so the first
        # command does not wait for it. Not at once: importing the backends and starting
        # bubblewrap twice would slow down a run whose answer comes quicker than that.
        if self._backend is not None or self._probe_timer is not None:
            return
        try:
            policy = self.policy()
        except SandboxError:
            return
        if policy.enabled:
            self._probe_timer = asyncio.get_running_loop().call_later(PROBE_DELAY, self._start_probe, policy)

    @hookimpl
    async def session_shutdown(self) -> None:
        if self._probe_timer is not None:
            self._probe_timer.cancel()
        if self._sandbox is not None:
            await self._sandbox.close()
        self.pending.clear()

    # ------------------------------------------------------------------ pi's own file tools

    def _file_policy(self) -> Policy:
        """The policy pi's file tools keep to; the defaults when the settings are invalid
        (every command is refused then, and the policy files stay protected)."""
        try:
            return self.policy()
        except SandboxError:
            from .file_guard import fallback_policy

            return fallback_policy()

    @hookimpl(tryfirst=True)  # a gate: it decides before a handler (an editor) serves the file
    async def file_access(self, event: Any, ctx: Any) -> FileAccessResult | None:
        policy = self._file_policy()
        if not policy.enabled:
            return None
        from . import file_guard

        refusal = await asyncio.to_thread(
            file_guard.check, policy, _cwd(ctx), event.operation, event.path, event.tool_name
        )
        if refusal is None:
            return None
        await self._file_refused(ctx, policy, refusal, event.tool_name, event.tool_call_id)
        return pi_hookspecs.FileAccessResult(block=True, reason=refusal.message)

    @hookimpl(trylast=True)  # the read tool's images skip file_access: check the path as the tool gets it
    async def tool_call(self, event: Any, ctx: Any) -> ToolCallResult | None:
        path = event.input.get("path") if event.tool_name == "read" else None
        if not isinstance(path, str):
            return None
        policy = self._file_policy()
        if not policy.enabled:
            return None
        from . import file_guard

        refusal = await asyncio.to_thread(file_guard.check_read_tool, policy, _cwd(ctx), path)
        if refusal is None:
            return None
        await self._file_refused(ctx, policy, refusal, event.tool_name, event.tool_call_id)
        return ToolCallResult(block=True, reason=refusal.message)

    async def _file_refused(
        self, ctx: Any, policy: Policy, refusal: Refusal, tool_name: str, tool_call_id: str | None
    ) -> None:
        from . import violations

        backend = self._sandbox.backend.name if self._sandbox is not None else ""
        violation = violations.SandboxViolation(
            kind=refusal.kind,
            target=refusal.path,
            command=tool_name,
            source="tool",
            tool_call_id=tool_call_id,
            preset=policy.preset,
            backend=backend,
            detail=refusal.why,
        )
        await violations.emit(ctx, violation)

    # ------------------------------------------------------------------ commands

    @hookimpl(trylast=True)  # wrap what every other plugin left: the sandbox is outermost
    async def bash_spawn(self, event: Any, ctx: Any) -> BashSpawnResult | None:
        try:
            policy = self.policy()
        except SandboxError as exc:
            return _refuse(str(exc))
        if not policy.enabled:
            return None
        if event.source == "user":
            match = _UNCONFINED.match(event.command)
            if match is not None:
                return await self._unconfined(event, ctx, match.group("command"))
        try:
            sandbox = await self.sandbox()
        except SandboxError as exc:
            return _refuse(str(exc))
        from .sandbox import Command

        command = Command(event.command, event.source, event.tool_call_id, plan(policy, event.cwd), ctx)
        await sandbox.wrap(event, command, self._denied, self._repaired)
        if event.source == "tool" and event.tool_call_id:
            self.pending[event.tool_call_id] = command
            while len(self.pending) > MAX_PENDING:
                self.pending.popitem(last=False)
        return None

    async def _unconfined(self, event: Any, ctx: Any, command: str) -> BashSpawnResult | None:
        """``!unconfined COMMAND``: the user's escape hatch, after a confirmation."""
        if ctx is None or not ctx.has_ui:
            return _refuse("`!unconfined` asks for a confirmation, and this mode cannot ask; the command did not run")
        confirmed = await ctx.ui.confirm(
            "Run outside the sandbox?", f"{command}\n\nThis command runs unconfined, with all your permissions."
        )
        if not confirmed:
            return _refuse("not confirmed; the command did not run")
        last = event.argv[-1] if event.argv else ""
        if not last.endswith(event.command):
            return _refuse("another plugin changed the command; it did not run unconfined")
        event.argv[-1] = last[: len(last) - len(event.command)] + command
        return None

    async def _denied(self, command: Command, host: str, port: int) -> None:
        from . import violations

        command.denied_hosts.append((host, port))
        await violations.emit(command.ctx, self._violation(command, "network", f"{host}:{port}", "not in allowedHosts"))

    async def _repaired(self, command: Command) -> None:
        from . import violations

        for target, what in command.repairs:
            await violations.emit(command.ctx, self._violation(command, "write", target, what))

    def _violation(self, command: Command, kind: Any, target: str, detail: str) -> SandboxViolation:
        from .violations import SandboxViolation

        backend = self._sandbox.backend.name if self._sandbox is not None else ""
        preset = self._policy.preset if self._policy is not None else ""
        return SandboxViolation(
            kind=kind,
            target=target,
            command=command.command,
            source=command.source,
            tool_call_id=command.tool_call_id,
            preset=preset,
            backend=backend,
            detail=detail,
        )

    @hookimpl
    async def tool_result(self, event: Any, ctx: Any) -> ToolResultPatch | None:
        command = self.pending.pop(event.tool_call_id, None)
        if command is None:
            return None
        from . import violations

        text = "".join(block.text for block in event.content if isinstance(block, TextContent))
        # The scan (linear, bounded: violations.MAX_SCAN) runs in a worker thread, so the
        # loop stays free meanwhile (Esc, Ctrl+C, the hookTimeout). When this handler is
        # cancelled, ``stop`` ends the scan at its next phrase instead of letting it run on.
        stop = threading.Event()
        try:
            found = await asyncio.to_thread(violations.find, text, command.plan, stop=stop)
        finally:
            stop.set()
        refused: list[str] = []
        for kind, target, why, line in found:
            if kind == "network" and command.denied_hosts:
                continue  # the proxy's own refusals say it better
            refused.append(
                f"{'reading' if kind == 'read' else 'writing' if kind == 'write' else 'network'} {target} ({why})"
            )
            await violations.emit(ctx, self._violation(command, kind, target, line))
        for host, port in command.denied_hosts:
            refused.append(f"network {host}:{port} (not in allowedHosts)")
        for target, what in command.repairs:
            refused.append(f"writing {target}: {what}")
        if command.proxy_error:
            refused.append(f"network (the proxy could not start: {command.proxy_error}; the command had no network)")
        if not refused:
            return None
        note = self._note(command, refused)
        return pi_hookspecs.ToolResultPatch(
            content=[*event.content, TextContent(text=note)], structured_content=event.structured_content
        )

    def _note(self, command: Command, refused: list[str]) -> str:
        policy = self._policy
        assert policy is not None
        the_plan = command.plan
        writable = ", ".join(the_plan.writable) or "nothing"
        network = {
            "off": "no network",
            "on": "network",
            "proxy": "network only to " + (", ".join(policy.allowed_hosts) or "no host") + " (through a proxy)",
        }[policy.network]
        lines = [f"\n\n[pluggable-pi-sandbox] This command ran in a sandbox (preset {policy.preset}), which refused:"]
        lines += [f"- {item}" for item in dict.fromkeys(refused)]
        lines.append(
            f"The sandbox allows writing only in {writable}, {network}, and no reading of credential folders. "
            "Work within these limits; if the task truly needs more, ask the user (only they can change the "
            "sandbox policy or run a command outside it)."
        )
        return "\n".join(lines)

    async def _command(self, args: str, ctx: Any) -> None:
        ctx.ui.notify(await self.status(ctx.cwd), "info")


CLI_HELP = "Show the sandbox policy (pi sandbox status) or run a command in it (pi sandbox run -- CMD)"


async def _cli(args: list[str]) -> int:
    from .cli import main

    return await main(args)


def _cwd(ctx: Any) -> str:
    cwd = getattr(ctx, "cwd", None) if ctx is not None else None
    return str(cwd) if cwd else os.getcwd()


def _refuse(reason: str) -> BashSpawnResult:
    return pi_hookspecs.BashSpawnResult(block=True, reason=f"pluggable-pi-sandbox: {reason}")
