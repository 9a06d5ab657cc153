"""The seccomp filter that keeps sandboxed commands away from host unix sockets.

A network namespace cuts TCP, UDP and abstract sockets, not unix sockets bound to a path:
any such socket the sandbox can see (LXD's, Incus's, the Nix daemon's, one under /var/lib or
/srv) is a door to a host service. Hiding folders one by one misses the next one, so, as
Claude Code's sandbox does, a command may not create a unix socket at all: `socket(AF_UNIX)`
fails with EPERM. `socketpair` stays allowed (programs use it for pipes, asyncio among them;
a connected stream or seqpacket pair cannot reach anything else), except for datagram pairs,
which `sendto` and `connect` can still point at any socket path. io_uring is refused (ENOSYS,
so programs fall back to plain calls): its socket and connect operations bypass seccomp.

The program is classic BPF, as bwrap's `--seccomp FD` takes it: bwrap reads the fd to its
end, so every bwrap gets a fresh one (SocketFilter). Syscalls of another ABI (i386 or x32 on
x86_64, arm32 on aarch64) name sockets through other numbers and `socketcall`: they kill the
process instead. On other architectures there is no filter (`program()` is None) and only
the hiding of the socket folders holds (docs/security.md).
"""

from __future__ import annotations

import errno
import os
import platform
import struct
import sys
from dataclasses import dataclass
from types import TracebackType

AF_UNIX = 1
SOCK_DGRAM = 2
SOCK_TYPE_MASK = 0xF  # the rest of socket()'s type holds SOCK_NONBLOCK / SOCK_CLOEXEC
X32_SYSCALL_BIT = 0x40000000

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (low word first)
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24

LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
AND_K = 0x54  # BPF_ALU | BPF_AND | BPF_K
JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
RET_K = 0x06  # BPF_RET | BPF_K

ALLOW = 0x7FFF0000
KILL_PROCESS = 0x80000000
ERRNO = 0x00050000  # | the errno returned


@dataclass(frozen=True)
class Abi:
    audit_arch: int  # AUDIT_ARCH_*, as the kernel reports the calling convention
    socket: int
    socketpair: int
    io_uring: tuple[int, ...]  # setup, enter, register
    x32_bit: bool = False  # syscall numbers with this bit are x32's


ABIS = {
    "x86_64": Abi(0xC000003E, socket=41, socketpair=53, io_uring=(425, 426, 427), x32_bit=True),
    "aarch64": Abi(0xC00000B7, socket=198, socketpair=199, io_uring=(425, 426, 427)),
}
MACHINES = {"amd64": "x86_64", "arm64": "aarch64"}


def machine() -> str:
    name = platform.machine().lower()
    return MACHINES.get(name, name)


def program(arch: str | None = None) -> bytes | None:
    """The filter for `arch` (this machine's by default), or None when we have none for it."""
    abi = ABIS.get(arch or machine())
    if abi is None or (arch is None and not sys.platform.startswith("linux")):
        return None
    return b"".join(struct.pack("=HBBI", *ins) for ins in _instructions(abi))


def _instructions(abi: Abi) -> list[tuple[int, int, int, int]]:
    """(code, jump if true, jump if false, k), jumps counted from the next instruction."""
    deny = ERRNO | errno.EPERM
    head = [(LD_ABS, 0, 0, ARCH), (JEQ_K, 1, 0, abi.audit_arch), (RET_K, 0, 0, KILL_PROCESS),
            (LD_ABS, 0, 0, NR)]
    if abi.x32_bit:  # x32 numbers lie in [bit, 2**31); a negative number is no call at all
        head += [(JGE_K, 0, 2, X32_SYSCALL_BIT), (JGE_K, 1, 0, 0x80000000), (RET_K, 0, 0, KILL_PROCESS)]
    on_socket = [(LD_ABS, 0, 0, ARG0), (JEQ_K, 0, 1, AF_UNIX), (RET_K, 0, 0, deny), (RET_K, 0, 0, ALLOW)]
    on_pair = [(LD_ABS, 0, 0, ARG0), (JEQ_K, 0, 4, AF_UNIX), (LD_ABS, 0, 0, ARG1),
               (AND_K, 0, 0, SOCK_TYPE_MASK), (JEQ_K, 0, 1, SOCK_DGRAM), (RET_K, 0, 0, deny),
               (RET_K, 0, 0, ALLOW)]
    on_uring = [(RET_K, 0, 0, ERRNO | errno.ENOSYS)]
    handlers = [on_socket, on_pair, on_uring]  # laid out in this order after the final allow
    starts = [sum(len(h) for h in handlers[:i]) for i in range(len(handlers))]
    calls = [(abi.socket, 0), (abi.socketpair, 1), *((nr, 2) for nr in abi.io_uring)]
    # From dispatch line i, past the lines after it and the allow, to its handler.
    dispatch = [(JEQ_K, len(calls) - i + starts[h], 0, nr) for i, (nr, h) in enumerate(calls)]
    return [*head, *dispatch, (RET_K, 0, 0, ALLOW), *(ins for h in handlers for ins in h)]


class SocketFilter:
    """One command's copy of the program, for bwrap's `--seccomp FD`; open from the first
    `bwrap_args()` until `close()` (use `with`), after the command has started."""

    def __init__(self) -> None:
        self.fd: int | None = None

    def bwrap_args(self) -> list[str]:
        """`--seccomp FD`, or nothing on an architecture without a filter."""
        code = program()
        if code is None:
            return []
        if self.fd is None:
            self.fd = _memfd(code)
        return ["--seccomp", str(self.fd)]

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """What the process that starts bwrap must inherit (subprocess's `pass_fds`)."""
        return () if self.fd is None else (self.fd,)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> SocketFilter:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _memfd(data: bytes) -> int:
    """A close-on-exec fd holding `data`, read from its start (pass_fds lifts the close-on-exec)."""
    fd = os.memfd_create("clover-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, data)
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        os.close(fd)
        raise
    return fd
