"""The pi plugin: confines every shell command pi starts, through ``bash_spawn``.

* ``bash_spawn`` (``trylast``: the sandbox wraps the command as every other plugin
  left it) puts the command in the sandbox, or refuses it when the policy cannot be
  read or no sandbox works here (fail closed);
* ``tool_result`` tells the model what the sandbox refused during a ``bash`` call;
* ``sandbox_violation`` (published with ``add_hookspecs``) tells audit plugins;
* ``/sandbox`` and ``pi sandbox status`` show the policy; ``!unconfined COMMAND``
  runs one user command outside the sandbox after a confirmation.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_hookspecs import BashSpawnResult, TextContent, ToolResultPatch, hookimpl

from .settings import Policy, SandboxError, load_policy, plan
from .status import UNCONFINED_PREFIX, describe, summary

if TYPE_CHECKING:  # imported when the first command runs, not when pi starts
    from .sandbox import Backend, Command, Sandbox
    from .violations import SandboxViolation

PLUGIN_NAME = "sandbox"
_UNCONFINED = re.compile(rf"^\s*{UNCONFINED_PREFIX}\s+(?P<command>.+)$", re.DOTALL)
MAX_PENDING = 256
"""Tool calls remembered until their result (beyond that, the oldest are forgotten)."""


class SandboxPlugin:
    """One instance per session runtime: the settings are read when it starts
    (``/reload`` reads them again); the backend probe is cached for the process."""

    def __init__(self) -> None:
        self._policy: Policy | None = None
        self._error: str | None = None
        self._sandbox: Sandbox | None = None
        self._backend: asyncio.Future[Backend] | None = None
        self.pending: OrderedDict[str, Command] = OrderedDict()

    # ------------------------------------------------------------------ state

    def policy(self) -> Policy:
        """The policy; raise :class:`SandboxError` naming the settings file at fault."""
        if self._policy is None and self._error is None:
            try:
                self._policy = load_policy()
            except SandboxError as exc:
                self._error = str(exc)
        if self._error is not None:
            raise SandboxError(self._error)
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
            from .sandbox import Sandbox

            policy = self.policy()
            backend = await asyncio.shield(self._start_probe(policy))
            self._sandbox = Sandbox(policy, backend, Path(policy.agent_dir) / "sandbox")
        return self._sandbox

    async def status(self, cwd: str) -> str:
        try:
            policy = self.policy()
        except SandboxError as exc:
            return f"pluggable-pi-sandbox: NOT ACTIVE - every command is refused: {exc}"
        backend, error = None, None
        if policy.enabled:
            try:
                backend = (await self.sandbox()).backend.detail
            except SandboxError as exc:
                error = str(exc)
        return describe(policy, cwd, backend, error)

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
        # a coroutine: the probe is a task of pi's loop (plain handlers run on a worker thread)
        try:
            policy = self.policy()
        except SandboxError as exc:
            ctx.ui.notify(f"pluggable-pi-sandbox: every command is refused: {exc}", "error")
            return
        if policy.enabled:
            self._start_probe(policy)  # in the background: the first command awaits it
        if ctx.has_ui:
            ctx.ui.set_status(PLUGIN_NAME, summary(policy))

    @hookimpl
    async def session_shutdown(self) -> None:
        if self._sandbox is not None:
            await self._sandbox.close()
        self.pending.clear()

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
        await sandbox.wrap(event, command, self._denied)
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
        refused: list[str] = []
        for kind, target, why, line in violations.find(text, command.plan):
            if kind == "network" and command.denied_hosts:
                continue  # the proxy's own refusals say it better
            refused.append(f"{'reading' if kind == 'read' else 'writing' if kind == 'write' else 'network'} {target} ({why})")
            await violations.emit(ctx, self._violation(command, kind, target, line))
        for host, port in command.denied_hosts:
            refused.append(f"network {host}:{port} (not in allowedHosts)")
        if command.proxy_error:
            refused.append(f"network (the proxy could not start: {command.proxy_error}; the command had no network)")
        if not refused:
            return None
        note = self._note(command, refused)
        return ToolResultPatch(
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


def _refuse(reason: str) -> BashSpawnResult:
    return BashSpawnResult(block=True, reason=f"pluggable-pi-sandbox: {reason}")
