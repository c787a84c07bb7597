"""Landlock (and a small seccomp filter) through ``ctypes``: the fallback where
bubblewrap cannot create user namespaces.

This file is also the *launcher* (:func:`launcher`): pi runs ::

    python -I -S -c BOOT DIR [--network off|proxy|on] [--port N] [--deny PATH]...
                             [--write PATH]... [--keep PATH]... -- COMMAND [ARGS...]

(``BOOT`` imports this module from ``DIR`` and calls :func:`main`; running the file as
a script, ``python -I -S landlock.py ...``, works the same)
which restricts itself (Landlock rules, ``no_new_privs``, seccomp) and then
``exec``\\ s the command, so the restrictions hold for the command and everything it
starts, and nothing of the command ever runs unrestricted: any failure exits with
status 126 before the command is executed. It imports only the standard library.

The options (:func:`parse` reads them into a spec dict):

* ``deny``: real paths no access is granted below;
* ``write``: real paths (folders) writable, except below ``deny``;
* ``keep``: real paths kept read-only even inside the writable folders (pi's agent
  directory: its settings and plugins). pluggable-pi-sandbox's other protected paths
  (``.git/hooks`` …) are not subtracted here (see below);
* ``network``: ``off`` (no IP sockets at all), ``proxy`` (TCP connections to
  ``proxy_port`` only, needs Landlock ABI 4) or ``on``.

Everything else is readable. Landlock grants rights per file hierarchy and cannot
carve a hole into a grant, so a folder holding a denied path is granted entry by
entry: files created directly in such a folder during the command are not covered
(see docs/sandbox.md).
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # the launcher imports as little as it can: it starts before every command
    from typing import Any

SYS_CREATE_RULESET = 444
SYS_ADD_RULE = 445
SYS_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
RULE_NET_PORT = 2

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
REMOVE_DIR = 1 << 4
REMOVE_FILE = 1 << 5
MAKE_CHAR = 1 << 6
MAKE_DIR = 1 << 7
MAKE_REG = 1 << 8
MAKE_SOCK = 1 << 9
MAKE_FIFO = 1 << 10
MAKE_BLOCK = 1 << 11
MAKE_SYM = 1 << 12
REFER = 1 << 13  # ABI 2
TRUNCATE = 1 << 14  # ABI 3
IOCTL_DEV = 1 << 15  # ABI 5
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
READ = EXECUTE | READ_FILE | READ_DIR
WRITE = (
    WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_CHAR
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_BLOCK
    | MAKE_SYM
    | REFER
    | TRUNCATE
)
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts", "/dev/shm")
"""Writable device nodes (and ``/dev/shm``); the rest of ``/dev`` is read-only."""

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

_libc: Any = None


class LandlockError(OSError):
    pass


def _syscall(*args: Any) -> int:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    return int(_libc.syscall(*args))


def abi_version() -> int:
    """The Landlock ABI the kernel offers: 0 when Landlock is unavailable."""
    if sys.platform != "linux":
        return 0
    try:
        version = _syscall(ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    except OSError:
        return 0
    return max(version, 0)


def handled_fs(abi: int) -> int:
    rights = (1 << 13) - 1
    if abi >= 2:
        rights |= REFER
    if abi >= 3:
        rights |= TRUNCATE
    if abi >= 5:
        rights |= IOCTL_DEV
    return rights


class Ruleset:
    def __init__(self, abi: int, *, network: str) -> None:
        self.abi = abi
        self.fs = handled_fs(abi)
        self.net = NET_BIND_TCP | NET_CONNECT_TCP if abi >= 4 and network != "on" else 0
        self.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
        if abi >= 6:
            attr = struct.pack("QQQ", self.fs, self.net, self.scoped)
        elif abi >= 4:
            attr = struct.pack("QQ", self.fs, self.net)
        else:
            attr = struct.pack("Q", self.fs)
        buf = ctypes.create_string_buffer(attr, len(attr))
        fd = _syscall(ctypes.c_long(SYS_CREATE_RULESET), buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
        if fd < 0:
            raise LandlockError(ctypes.get_errno(), "landlock_create_ruleset failed")
        self.fd = fd

    def allow_path(self, path: str, rights: int) -> None:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return  # gone meanwhile: nothing to grant
        try:
            if not os.path.isdir(path):
                rights &= FILE_RIGHTS
            rights &= self.fs
            if not rights:
                return
            attr = struct.pack("=Qi", rights, fd)
            buf = ctypes.create_string_buffer(attr, len(attr))
            if _syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(self.fd), ctypes.c_int(RULE_PATH_BENEATH), buf, ctypes.c_uint32(0)) < 0:
                raise LandlockError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
        finally:
            os.close(fd)

    def allow_port(self, port: int, rights: int = NET_CONNECT_TCP) -> None:
        if not self.net:
            return
        attr = struct.pack("QQ", rights, port)
        buf = ctypes.create_string_buffer(attr, len(attr))
        if _syscall(ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(self.fd), ctypes.c_int(RULE_NET_PORT), buf, ctypes.c_uint32(0)) < 0:
            raise LandlockError(ctypes.get_errno(), f"landlock_add_rule failed for port {port}")

    def restrict_self(self) -> None:
        if _syscall(ctypes.c_long(SYS_RESTRICT_SELF), ctypes.c_int(self.fd), ctypes.c_uint32(0)) < 0:
            raise LandlockError(ctypes.get_errno(), "landlock_restrict_self failed")
        os.close(self.fd)


def _below(path: str, root: str) -> bool:
    return path != root and path.startswith(root.rstrip("/") + "/")


def grant(rules: Ruleset, root: str, rights: int, excluded: list[str]) -> None:
    """Grant ``rights`` on everything below ``root`` except the ``excluded`` paths:
    the whole hierarchy at once where nothing is excluded, else entry by entry along
    the way to each excluded path (listing stays possible there)."""
    if any(root == e or _below(root, e) for e in excluded):
        return
    inside = [e for e in excluded if _below(e, root)]
    if not inside:
        rules.allow_path(root, rights)
        return
    rules.allow_path(root, rights & READ_DIR)
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        child = os.path.join(root, name)
        if os.path.islink(child):
            continue  # reached through its target's own grant
        grant(rules, child, rights, inside)


def apply(spec: dict[str, Any]) -> int:
    """Restrict this process as ``spec`` says (see the module); returns the ABI."""
    abi = abi_version()
    if abi < 1:
        raise LandlockError(0, "Landlock is not available in this kernel")
    network = str(spec.get("network", "off"))
    deny = [str(p) for p in spec.get("deny", [])]
    keep = [str(p) for p in spec.get("keep", [])]
    rules = Ruleset(abi, network=network)
    grant(rules, "/", READ, deny)
    for root in spec.get("write", []):
        # Only ``keep`` is subtracted, not every protected path: a grant entry by entry
        # would keep commands from creating files at the top of every project with .git.
        grant(rules, str(root), READ | WRITE, deny + keep)
    for device in DEVICES:
        if os.path.exists(device):
            rules.allow_path(device, READ | WRITE | IOCTL_DEV)
    if network == "proxy" and spec.get("proxy_port"):
        rules.allow_port(int(spec["proxy_port"]))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if network != "on":
        install_seccomp(allow_tcp=network == "proxy" and abi >= 4)
    rules.restrict_self()
    return abi


# --------------------------------------------------------------------------- seccomp

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SYS_SOCKET = {"x86_64": 41, "aarch64": 198}
SYS_IO_URING_SETUP = 425
AF_INET, AF_INET6, AF_PACKET = 2, 10, 17
SOCK_STREAM = 1
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EACCES = 13
X32_SYSCALL_BIT = 0x40000000

_LD_ABS_W = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_AND_K = 0x54
_RET_K = 0x06


def seccomp_program(machine: str, *, allow_tcp: bool) -> list[tuple[int, int, int, int]]:
    """A classic BPF program: no IP sockets (or, with ``allow_tcp``, TCP ones only —
    Landlock then limits where they connect), no packet sockets, no io_uring (its
    socket operations would pass by this filter), nothing from a foreign syscall ABI."""
    if machine not in AUDIT_ARCH:
        raise LandlockError(0, f"no seccomp filter for the {machine} architecture")
    deny = SECCOMP_RET_ERRNO | EACCES
    program: list[tuple[int, int, int, int]] = []
    labels: dict[str, int] = {}
    jumps: list[tuple[int, str | None, str | None]] = []

    def op(code: int, k: int, jt: str | None = None, jf: str | None = None) -> None:
        if jt or jf:
            jumps.append((len(program), jt, jf))
        program.append((code, 0, 0, k))

    op(_LD_ABS_W, 4)  # seccomp_data.arch
    op(_JEQ_K, AUDIT_ARCH[machine], None, "deny")
    op(_LD_ABS_W, 0)  # seccomp_data.nr
    if machine == "x86_64":
        op(_JGE_K, X32_SYSCALL_BIT, "deny", None)
    op(_JEQ_K, SYS_IO_URING_SETUP, "deny", None)
    op(_JEQ_K, SYS_SOCKET[machine], None, "allow")
    op(_LD_ABS_W, 16)  # args[0]: the domain
    op(_JEQ_K, AF_INET, "ip", None)
    op(_JEQ_K, AF_INET6, "ip", None)
    op(_JEQ_K, AF_PACKET, "deny", "allow")
    labels["ip"] = len(program)
    if allow_tcp:
        op(_LD_ABS_W, 24)  # args[1]: the type, with flags
        op(_AND_K, 0xF)
        op(_JEQ_K, SOCK_STREAM, "allow", "deny")
    else:
        op(_RET_K, deny)
    labels["allow"] = len(program)
    op(_RET_K, SECCOMP_RET_ALLOW)
    labels["deny"] = len(program)
    op(_RET_K, deny)
    for index, jt, jf in jumps:
        code, _, _, k = program[index]
        t = labels[jt] - index - 1 if jt else 0
        f = labels[jf] - index - 1 if jf else 0
        program[index] = (code, t, f, k)
    return program


def install_seccomp(*, allow_tcp: bool) -> None:
    program = seccomp_program(os.uname().machine, allow_tcp=allow_tcp)
    raw = b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in program)
    filters = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program), ctypes.cast(filters, ctypes.c_void_p))
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


# --------------------------------------------------------------------------- launcher


_BOOT = "import sys;sys.path.insert(0,sys.argv[1]);import landlock;sys.exit(landlock.main(sys.argv[1:]))"


def launcher() -> list[str]:
    """The command line that starts the launcher: the base interpreter (no virtual
    environment to set up), isolated, without ``site``, importing this module from its
    folder (its compiled ``.pyc`` is reused; a script would be compiled every time)."""
    python = getattr(sys, "_base_executable", None) or sys.executable
    return [python, "-I", "-S", "-c", _BOOT, os.path.dirname(os.path.abspath(__file__))]


def arguments(spec: dict[str, Any]) -> list[str]:
    """The launcher's options for ``spec`` (the inverse of :func:`parse`)."""
    args = ["--network", str(spec.get("network", "off"))]
    if spec.get("proxy_port"):
        args += ["--port", str(spec["proxy_port"])]
    for key in ("deny", "write", "keep"):
        for path in spec.get(key, []):
            args += [f"--{key}", str(path)]
    return [*args, "--"]


def parse(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``(spec, command)`` from the launcher's arguments; ``ValueError`` when invalid."""
    spec: dict[str, Any] = {"network": "off", "deny": [], "write": [], "keep": []}
    i = 0
    while i < len(argv) and argv[i] != "--":
        option = argv[i]
        if i + 1 >= len(argv):
            raise ValueError(f"{option} needs a value")
        value = argv[i + 1]
        if option == "--network" and value in ("off", "proxy", "on"):
            spec["network"] = value
        elif option == "--port":
            spec["proxy_port"] = int(value)
        elif option in ("--deny", "--write", "--keep"):
            spec[option[2:]].append(value)
        else:
            raise ValueError(f"unknown option {option} {value}")
        i += 2
    command = argv[i + 1 :]
    if not command:
        raise ValueError("no command after --")
    return spec, command


def main(argv: list[str]) -> int:
    try:
        spec, command = parse(argv[1:])
        apply(spec)
    except Exception as exc:
        print(f"pluggable-pi-sandbox: cannot confine the command with Landlock: {exc}", file=sys.stderr)
        return 126
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"pluggable-pi-sandbox: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 127  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
