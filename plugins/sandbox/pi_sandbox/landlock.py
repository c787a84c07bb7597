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

Whatever uid pi runs as, the command keeps no capability (bounding, ambient, effective,
permitted and inheritable sets emptied; as root the securebits also keep ``exec`` from
granting them back) and runs with ``no_new_privs``. Its processes end with it:

* **Isolated** (the launcher holds ``CAP_SYS_ADMIN``, i.e. pi runs as root): the launcher
  enters new mount, PID, UTS and IPC namespaces; the first process there mounts a
  private ``/proc`` (pi's processes are not in it), a private ``/dev/shm`` and an
  unreadable empty file over each ``--mask`` path (unix sockets outside the project),
  confines itself and starts the command. When the command ends, that process ends and
  the kernel kills everything left in the namespace, ``setsid`` jobs included.
* **Supervised** (no capability, pi runs as a user): the launcher stays outside the
  Landlock domain as the command's parent and child subreaper; with Landlock ABI 6 the
  command cannot signal it. When the command ends, or a stop signal is not obeyed within
  :data:`STOP_GRACE`, every process left below the launcher is killed. ``/dev/shm`` is
  read-only; pi's ``/proc/<pid>`` files stay out of reach through Landlock's ptrace
  restrictions.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # the launcher imports as little as it can: it starts before every command
    import signal
    from typing import Any
else:
    import _signal as signal  # the C module: the enum wrappers of ``signal`` cost 3 ms a start

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
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts")
"""Writable device nodes; the rest of ``/dev`` is read-only (``/dev/shm`` is writable
only where the launcher mounted a private one: isolated mode)."""

KERNEL_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
"""As in bubblewrap's sandboxes (``bwrap.KERNEL_READ_ONLY``): read-only in isolated mode."""

PR_SET_PDEATHSIG = 1
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
SECCOMP_MODE_FILTER = 2
CAP_SETPCAP = 8
CAP_SYS_ADMIN = 21
SECUREBITS_NO_ROOT = 0xEF
"""NOROOT, NO_SETUID_FIXUP and NO_CAP_AMBIENT_RAISE, each locked, and KEEP_CAPS_LOCKED:
uid 0 gains no capability from ``exec`` or ``setuid``."""
LINUX_CAPABILITY_VERSION_3 = 0x20080522
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWPID = 0x00020000, 0x04000000, 0x08000000, 0x20000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
STOP_GRACE = 0.5
"""Seconds a supervised command has to end after a stop signal (pi waits 1 s before it
kills the whole process group) before the launcher kills it and all it started."""

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
        version = _syscall(
            ctypes.c_long(SYS_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION)
        )
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
            if (
                _syscall(
                    ctypes.c_long(SYS_ADD_RULE),
                    ctypes.c_int(self.fd),
                    ctypes.c_int(RULE_PATH_BENEATH),
                    buf,
                    ctypes.c_uint32(0),
                )
                < 0
            ):
                raise LandlockError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
        finally:
            os.close(fd)

    def allow_port(self, port: int, rights: int = NET_CONNECT_TCP) -> None:
        if not self.net:
            return
        attr = struct.pack("QQ", rights, port)
        buf = ctypes.create_string_buffer(attr, len(attr))
        if (
            _syscall(
                ctypes.c_long(SYS_ADD_RULE), ctypes.c_int(self.fd), ctypes.c_int(RULE_NET_PORT), buf, ctypes.c_uint32(0)
            )
            < 0
        ):
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
    for device in (*DEVICES, "/dev/shm") if spec.get("private_shm") else DEVICES:
        if os.path.exists(device):
            rules.allow_path(device, READ | WRITE | IOCTL_DEV)
    if network == "proxy" and spec.get("proxy_port"):
        rules.allow_port(int(spec["proxy_port"]))
    if _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    isolated = bool(spec.get("private_shm"))  # new IPC namespace: System V IPC is the sandbox's own
    install_seccomp(
        network=network, allow_tcp=network == "proxy" and abi >= 4, no_user_namespaces=True, no_sysv_ipc=not isolated
    )
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
EPERM, EACCES, ENOSYS = 1, 13, 38
X32_SYSCALL_BIT = 0x40000000
CLONE_NEWUSER = 0x10000000
SET_ID_BITS = 0o6000
"""``S_ISUID | S_ISGID``: a command may not give a file either (as root, it would leave a
setuid-root program behind for anyone to run outside the sandbox)."""

SYSCALLS: dict[str, dict[str, int]] = {
    "x86_64": {
        "chmod": 90,
        "fchmod": 91,
        "fchmodat": 268,
        "fchmodat2": 452,
        "creat": 85,
        "open": 2,
        "openat": 257,
        "openat2": 437,
        "mknod": 133,
        "mknodat": 259,
        "keyctl": 250,
        "add_key": 248,
        "request_key": 249,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "clone": 56,
        "clone3": 435,
        "unshare": 272,
        "shmget": 29,
        "shmat": 30,
        "shmctl": 31,
        "shmdt": 67,
        "semget": 64,
        "semop": 65,
        "semctl": 66,
        "semtimedop": 220,
        "msgget": 68,
        "msgsnd": 69,
        "msgrcv": 70,
        "msgctl": 71,
        "socket": 41,
    },
    "aarch64": {
        "fchmod": 52,
        "fchmodat": 53,
        "fchmodat2": 452,
        "openat": 56,
        "openat2": 437,
        "mknodat": 33,
        "keyctl": 219,
        "add_key": 217,
        "request_key": 218,
        "io_uring_setup": 425,
        "io_uring_enter": 426,
        "io_uring_register": 427,
        "clone": 220,
        "clone3": 435,
        "unshare": 97,
        "shmget": 194,
        "shmctl": 195,
        "shmat": 196,
        "shmdt": 197,
        "semget": 190,
        "semctl": 191,
        "semtimedop": 192,
        "semop": 193,
        "msgget": 186,
        "msgctl": 187,
        "msgrcv": 188,
        "msgsnd": 189,
        "socket": 198,
    },
}
MODE_ARGUMENT = {
    "chmod": 1,
    "fchmod": 1,
    "fchmodat": 2,
    "fchmodat2": 2,
    "creat": 1,
    "open": 2,
    "openat": 3,
    "mknod": 1,
    "mknodat": 2,
}
"""Where each call that sets a file's mode takes it."""
KEYRINGS = ("keyctl", "add_key", "request_key")
IO_URING = ("io_uring_setup", "io_uring_enter", "io_uring_register")
SYSV_IPC = (
    "shmget",
    "shmat",
    "shmctl",
    "shmdt",
    "semget",
    "semop",
    "semctl",
    "semtimedop",
    "msgget",
    "msgsnd",
    "msgrcv",
    "msgctl",
)

_LD_ABS_W = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_AND_K = 0x54
_RET_K = 0x06


def seccomp_program(
    machine: str,
    *,
    network: str | None = None,
    allow_tcp: bool = False,
    no_user_namespaces: bool = False,
    no_sysv_ipc: bool = False,
) -> list[tuple[int, int, int, int]]:
    """A classic BPF program for a sandboxed command. Always: nothing from a foreign
    syscall ABI; no setuid or setgid bit on any file (``chmod`` and every call that
    creates a file with a mode); no kernel keyrings; no io_uring (its operations pass by
    seccomp); no ``openat2`` (its mode cannot be read: ``ENOSYS``, callers fall back to
    ``openat``). ``network`` other than ``"on"``: no IP sockets (or, with ``allow_tcp``,
    TCP ones only — Landlock then limits where they connect) and no packet sockets.
    ``no_user_namespaces``: no new user namespace (``clone3``, whose flags cannot be read,
    answers ``ENOSYS`` and callers fall back to ``clone``). ``no_sysv_ipc``: no System V
    shared memory, semaphores or message queues (where the command shares pi's IPC
    namespace)."""
    if machine not in AUDIT_ARCH:
        raise LandlockError(0, f"no seccomp filter for the {machine} architecture")
    calls = SYSCALLS[machine]
    program: list[tuple[int, int, int, int]] = []
    labels: dict[str, int] = {}
    jumps: list[tuple[int, str | None, str | None]] = []

    def op(code: int, k: int, jt: str | None = None, jf: str | None = None) -> None:
        if jt or jf:
            jumps.append((len(program), jt, jf))
        program.append((code, 0, 0, k))

    def label(name: str) -> None:
        labels[name] = len(program)

    op(_LD_ABS_W, 4)  # seccomp_data.arch
    op(_JEQ_K, AUDIT_ARCH[machine], None, "deny")
    op(_LD_ABS_W, 0)  # seccomp_data.nr
    if machine == "x86_64":
        op(_JGE_K, X32_SYSCALL_BIT, "deny", None)
    denied = [*KEYRINGS, *IO_URING, *(SYSV_IPC if no_sysv_ipc else ())]
    for name in denied:
        op(_JEQ_K, calls[name], "deny", None)
    op(_JEQ_K, calls["openat2"], "enosys", None)
    if no_user_namespaces:
        op(_JEQ_K, calls["clone3"], "enosys", None)
        op(_JEQ_K, calls["clone"], "flags0", None)
        op(_JEQ_K, calls["unshare"], "flags0", None)
    for name, index in MODE_ARGUMENT.items():
        if name in calls:
            op(_JEQ_K, calls[name], f"mode{index}", None)
    filter_network = network is not None and network != "on"
    op(_JEQ_K, calls["socket"], "socket" if filter_network else "allow", "allow")
    if filter_network:
        label("socket")
        op(_LD_ABS_W, 16)  # args[0]: the domain
        op(_JEQ_K, AF_INET, "ip", None)
        op(_JEQ_K, AF_INET6, "ip", None)
        op(_JEQ_K, AF_PACKET, "deny", "allow")
        label("ip")
        if allow_tcp:
            op(_LD_ABS_W, 24)  # args[1]: the type, with flags
            op(_AND_K, 0xF)
            op(_JEQ_K, SOCK_STREAM, "allow", "deny")
        else:
            op(_RET_K, SECCOMP_RET_ERRNO | EACCES)
    if no_user_namespaces:
        label("flags0")
        op(_LD_ABS_W, 16)  # args[0] (low half): clone's and unshare's flags
        op(_JSET_K, CLONE_NEWUSER, "deny", "allow")
    for index in sorted(set(MODE_ARGUMENT.values())):
        label(f"mode{index}")
        op(_LD_ABS_W, 16 + 8 * index)  # the low half of the mode argument
        op(_JSET_K, SET_ID_BITS, "deny", "allow")
    label("enosys")
    op(_RET_K, SECCOMP_RET_ERRNO | ENOSYS)
    label("allow")
    op(_RET_K, SECCOMP_RET_ALLOW)
    label("deny")
    op(_RET_K, SECCOMP_RET_ERRNO | EPERM)
    for index, jt, jf in jumps:
        code, _, _, k = program[index]
        t = labels[jt] - index - 1 if jt else 0
        f = labels[jf] - index - 1 if jf else 0
        if not (0 <= t <= 255 and 0 <= f <= 255):
            raise LandlockError(0, "seccomp program: a jump out of range")
        program[index] = (code, t, f, k)
    return program


def seccomp_bytes(program: list[tuple[int, int, int, int]]) -> bytes:
    """The program as the kernel (and bubblewrap's ``--seccomp``) takes it."""
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in program)


def install_seccomp(**options: Any) -> None:
    program = seccomp_program(os.uname().machine, **options)
    raw = seccomp_bytes(program)
    filters = ctypes.create_string_buffer(raw, len(raw))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(len(program), ctypes.cast(filters, ctypes.c_void_p))
    if _libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


# --------------------------------------------------------------------------- capabilities


def _status_caps() -> dict[str, int]:
    """``CapInh``, ``CapPrm``, ``CapEff``, ``CapBnd`` and ``CapAmb`` of this process."""
    caps: dict[str, int] = {}
    with open("/proc/self/status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("Cap"):
                key, _, value = line.partition(":")
                caps[key] = int(value.strip(), 16)
    return caps


def has_capability(cap: int) -> bool:
    return bool(_status_caps().get("CapEff", 0) >> cap & 1)


def _prctl(*args: int) -> int:
    return int(_libc.prctl(*[ctypes.c_ulong(a) for a in args]))


def drop_capabilities() -> None:
    """Empty every capability set for good; raise :class:`LandlockError` when one stays.
    With ``CAP_SETPCAP`` (root) the bounding set is emptied and the securebits are
    locked so that neither ``exec`` nor ``setuid`` of uid 0 grants any back."""
    caps = _status_caps()
    if caps.get("CapPrm", 0) >> CAP_SETPCAP & 1:
        if _prctl(PR_SET_SECUREBITS, SECUREBITS_NO_ROOT, 0, 0, 0) != 0:
            raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_SECUREBITS) failed")
        try:
            with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as last_cap:
                last = int(last_cap.read())
        except (OSError, ValueError):
            last = 63
        prctl = _libc.prctl
        for cap in range(last + 1):
            if prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:  # EINVAL: no such capability
                raise LandlockError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap}) failed")
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL before Linux 4.3: nothing to clear
    machine = os.uname().machine
    if any(caps.get(key, 0) for key in ("CapInh", "CapPrm", "CapEff")):
        if machine not in SYS_CAPSET:
            raise LandlockError(0, f"cannot drop capabilities on the {machine} architecture")
        header = struct.pack("Ii", LINUX_CAPABILITY_VERSION_3, 0)
        data = bytes(24)  # two {effective, permitted, inheritable} triples, all empty
        if (
            _syscall(
                ctypes.c_long(SYS_CAPSET[machine]),
                ctypes.create_string_buffer(header, len(header)),
                ctypes.create_string_buffer(data, len(data)),
            )
            != 0
        ):
            raise LandlockError(ctypes.get_errno(), "capset failed")
    left = _status_caps()
    kept = [key for key in ("CapInh", "CapPrm", "CapEff", "CapAmb") if left.get(key)]
    if kept:
        raise LandlockError(0, f"capabilities remain ({', '.join(kept)})")


# --------------------------------------------------------------------------- processes


def _bytes(value: str | None) -> bytes | None:
    return value.encode() if value is not None else None


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(_bytes(source), _bytes(target), _bytes(fstype), ctypes.c_ulong(flags), _bytes(data)) != 0:
        raise LandlockError(ctypes.get_errno(), f"mount of {target} failed")


def isolate_mounts(spec: dict[str, Any]) -> None:
    """In the new mount namespace (isolated mode): nothing propagates back to pi's; a
    ``/proc`` of the new PID namespace only; a private ``/dev/shm``; the ``mask`` paths
    (unix sockets outside the project) hidden behind the unreadable ``empty`` file."""
    _mount("none", "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in KERNEL_READ_ONLY:  # Landlock refuses writes there; read-only mounts say so to access(2) too
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    empty = spec.get("empty")
    for path in spec.get("mask", []):
        if not empty or not os.path.lexists(path) or os.path.isdir(path):
            continue
        _mount(empty, path, None, MS_BIND)
        _mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def confine(spec: dict[str, Any]) -> None:
    """Landlock, ``no_new_privs``, seccomp and no capability, in this process."""
    apply(spec)
    drop_capabilities()


def _wait_status_code(status: int) -> int:
    """The launcher's own exit for the command's wait status: its exit code, or the
    signal that killed it re-raised on the launcher (so pi sees the same signal)."""
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        if signum not in (signal.SIGKILL, signal.SIGSTOP):  # those two cannot be caught nor blocked
            signal.signal(signum, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
        return 128 + signum  # the signal did not end us (it cannot for SIGSTOP & co.)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


_STOPS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT) if sys.platform != "win32" else ()


def _exec(command: list[str], mask: set[int]) -> None:
    """In a forked child: the signal state of a fresh process, then the command."""
    for signum in _STOPS:
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    try:
        os.execvp(command[0], command)
    except OSError as exc:
        print(f"pluggable-pi-sandbox: cannot run {command[0]}: {exc.strerror or exc}", file=sys.stderr)
    os._exit(127)


def _descendants() -> list[int]:
    """Every process below this one (orphans of a subreaper are its children)."""
    me = os.getpid()
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(name)] = int(fields[1])
    below: list[int] = []
    frontier = [me]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent]
        below += children
        frontier += children
    return below


def sweep() -> None:
    """Kill every process left below the launcher and reap them: repeated until none is
    left, as a process may fork while the others are being killed."""
    for _ in range(200):
        left = _descendants()
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap()
    _reap()


def _reap() -> list[tuple[int, int]]:
    ended: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return ended
        if pid == 0:
            return ended
        ended.append((pid, status))


def supervise(spec: dict[str, Any], command: list[str]) -> int:
    """Supervised mode: start the confined command as a child, stay outside the
    Landlock domain as its subreaper, end everything it leaves behind."""
    if _prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise LandlockError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)  # pi gone: treated as a stop
    watched = {signal.SIGCHLD, *_STOPS}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, watched)
    error_r, error_w = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(error_r)
        try:
            confine(spec)
        except Exception as exc:
            os.write(error_w, str(exc).encode(errors="replace")[:2000])
            os._exit(126)
        os.close(error_w)
        _exec(command, before)
    os.close(error_w)
    with os.fdopen(error_r, "rb") as errors:
        problem = errors.read().decode(errors="replace")
    if problem:
        os.waitpid(child, 0)
        raise LandlockError(0, problem)
    deadline: float | None = None
    status: int | None = None
    while status is None:
        if deadline is None:
            info: Any = signal.sigwaitinfo(watched)
        else:
            remaining = deadline - time.monotonic()
            info = signal.sigtimedwait(watched, remaining) if remaining > 0 else None
        for pid, ended in _reap():
            if pid == child:
                status = ended
        if status is not None:
            break
        if info is not None and info.si_signo != signal.SIGCHLD and deadline is None:
            deadline = time.monotonic() + STOP_GRACE
        if deadline is not None and time.monotonic() >= deadline:
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + 3600
    sweep()
    return _wait_status_code(status)  # stop signals stay blocked: the command's status is the answer


def isolate(spec: dict[str, Any], command: list[str]) -> int:
    """Isolated mode (see the module): new namespaces; their first process confines
    itself, starts the command and ends with it, taking every other process along."""
    if _libc.unshare(ctypes.c_int(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC)) != 0:
        raise LandlockError(ctypes.get_errno(), "unshare of the mount, PID, UTS and IPC namespaces failed")
    watched = set(_STOPS)
    before = signal.pthread_sigmask(signal.SIG_BLOCK, watched)  # pi's stop signals reach the command's group
    status_r, status_w = os.pipe()
    init = os.fork()
    if init == 0:  # PID 1 of the new namespace
        os.close(status_r)
        code = 126
        try:
            _prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            isolate_mounts(spec)
            confine(spec)
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
            child = os.fork()
            if child == 0:
                os.close(status_w)
                _exec(command, before)
            while True:
                pid, ended = os.waitpid(-1, 0)
                if pid == child:
                    os.write(status_w, b"%d" % ended)
                    code = 0
                    break
        except Exception as exc:
            print(f"pluggable-pi-sandbox: cannot confine the command with Landlock: {exc}", file=sys.stderr)
        finally:
            os._exit(code)  # the namespace ends, and every process still in it
    os.close(status_w)
    with os.fdopen(status_r, "rb") as reader:
        raw = reader.read()
    _, init_status = os.waitpid(init, 0)
    if not raw:
        return os.WEXITSTATUS(init_status) if os.WIFEXITED(init_status) else 126
    return _wait_status_code(int(raw))  # stop signals stay blocked: the command's status is the answer


# --------------------------------------------------------------------------- launcher


_BOOT = "import sys;sys.path.insert(0,sys.argv[1]);import landlock;landlock.run(sys.argv[1:])"


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
    if spec.get("empty"):
        args += ["--empty", str(spec["empty"])]
    for key in ("deny", "write", "keep", "mask"):
        for path in spec.get(key, []):
            args += [f"--{key}", str(path)]
    return [*args, "--"]


def parse(argv: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``(spec, command)`` from the launcher's arguments; ``ValueError`` when invalid."""
    spec: dict[str, Any] = {"network": "off", "deny": [], "write": [], "keep": [], "mask": []}
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
        elif option in ("--deny", "--write", "--keep", "--mask"):
            spec[option[2:]].append(value)
        elif option == "--empty":
            spec["empty"] = value
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
        global _libc
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
            _libc.syscall.restype = ctypes.c_long
        if has_capability(CAP_SYS_ADMIN):
            spec["private_shm"] = True
            return isolate(spec, command)
        return supervise(spec, command)
    except Exception as exc:
        print(f"pluggable-pi-sandbox: cannot confine the command with Landlock: {exc}", file=sys.stderr)
        return 126


def run(argv: list[str]) -> None:
    """:func:`main` as the process: its status, without the interpreter's teardown
    (a millisecond or two before every command)."""
    code = main(argv)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run(sys.argv)
